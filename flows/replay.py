"""The replay flow: every suite on buggy, reference and every candidate.

Thin wiring: plan (tasks/replay/runs.py) → skip stored keys → batches as coarse Prefect tasks
on threads or a Dask cluster → each batch writes its own rows (or, on workers that share no
disk with the flow, brings its benchmark parts and returns its rows for the flow to write). Prefect costs milliseconds to
a tenth of a second per task and its server drops events past a few thousand task runs, so
a task is a batch of runs, never one run.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from dataclasses import dataclass, replace
from pathlib import Path

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from testprism.flows import progress
from testprism.flows.runner import Placement, open_inputs, place_batches
from testprism.tasks.replay.runs import (
    ReplayJob,
    execute_batch,
    first_of_each_work,
    group_of,
    finished_keys,
    pending_runs,
    plan,
    record_plan,
    record_early_stopped,
    record_reused,
    record_unrunnable,
    run_order,
)
from testprism.tasks.execution.batch import Batch, BatchSummary, ExecutionOptions, batches
from testprism.tasks.execution.cluster import DaskCluster
from testprism.tasks.sandbox.base import Limits
from testprism.tasks.model.state import DEFAULT_FUZZ
from testprism.tasks.execution.verdict import Policy
from testprism.tasks.model.workdir import default_work_root

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class ReplaySummary:
    planned: int
    skipped: int
    executed: int
    outcomes: dict[str, int]
    isolation: str
    #: state build steps run (once per state: a state built by an earlier replay is not counted)
    builds: int = 0
    #: runs recorded from the same work already settled in the store (runs.reused_from), not run
    reused: int = 0


@task(name="replay-batch", retries=0, cache_policy=NO_CACHE)
def replay_batch(batch: Batch, options: ExecutionOptions) -> BatchSummary:
    """One coarse unit: a batch of runs on one worker, rows written as they finish (or
    returned, from a worker that shares no disk with the flow)."""
    return execute_batch(batch.specs, options, batch.parcel)


def _count(outcomes: dict[str, int], more: dict[str, int]) -> None:
    for key, n in more.items():
        outcomes[key] = outcomes.get(key, 0) + n


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
    dask_cluster: DaskCluster | None = None,
    audit_share: float | None = None,
    audit_seed: int = 0,
    shared_disk: bool = True,
    early_stop: bool = False,
) -> ReplaySummary:
    """`early_stop`: for JVR-only questions, a suite's remaining runs on an instance are not
    run once one of its runs there decided its joint success (S = 0): stored as
    `E`/early_stopped, never `P` or `F`, so JVR is a full replay's and GRR, CAR, WDR are
    not; a replay without it runs them.

    `shared_disk=False`: the workers (Kubernetes pods, cloud VMs) share no filesystem with
    this flow. Each batch then brings the benchmark parts its runs read, workers use their
    own work area (`$TESTPRISM_WORK` where they run, not `work`) and return their rows,
    which the flow writes: a worker killed mid-batch loses its whole batch, which Dask
    gives to another worker, instead of at most `flush_every` runs."""
    place = Placement(workers, dask_address, dask_cluster)
    work_root = Path(work) if work else default_work_root()
    inputs = open_inputs(benchmark, store, tuple(configurations or ()), backend, work_root, trusted=trusted,
                         unsafe=unsafe)
    bench, target = inputs.benchmark, inputs.store
    record_plan(bench, target)
    concurrency = concurrency or place.concurrency(inputs.backend.default_concurrency())
    options = ExecutionOptions(
        backend=backend, work_root=work_root, store_root=Path(store), limits=Limits(timeout_s=timeout_s),
        policy=Policy(patch_fuzz=patch_fuzz, audit_share=audit_share, audit_seed=audit_seed),
        concurrency=concurrency, trusted=trusted, unsafe=unsafe, early_stop=early_stop, replay_started=datetime.now(UTC),
    )
    specs = plan(bench, options)
    todo = pending_runs(specs, finished_keys(target, retry_errors, early_stop))
    unrunnable = record_unrunnable(todo, options)
    left, outcomes = record_reused(todo, options, retry_errors)
    reused = sum(outcomes.values())
    left, stopped = record_early_stopped(left, specs, options)
    if unrunnable + stopped:
        outcomes["E"] = outcomes.get("E", 0) + unrunnable + stopped
    runnable, twins = first_of_each_work([s for s in left if s.runs_in_sandbox])
    log.info(
        "%d runs planned, %d already stored, %d to execute (backend %s, isolation %s); %d taken from the same "
        "work stored under another configuration or replay%s%s",
        len(specs), len(specs) - len(todo), len(runnable) + len(twins), backend, inputs.isolation, reused,
        f"; of those to execute, {len(twins)} are the same work as another run of this replay and take its row"
        if twins else "",
        f"; {stopped} early-stopped (their suite's joint success already decided)" if early_stop else "",
    )
    sink = progress.current()
    sink.start(len(todo), "replay")
    sink.advance(unrunnable + reused + stopped)
    executed = builds = 0
    if runnable:  # (twins have a first run among them)
        sent = options if shared_disk else replace(options, store_root=None, work_root=None)
        writer = ReplayJob(options)
        with place.task_runner() as runner:
            # the twins wait for their work's first run and take its row (reuse_settled); a twin
            # whose first run settled nothing (an infrastructure error) runs in a round of its own
            for units in (runnable, twins):
                if units is twins and twins:
                    units, counts = record_reused(twins, options, retry_errors)
                    reused += sum(counts.values())
                    sink.advance(len(twins) - len(units))
                    _count(outcomes, counts)
                if not units:
                    continue
                # in an order drawn from the replay's secret: a run's place tells nothing of its state
                groups = batches(run_order(units, options.order_secret), place.batch_target(len(units)),
                                 group_of if early_stop else None, options.order_secret)
                for batch, summary in place_batches(runner, replay_batch, groups, sent, shared_disk=shared_disk,
                                                    window=max(4, 2 * place.parallelism)):
                    if summary.rows:
                        writer.write(target, summary.rows)
                    sink.advance(len(batch))
                    executed += summary.executed
                    builds += summary.builds
                    _count(outcomes, summary.outcomes)
    return ReplaySummary(len(specs), len(specs) - len(todo), executed, outcomes, inputs.isolation, builds, reused)
