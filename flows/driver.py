"""The one stage driver: every stage that runs sandboxed batches (replay, collect's
verifications, the coverage passes, generation, crossval's runs and checks) runs them here.

Given a stage's plan (its units and the keys the store has settled), its `Job` and the
placement (threads, a LocalCluster, a cluster by address or one the flow starts:
flows/runner.py `Placement`), the driver

- skips the units whose key the store holds;
- cuts the rest into batches (about four per worker, `batch_target`; or the stage's own
  cut, replay's drawn order and early-stop groups);
- places them as coarse Prefect tasks (`stage_batch`, named `<stage>-batch`), each running
  the one batch executor (tasks/execution/batch.py `execute`) with the stage's Job, made on
  the worker from the batch's options;
- writes the rows a batch brings back (a worker without the store's disk, or a job whose
  table is rewritten whole in one place: the coverage passes) through the flow's own Job;
- reports progress once per finished batch to the flows' progress hook (flows/progress.py:
  `start`, `batch_done` with the batch's own counts, `finish`);
- gathers the batches' summaries (`StageTotals`);
- stores what the stage runs with, once, as it starts (`stage_runs`: tasks/execution/stage_record.py).

What a stage settles without a sandbox (replay's reuse, early stop, twins) stays in its
own domain code (tasks/replay/work.py), which hands the driver each round's units. A
driver is entered once per stage, so a cluster it starts serves every round.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.task_runners import TaskRunner

from testprism.flows import progress
from testprism.flows.runner import Placement, place_batches
from testprism.storage import Store
from testprism.tasks.execution.batch import Batch, BatchSummary, ExecutionOptions, Job, batches, execute
from testprism.tasks.execution.stage_record import record_stage

log = logging.getLogger(__name__)

#: a stage's Job made from a batch's options, on the worker that runs the batch (a Job holds
#: per-batch state: locks, what early stop decided): the Job class, or a partial of it
JobMaker = Callable[[ExecutionOptions], Job]


@task(name="stage-batch", retries=0, cache_policy=NO_CACHE)
def stage_batch(batch: Batch, options: ExecutionOptions, job: JobMaker) -> BatchSummary:
    """One coarse unit of any stage: a batch run by the one executor with the stage's Job,
    rows written as they finish (or returned, from a worker without the store)."""
    return execute(job(options), batch.specs, options, batch.parcel)


@dataclass
class StageTotals:
    """The summaries of a stage's batches, added up."""

    executed: int = 0
    reused: int = 0
    builds: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)

    def add(self, summary: BatchSummary) -> None:
        self.executed += summary.executed
        self.reused += summary.reused
        self.builds += summary.builds
        for outcome, n in summary.outcomes.items():
            self.outcomes[outcome] = self.outcomes.get(outcome, 0) + n


class StageDriver:
    """One stage's batches, placed and gathered (module docstring). Enter it once, then
    `run` each round's units; `settle` counts units settled without a sandbox."""

    def __init__(self, stage: str, job: JobMaker, options: ExecutionOptions, place: Placement, *,
                 planned: int | None = None, shared_disk: bool = True, rows_back: bool = False,
                 writer: Job | None = None, failed: Callable[[str], bool] = "E".__eq__, settings: Any = None,
                 run: Any = None) -> None:
        """`planned`: the stage's whole plan when it is known before the rounds (default:
        the units given to `run`); `shared_disk=False`: batches carry their benchmark parts,
        workers use their own work area and return their rows; `rows_back`: batches return
        their rows even with a shared disk, for `writer` (default: `job(options)`) to write
        in this process (a table rewritten whole, by one writer); `failed`: whether an
        outcome counts as failed (default: `E`, an error); `settings`, `run`: the stage's own
        settings object and where it runs (RunSettings), stored with the options and placement
        its batches are given (tasks/execution/stage_record.py)."""
        self.stage, self.job, self.options, self.place = stage, job, options, place
        self.shared_disk, self.failed = shared_disk, failed
        if not shared_disk:
            self.sent = replace(options, store_root=None, work_root=None)
        else:
            self.sent = replace(options, store_root=None) if rows_back else options
        self.writer = writer
        self.hook = progress.current()
        self.totals = StageTotals()
        self._planned, self._fixed = planned or 0, planned is not None
        self._already = 0  #: units settled before the first batch: the store's, and those settled without one
        self._started = False
        self._runner: TaskRunner | None = None
        self._entered = ExitStack()
        self._settings, self._run = settings, run

    def __enter__(self) -> StageDriver:
        record_stage(self.stage, self.options, self.place.record(), self._settings, self._run)
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._entered.__exit__(*exc)  # the task runner, if a round had batches to place
        finally:
            self._runner = None
            if self._planned:
                self._start()
                self.hook.finish()

    def _start(self) -> None:
        """Show the stage once its plan is known (at its first batch, or at its end when
        nothing ran): what was settled before counts as done already, out of the rate."""
        if not self._started:
            self._started = True
            self.hook.start(self.stage, self._planned, already=self._already)

    def stored(self, n: int) -> None:
        """`n` units of the plan the store held before the stage ran."""
        self.settle(n)

    def settle(self, n: int, reused: int = 0) -> None:
        """`n` units settled without a sandbox (unrunnable, early-stopped, or `reused`:
        taken from the same work the store settled elsewhere)."""
        if not n:
            return
        if self._started:
            self.hook.batch_done(n, stored=n, reused=reused)
        else:
            self._already += n

    def run(self, units: Sequence, *, key: Callable[[Any], str] | None = None, settled: Collection[str] = (),
            cut: Callable[[list, int], list[Batch]] | None = None) -> list[BatchSummary]:
        """Place `units` (those whose `key` is in `settled` skipped) in batches (`cut(units,
        size)`, default: `batches` in plan order) and run them to the end; each batch's
        summary in the order they completed."""
        todo = [u for u in units if key is None or key(u) not in settled]
        if not self._fixed:
            self._planned += len(units)
            self.stored(len(units) - len(todo))
        if not todo:
            return []
        size = self.place.batch_target(len(todo))
        return self._gather(cut(todo, size) if cut else batches(todo, size))

    def _gather(self, groups: list[Batch]) -> list[BatchSummary]:
        self._start()
        if self._runner is None:  # started once, when the first batch is placed: nothing to run, no cluster
            self._runner = self._entered.enter_context(self.place.task_runner())
        summaries = []
        window = max(4, 2 * self.place.parallelism)
        for batch, summary in place_batches(self._runner, stage_batch.with_options(name=f"{self.stage}-batch"),
                                            groups, self.sent, shared_disk=self.shared_disk, window=window,
                                            job=self.job):
            if summary.rows:  # a worker without the store's disk (or `rows_back`) returned them
                if self.writer is None:
                    self.writer = self.job(self.options)
                self.writer.write(Store(self.options.store_root), summary.rows)
            self.totals.add(summary)
            self.hook.batch_done(len(batch), stored=sum(summary.outcomes.values()), reused=summary.reused,
                                 failed=sum(n for outcome, n in summary.outcomes.items() if self.failed(outcome)))
            summaries.append(summary)
        return summaries


def drive(stage: str, units: Sequence, job: JobMaker, options: ExecutionOptions, place: Placement, *,
          key: Callable[[Any], str] | None = None, settled: Collection[str] = (), **driver: Any) -> StageTotals:
    """A one-round stage: `units` less the `settled` keys run through a `StageDriver`; its
    totals."""
    with StageDriver(stage, job, options, place, **driver) as running:
        running.run(units, key=key, settled=settled)
    return running.totals
