"""Replay batches on Dask: a LocalCluster of 2 worker processes, and an existing cluster
reached by its address (`dask scheduler` + `dask worker` on 127.0.0.1)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import polars as pl
import pytest

from testprism.storage import Store
from testprism.tasks.replay.settings import ReplaySettings
from testprism.tasks.execution.run_settings import RunSettings
from tests.benchfixture import CHECKS, WEAK, make_benchmark
from tests.synthbench import make_synthetic

pytestmark = [pytest.mark.slow, pytest.mark.requires("sandbox")]


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

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with PrefectServersStarted() as servers:
        state = replay_flow(benchmark=str(bench), store=str(tmp_path / "store"), run=RunSettings(work=str(work_root), workers=2), return_state=True)
    summary = state.result()
    assert summary.executed == summary.planned == 8
    check(tmp_path / "store")
    # The workers used the flow's Prefect API: no temporary server of their own (at most the
    # flow's, when this is the session's first flow), and their batches are recorded there.
    assert len(servers.seen) <= 1, servers.seen
    with get_client(sync_client=True) as client:
        batches = client.read_task_runs(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[state.state_details.flow_run_id])))
    assert batches and all(t.name.startswith("replay-batch") and t.state.is_completed() for t in batches)


class PrefectServersStarted:
    """Watches for Prefect API servers started, while inside the block, by this process or
    its descendants (Dask workers included)."""

    def __init__(self) -> None:
        self.seen: set[int] = set()
        self.before = set(self._servers())
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> PrefectServersStarted:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._stop.wait(0.2):
            self.seen |= set(self._servers()) - self.before

    @staticmethod
    def _servers() -> Iterator[int]:
        mine = os.getpid()
        for proc in Path("/proc").iterdir():
            try:
                if proc.name.isdigit() and b"prefect.server.api.server" in (proc / "cmdline").read_bytes():
                    pid = int(proc.name)
                    while pid > 1 and pid != mine:  # walk up to this process, or to init
                        pid = int((Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[1])
                    if pid == mine:
                        yield int(proc.name)
            except (OSError, ValueError, IndexError):
                continue


def with_flow_api(env: dict[str, str] | None) -> dict[str, str]:
    """`env` (default: this process's) with the Prefect API of this process's flows: the
    temporary server it starts (now, if no flow has yet) unless PREFECT_API_URL names one.
    Without it each worker starts a temporary server of its own, which outlives a worker
    that is terminated (as users are told: docs/replay.md, "Batches and workers")."""
    env = dict(os.environ if env is None else env)
    if not env.get("PREFECT_API_URL"):
        from prefect.server.api.server import SubprocessASGIServer

        server = SubprocessASGIServer()  # the one this process's flows use
        server.start()
        env["PREFECT_API_URL"] = server.api_url
    return env


@contextmanager
def dask_cluster(workers: int, env: dict[str, str] | None = None,
                 hidden: tuple[Path, ...] = ()) -> Iterator[tuple[str, list[subprocess.Popen]]]:
    """`dask scheduler` and `workers` separate `dask worker` processes (no nanny: a killed
    worker stays dead) on 127.0.0.1, in `env` (default: this process's); yields the address
    and the worker processes. `hidden`: folders each worker cannot see, each covered by an
    empty tmpfs of the worker's own in a mount namespace of its own (what a pod or a VM
    without this host's disk sees: nothing of the flow's files, a disk of its own)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    env = with_flow_api(env)
    dask = str(Path(sys.executable).parent / "dask")
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": env}
    scheduler = subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"], **quiet)
    worker = [dask, "worker", address, "--nthreads", "1", "--no-nanny", "--no-dashboard", "--host", "127.0.0.1"]
    if hidden:
        cover = 'for p in "$@"; do [ "$p" = -- ] && break; mount -t tmpfs -o mode=0755 hidden "$p" || exit 1; done'
        worker = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
                  f'{cover}; while [ "$1" != -- ]; do shift; done; shift; exec "$@"', "sh", *map(str, hidden), "--",
                  *worker]
    procs = [subprocess.Popen(worker, start_new_session=True, **quiet) for _ in range(workers)]
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
        summary = replay_flow(benchmark=str(bench), store=str(tmp_path / "store"), run=RunSettings(work=str(work_root), dask_address=address))
    assert summary.executed == summary.planned == 8
    check(tmp_path / "store")
    assert pl.read_parquet(tmp_path / "store" / "runs" / "*.parquet")["isolation"].unique().to_list() == ["bubblewrap"]


def leaderboard(store: Path) -> pl.DataFrame:
    from testprism.tasks.score.scores import scorable_store, score_tables

    return score_tables(scorable_store(str(store)), 500, 7)["leaderboard"]


