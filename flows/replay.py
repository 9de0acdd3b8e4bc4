"""The replay flow: every suite on buggy, reference and every candidate.

Thin wiring: plan (tasks.replay.plan) → skip stored keys → batches as coarse Prefect tasks
on threads or a Dask cluster → each batch writes its own rows. Prefect costs milliseconds to
a tenth of a second per task and its server drops events past a few thousand task runs, so
a task is a batch of runs, never one run.
"""

from __future__ import annotations

import logging
import math
from datetime import UTC, datetime
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.futures import as_completed
from prefect.task_runners import ThreadPoolTaskRunner

from testprism.flows import progress
from testprism.storage import Store
from testprism.tasks.model.benchmark import Benchmark, load_benchmark
from testprism.tasks.replay.runs import execute_batch, finished_keys, pending_runs, plan, record_plan, record_unrunnable
from testprism.tasks.execution.batch import Batch, BatchSummary, ExecutionOptions, batches
from testprism.tasks.sandbox.base import Limits, SandboxBackend, backend_class
from testprism.tasks.model.state import DEFAULT_FUZZ
from testprism.tasks.execution.verdict import Policy
from testprism.tasks.model.workdir import WorkPaths, default_work_root

log = logging.getLogger(__name__)

MAX_BATCH_RUNS = 200


@dataclass(frozen=True)
class ReplaySummary:
    planned: int
    skipped: int
    executed: int
    outcomes: dict[str, int]
    isolation: str


@dataclass(frozen=True)
class Inputs:
    """What a replay or a collect reads before it runs anything, each checked."""

    benchmark: Benchmark
    store: Store
    backend: type[SandboxBackend]
    isolation: str  # of the backend on this machine, recorded with every outcome


def open_inputs(benchmark: str, store: str, configurations: tuple[str, ...], backend: str, work_root: Path, *,
                trusted: bool, unsafe: bool) -> Inputs:
    """Load the benchmark, open the store and start the backend once: a wrong input fails here
    with its file and field (BenchmarkError, StoreError), a backend that cannot run on this
    machine before any batch starts (SandboxUnavailable). The CLI calls it before the flow
    starts too, so that a user's mistake ends in one line rather than in Prefect's log of a
    failed flow run (and without starting Prefect's server); the flow checks again because a
    deployment starts it without the CLI."""
    bench = load_benchmark(Path(benchmark), configurations)
    backend_cls = backend_class(backend)
    probe = backend_cls(WorkPaths(work_root), trusted=trusted, unsafe=unsafe)
    probe.close()
    return Inputs(bench, Store(store), backend_cls, probe.isolation)  # last: a refused run creates no store


@task(name="replay-batch", retries=0, cache_policy=NO_CACHE)
def replay_batch(batch: Batch, options: ExecutionOptions) -> BatchSummary:
    """One coarse unit: a batch of runs on one worker, rows written as they finish."""
    return execute_batch(batch.specs, options)


def task_runner(workers: int, dask_address: str | None):
    """Threads in-process by default; a Dask cluster (LocalCluster or an address) otherwise."""
    if dask_address or workers > 1:
        from prefect_dask import DaskTaskRunner

        if dask_address:
            return DaskTaskRunner(address=dask_address)
        return DaskTaskRunner(cluster_kwargs={"n_workers": workers, "threads_per_worker": 1, "processes": True,
                                              "env": flow_api_env()})
    return ThreadPoolTaskRunner(max_workers=1)


def flow_api_env() -> dict[str, str]:
    """`PREFECT_API_URL` of the API this process talks to, for the workers it starts.

    Without it, every worker of a LocalCluster starts a temporary Prefect server of its own
    and records its task runs there, not where the flow is: 10-25 s and most of a core per
    worker before its first batch (bench/replay_throughput.py). Workers of a cluster
    reached by address need PREFECT_API_URL set where they start (README, Execution)."""
    from prefect.settings import PREFECT_API_URL

    url = PREFECT_API_URL.value()
    if not url:
        from prefect.server.api.server import SubprocessASGIServer

        server = SubprocessASGIServer()  # the temporary server this process started, if any
        url = server.api_url if server.server_process is not None else None
    return {"PREFECT_API_URL": url} if url else {}


def run_concurrency(per_host: int, workers: int, dask_address: str | None) -> int:
    """Runs at once inside one batch. A LocalCluster's workers share this host, so they
    split its safe concurrency; each worker of a remote cluster has a host of its own."""
    if workers > 1 and not dask_address:
        return max(1, per_host // workers)
    return per_host


def batch_target(runs: int, workers: int) -> int:
    """About four batches per worker for balance, at most MAX_BATCH_RUNS runs each."""
    return max(1, min(MAX_BATCH_RUNS, math.ceil(runs / (4 * max(1, workers)))))


#: the one `--patch-fuzz` of replay and collect: the fuzz of the `patch` fallback (SWE-bench: 5)
PatchFuzzOpt = Annotated[int, typer.Option(
    min=0, help="fuzz of the `patch --batch -p1` fallback after `git apply`, for every patch (SWE-bench uses 5)")]


@flow(name="replay", log_prints=False)
def replay_flow(
    benchmark: str,
    store: str,
    configurations: list[str] | None = None,
    backend: str = "local",
    workers: int = 1,
    dask_address: str | None = None,
    work: str | None = None,
    timeout_s: float = 300.0,
    trusted: bool = False,
    unsafe: bool = False,
    retry_errors: bool = False,
    concurrency: int | None = None,
    patch_fuzz: int = DEFAULT_FUZZ,
) -> ReplaySummary:
    work_root = Path(work) if work else default_work_root()
    inputs = open_inputs(benchmark, store, tuple(configurations or ()), backend, work_root, trusted=trusted,
                         unsafe=unsafe)
    bench, target = inputs.benchmark, inputs.store
    record_plan(bench, target)
    concurrency = concurrency or run_concurrency(inputs.backend.default_concurrency(), workers, dask_address)
    options = ExecutionOptions(
        backend=backend, work_root=work_root, store_root=Path(store), limits=Limits(timeout_s=timeout_s),
        policy=Policy(patch_fuzz=patch_fuzz), concurrency=concurrency, trusted=trusted, unsafe=unsafe,
        replay_started=datetime.now(UTC),
    )
    specs = plan(bench, options)
    todo = pending_runs(specs, finished_keys(target, retry_errors))
    outcomes: dict[str, int] = {}
    unrunnable = record_unrunnable(todo, options)
    if unrunnable:
        outcomes["E"] = unrunnable
    runnable = [s for s in todo if s.runs_in_sandbox]
    log.info(
        "%d runs planned, %d already stored, %d to execute (backend %s, isolation %s)",
        len(specs), len(specs) - len(todo), len(runnable), backend, inputs.isolation,
    )
    sink = progress.current()
    sink.start(len(todo), "replay")
    sink.advance(unrunnable)
    executed = 0
    if runnable:
        groups = batches(runnable, batch_target(len(runnable), workers))
        with task_runner(workers, dask_address) as runner:
            futures = {runner.submit(replay_batch, {"batch": b, "options": options}): len(b) for b in groups}
            for future in as_completed(list(futures)):
                summary = future.result()
                sink.advance(futures[future])
                executed += summary.executed
                for key, n in summary.outcomes.items():
                    outcomes[key] = outcomes.get(key, 0) + n
    return ReplaySummary(len(specs), len(specs) - len(todo), executed, outcomes, inputs.isolation)
