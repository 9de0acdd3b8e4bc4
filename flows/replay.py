"""The replay flow: every suite on buggy, reference and every candidate.

Thin wiring: what is left to run, in rounds (tasks/replay/work.py) → the stage driver
(flows/driver.py) places each round's batches as coarse Prefect tasks on threads or a Dask
cluster → each batch writes its own rows (or, on workers that share no disk with the flow,
brings its benchmark parts and returns its rows for the driver to write). Prefect costs
milliseconds to a tenth of a second per task and its server drops events past a few
thousand task runs, so a task is a batch of runs, never one run.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from prefect import flow

from testprism.flows.driver import StageDriver
from testprism.flows.runner import open_stage
from testprism.tasks.replay.runs import ReplayJob, record_plan
from testprism.tasks.replay.work import replay_batches, replay_work
from testprism.tasks.execution.run_settings import RunSettings
from testprism.tasks.gate.store import gated_benchmark
from testprism.tasks.replay.settings import ReplaySettings

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


def _count(outcomes: dict[str, int], more: dict[str, int]) -> None:
    for key, n in more.items():
        outcomes[key] = outcomes.get(key, 0) + n


@flow(name="replay", log_prints=False)
def replay_flow(
    benchmark: str,
    store: str,
    settings: ReplaySettings = ReplaySettings(),
    run: RunSettings = RunSettings(),
    trusted: bool = False,
) -> ReplaySummary:
    """`settings`: what the replay does (tasks/replay/settings.py, each field's description
    in Prefect's run form); `run`: where it runs, as for every stage (tasks/execution/run_settings.py);
    `trusted`: the suites are the bundled benchmark's own.

    `settings.early_stop`: for JVR-only questions, a suite's remaining runs on an instance are
    not run once one of its runs there decided its joint success (S = 0): stored as
    `E`/early_stopped, never `P` or `F`, so JVR is a full replay's and GRR, CAR, WDR are
    not; a replay without it runs them.

    `settings.shared_disk=False`: the workers (Kubernetes pods, cloud VMs) share no filesystem
    with this flow. Each batch then brings the benchmark parts its runs read, workers use their
    own work area (`$TESTPRISM_WORK` where they run, not `work`) and return their rows,
    which the flow writes: a worker killed mid-batch loses its whole batch, which Dask
    gives to another worker, instead of at most `flush_every` runs."""
    stage = open_stage(benchmark, store, run, configurations=settings.configurations, trusted=trusted,
                       policy=settings.policy(), concurrency=settings.concurrency, limits=settings.limits(),
                       early_stop=settings.early_stop, warm=settings.warm)
    inputs, place, options = stage.inputs, stage.place, stage.options
    bench, target = inputs.benchmark, inputs.store
    bench = gated_benchmark(target, bench, settings.include_failed_gate, "replay")
    record_plan(bench, target)
    todo = replay_work(bench, target, options, settings)
    log.info(
        "%d runs planned, %d already stored, %d to execute (backend %s, isolation %s); %d taken from the same "
        "work stored under another configuration or replay%s%s",
        todo.planned, todo.skipped, len(todo.firsts) + len(todo.twins), run.backend, inputs.isolation, todo.reused,
        f"; of those to execute, {len(todo.twins)} are the same work as another run of this replay and take its row"
        if todo.twins else "",
        f"; {todo.stopped} early-stopped (their suite's joint success already decided)" if settings.early_stop else "",
    )
    with StageDriver("replay", ReplayJob, options, place, planned=todo.planned,
                     shared_disk=settings.shared_disk, settings=settings, run=run) as driver:
        driver.stored(todo.skipped)
        driver.settle(todo.settled_here, reused=todo.reused)
        for units, settled in todo.rounds(options, settings):  # (twins have a first run among them)
            driver.settle(settled, reused=settled)
            driver.run(units, cut=lambda units, size: replay_batches(units, options, size, settings.early_stop))
    totals = driver.totals
    _count(todo.outcomes, totals.outcomes)
    return ReplaySummary(todo.planned, todo.skipped, totals.executed, todo.outcomes, inputs.isolation, totals.builds,
                         todo.reused)