def test_workers_that_share_no_disk_with_the_flow(bench, tmp_path, work_root):
    """Workers in mount namespaces of their own, where the benchmark, the store and the
    flow's work area are empty folders: each batch brings the parts its runs read, the
    workers return their rows, and the leaderboard is the one of a replay on this host."""
    from distributed import Client

    from testprism.flows.replay import replay_flow
    from testprism.tasks.execution.parcel import pack
    from testprism.tasks.model.benchmark import load_benchmark
    from testprism.tasks.replay.runs import plan
    from testprism.tasks.execution.batch import ExecutionOptions

    here, remote = tmp_path / "store-here", tmp_path / "store-remote"
    replay_flow(benchmark=str(bench), store=str(here), run=RunSettings(work=str(work_root)))
    worker_work = work_root / "worker-work"  # in each worker's own tmpfs: invisible here
    env = {**os.environ, "TESTPRISM_WORK": str(worker_work)}
    looked = (str(bench), str(here), str(remote), str(work_root / "states"))
    with dask_cluster(2, env=env, hidden=(tmp_path, work_root)) as (address, _):
        summary = replay_flow(benchmark=str(bench), store=str(remote), run=RunSettings(work=str(work_root), dask_address=address), settings=ReplaySettings(shared_disk=False))
        with Client(address, timeout=30) as client:
            seen = client.run(lambda: [os.path.exists(p) for p in looked])
            parts = client.run(lambda: sorted(os.listdir(worker_work / "parts")) if (worker_work / "parts").is_dir()
                               else [])
    assert len(seen) == 2 and all(v == [False] * len(looked) for v in seen.values()), seen
    assert not worker_work.exists()
    assert summary.executed == summary.planned == 8
    check(remote)
    assert leaderboard(remote).equals(leaderboard(here))
    specs = plan(load_benchmark(bench), ExecutionOptions(backend="local", work_root=None, store_root=None))
    wanted = set(pack(specs).parts)
    assert len(wanted) == 3  # the program and the two suites' files
    unpacked = {p for names in parts.values() for p in names if not p.endswith(".lock")}
    assert unpacked == wanted, (unpacked, wanted)


def test_a_cluster_started_from_its_class_as_configuration(bench, tmp_path, work_root):
    """The `[dask_cluster]` of a pipeline config (what dask-jobqueue's SLURMCluster takes),
    with distributed's own LocalCluster as the class: the flow starts it, runs its batches
    there and stops it."""
    from distributed import LocalCluster

    from testprism.flows.replay import replay_flow
    from testprism.tasks.execution.cluster import DaskCluster

    started: list[str] = []
    real_init = LocalCluster.__init__

    def init(self, *args, **kwargs):  # record, then start it for real
        started.append(repr(kwargs.get("n_workers")))
        real_init(self, *args, **kwargs)

    cluster = DaskCluster.model_validate({"class": "distributed.LocalCluster",
                                          "kwargs": {"n_workers": 1, "threads_per_worker": 1, "processes": True}})
    LocalCluster.__init__ = init
    try:
        summary = replay_flow(benchmark=str(bench), store=str(tmp_path / "store"), run=RunSettings(work=str(work_root), dask_cluster=cluster))
    finally:
        LocalCluster.__init__ = real_init
    assert started == ["1"]
    assert summary.executed == summary.planned == 8
    check(tmp_path / "store")


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
        while not list((store / "runs").glob("part-*.parquet")) and replay.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        stored_before = {p.name for p in (store / "runs").glob("part-*.parquet")}
        assert stored_before, "no batch stored anything before the replay ended"
        os.killpg(procs[0].pid, signal.SIGKILL)
        output, _ = replay.communicate(timeout=600)
    assert replay.returncode == 0, output[-3000:]
    assert stored_before <= {p.name for p in (store / "runs").glob("part-*.parquet")}
    runs = Store(store).scan("runs").collect()
    assert runs["run_key"].n_unique() == instances * 2 * 11
    assert runs.height == runs["run_key"].n_unique()  # nothing run twice


def test_a_cluster_the_flow_starts_runs_dask_quiet():
    """The diagnostics and the memory check QUIET_DASK slows take CPU from the runs on the
    same cores (docs/performance.md): the cluster a flow starts runs them quiet in its
    workers and in the nannies in the flow's process, and the setting ends with the cluster."""
    import dask

    from testprism.flows.runner import QUIET_DASK, Placement

    with Placement(workers=2).task_runner() as runner:
        seen = runner.client.run(lambda: {key: dask.config.get(key) for key in QUIET_DASK})  # starts it
        assert {key: dask.config.get(key) for key in QUIET_DASK} == QUIET_DASK
    assert len(seen) == 2 and all(config == QUIET_DASK for config in seen.values())
    assert dask.config.get("distributed.worker.memory.monitor-interval") == "100ms"
