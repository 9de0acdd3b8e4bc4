"""Replay batches on Dask: a LocalCluster of 2 worker processes, and an existing cluster
reached by its address (`dask scheduler` + `dask worker` on 127.0.0.1)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import polars as pl
import pytest

from testprism.storage import Store
from testprism.tasks.sandbox.local import bubblewrap_works
from tests.benchfixture import CHECKS, WEAK, make_benchmark
from tests.synthbench import make_synthetic

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


@contextmanager
def dask_cluster(workers: int) -> Iterator[tuple[str, list[subprocess.Popen]]]:
    """`dask scheduler` and `workers` separate `dask worker` processes (no nanny: a killed
    worker stays dead) on 127.0.0.1; yields the address and the worker processes."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    dask = str(Path(sys.executable).parent / "dask")
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    scheduler = subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"], **quiet)
    procs = [subprocess.Popen([dask, "worker", address, "--nthreads", "1", "--no-nanny", "--no-dashboard",
                               "--host", "127.0.0.1"], start_new_session=True, **quiet) for _ in range(workers)]
    try:
        from distributed import Client

        deadline = time.monotonic() + 120
        while True:
            try:
                with Client(address, timeout=5) as client:
                    client.wait_for_workers(workers, timeout=60)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
        yield address, procs
    finally:
        for proc in (*procs, scheduler):
            proc.terminate()
        for proc in (*procs, scheduler):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:  # a worker closing gracefully can linger
                proc.kill()
                proc.wait()


def test_existing_cluster_by_address(bench, tmp_path, work_root):
    from testprism.flows.replay import replay_flow

    with dask_cluster(2) as (address, _):
        summary = replay_flow(benchmark=str(bench), store=str(tmp_path / "store"), work=str(work_root),
                              dask_address=address)
    assert summary.executed == summary.planned == 8
    check(tmp_path / "store")
    assert pl.read_parquet(tmp_path / "store" / "runs" / "*.parquet")["isolation"].unique().to_list() == ["bubblewrap"]


@pytest.mark.timeout(900)
def test_a_worker_killed_mid_batch_loses_nothing_and_its_runs_are_redone(tmp_path, work_root):
    """SIGKILL one of two workers once it has stored rows: the scheduler gives its batch to
    the other worker, which redoes only the runs not stored yet."""
    instances = 12  # × 2 configurations × 11 states = 264 runs, 4 batches of 66
    synth = make_synthetic(tmp_path / "synth", instances)
    store = tmp_path / "store"
    with dask_cluster(2) as (address, procs):
        replay = subprocess.Popen(
            [sys.executable, "-m", "testprism.flows.cli", "replay", str(synth), "--store", str(store),
             "--work", str(work_root), "--dask-address", address],
            env={**os.environ, "PYTHONPATH": os.getcwd()}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        deadline = time.monotonic() + 600
        while not list((store / "runs").glob("*.parquet")) and replay.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        stored_before = {p.name for p in (store / "runs").glob("*.parquet")}
        assert stored_before, "no batch stored anything before the replay ended"
        os.killpg(procs[0].pid, signal.SIGKILL)
        output, _ = replay.communicate(timeout=600)
    assert replay.returncode == 0, output[-3000:]
    assert stored_before <= {p.name for p in (store / "runs").glob("*.parquet")}
    runs = Store(store).scan("runs").collect()
    assert runs["run_key"].n_unique() == instances * 2 * 11
    assert runs.height == runs["run_key"].n_unique()  # nothing run twice
