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
from testprism.tasks.replay.runs import ReplayJob, execute_batch, record_plan
from testprism.tasks.replay.work import replay_batches, replay_work
from testprism.tasks.execution.batch import Batch, BatchSummary, ExecutionOptions
from testprism.tasks.execution.cluster import DaskCluster
from testprism.tasks.model.state import DEFAULT_FUZZ
from testprism.tasks.replay.settings import ReplaySettings
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
    settings: ReplaySettings = ReplaySettings(),
    backend: str = "local",
    workers: int = 1,
    dask_address: str | None = None,
    work: str | None = None,
    trusted: bool = False,
    unsafe: bool = False,
    patch_fuzz: int = DEFAULT_FUZZ,
    dask_cluster: DaskCluster | None = None,
) -> ReplaySummary:
    """`settings`: what the replay does (tasks/replay/settings.py, each field's description
    in Prefect's run form); the rest: where it runs, as for every stage.

    `settings.early_stop`: for JVR-only questions, a suite's remaining runs on an instance are
    not run once one of its runs there decided its joint success (S = 0): stored as
    `E`/early_stopped, never `P` or `F`, so JVR is a full replay's and GRR, CAR, WDR are
    not; a replay without it runs them.

    `settings.shared_disk=False`: the workers (Kubernetes pods, cloud VMs) share no filesystem
    with this flow. Each batch then brings the benchmark parts its runs read, workers use their
    own work area (`$TESTPRISM_WORK` where they run, not `work`) and return their rows,
    which the flow writes: a worker killed mid-batch loses its whole batch, which Dask
    gives to another worker, instead of at most `flush_every` runs."""
    place = Placement(workers, dask_address, dask_cluster)
    work_root = Path(work) if work else default_work_root()
    inputs = open_inputs(benchmark, store, settings.configurations, backend, work_root, trusted=trusted,
                         unsafe=unsafe)
    bench, target = inputs.benchmark, inputs.store
    record_plan(bench, target)
    options = ExecutionOptions(
        backend=backend, work_root=work_root, store_root=Path(store), limits=settings.limits(),
        policy=settings.policy(patch_fuzz),
        concurrency=settings.concurrency or place.concurrency(inputs.backend.default_concurrency()),
        trusted=trusted, unsafe=unsafe, early_stop=settings.early_stop, replay_started=datetime.now(UTC),
    )
    todo = replay_work(bench, target, options, settings)
    log.info(
        "%d runs planned, %d already stored, %d to execute (backend %s, isolation %s); %d taken from the same "
        "work stored under another configuration or replay%s%s",
        todo.planned, todo.skipped, len(todo.firsts) + len(todo.twins), backend, inputs.isolation, todo.reused,
        f"; of those to execute, {len(todo.twins)} are the same work as another run of this replay and take its row"
        if todo.twins else "",
        f"; {todo.stopped} early-stopped (their suite's joint success already decided)" if settings.early_stop else "",
    )
    sink = progress.current()
    sink.start("replay", todo.planned, already=todo.skipped + todo.settled_here)
    executed = builds = 0
    if todo.firsts:  # (twins have a first run among them)
        sent = options if settings.shared_disk else replace(options, store_root=None, work_root=None)
        writer = ReplayJob(options)
        with place.task_runner() as runner:
            for units, settled in todo.rounds(options, settings):
                if settled:  # twins that took their first run's row
                    sink.batch_done(settled, stored=settled, reused=settled)
                if not units:
                    continue
                groups = replay_batches(units, options, place.batch_target(len(units)), settings.early_stop)
                for batch, summary in place_batches(runner, replay_batch, groups, sent, shared_disk=settings.shared_disk,
                                                    window=max(4, 2 * place.parallelism)):
                    if summary.rows:  # a worker without the store's disk returned them
                        writer.write(target, summary.rows)
                    sink.batch_done(*progress.summary_counts(summary, len(batch)))
                    executed += summary.executed
                    builds += summary.builds
                    _count(todo.outcomes, summary.outcomes)
    sink.finish()
    return ReplaySummary(todo.planned, todo.skipped, executed, todo.outcomes, inputs.isolation, builds, todo.reused)
