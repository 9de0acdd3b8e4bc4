"""Replay batches on Dask: a LocalCluster of 2 worker processes, and an existing cluster
reached by its address (`dask scheduler` + `dask worker` on 127.0.0.1)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from testprism.storage import Store
from testprism.tasks.sandbox.local import bubblewrap_works
from tests.benchfixture import CHECKS, WEAK, make_benchmark

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not bubblewrap_works(), reason="bubblewrap is required")]


def expected(store: Path) -> dict[tuple[str, str], str]:
    runs = Store(store).scan("runs").collect()
    return {(r["configuration"], r["candidate_id"] or r["state"]): r["outcome"] for r in runs.iter_rows(named=True)}


@pytest.fixture()
def bench(tmp_path):
    return make_benchmark(tmp_path / "bench", {"strong": {"test_m.py": CHECKS}, "weak": {"test_m.py": WEAK}})


def check(store: Path) -> None:
    got = expected(store)
    assert len(got) == 8
    assert got[("strong", "buggy")] == "F" and got[("strong", "reference")] == "P"
    assert got[("strong", "sorts-in-place")] == "F" and got[("weak", "sorts-in-place")] == "P"


def test_local_cluster_with_two_worker_processes(bench, tmp_path, work_root):
    from testprism.flows.replay import replay_flow

    summary = replay_flow(benchmark=str(bench), store=str(tmp_path / "store"), work=str(work_root), workers=2)
    assert summary.executed == summary.planned == 8
    check(tmp_path / "store")


def test_existing_cluster_by_address(bench, tmp_path, work_root):
    from testprism.flows.replay import replay_flow

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    bin_dir = Path(sys.executable).parent
    scheduler = subprocess.Popen([str(bin_dir / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                  "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = subprocess.Popen([str(bin_dir / "dask"), "worker", address, "--nworkers", "2", "--nthreads", "1",
                               "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        from distributed import Client

        deadline = time.monotonic() + 120
        while True:
            try:
                with Client(address, timeout=5) as client:
                    client.wait_for_workers(2, timeout=60)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
        summary = replay_flow(benchmark=str(bench), store=str(tmp_path / "store"), work=str(work_root),
                              dask_address=address)
        assert summary.executed == summary.planned == 8
        check(tmp_path / "store")
        assert pl.read_parquet(tmp_path / "store" / "runs" / "*.parquet")["isolation"].unique().to_list() == ["bubblewrap"]
    finally:
        worker.terminate()
        scheduler.terminate()
        worker.wait(timeout=30)
        scheduler.wait(timeout=30)
