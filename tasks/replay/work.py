"""What a replay has left to run, once the store has been read, and in which rounds.

A replay plans every run (runs.py `plan`), then settles without a sandbox what it can: runs
the store already holds, runs that cannot run (their reason stored), runs whose work the
store settled under another configuration or replay (reused), and, with early stop, runs
of suites whose joint success is already decided. What is left runs in two rounds: the
first run of each content key, then its twins (the same work under another
configuration), which take the first run's row unless it settled nothing. Each round's
units are cut into batches in an order drawn from the replay's secret, so that a run's
place tells nothing of its state.

Plain functions over the store: the replay flow (flows/replay.py) only places the batches
each round gives and writes what comes back.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from testprism.storage import Store
from testprism.tasks.execution.batch import Batch, ExecutionOptions, batches
from testprism.tasks.model.benchmark import Benchmark
from testprism.tasks.replay.runs import (
    RunSpec,
    finished_keys,
    first_of_each_work,
    group_of,
    pending_runs,
    plan,
    record_early_stopped,
    record_reused,
    record_unrunnable,
    run_order,
)
from testprism.tasks.replay.settings import ReplaySettings


@dataclass
class ReplayWork:
    """A replay's runs after the store was read: counts of what was settled without a
    sandbox (their rows already written) and the runs left, first runs and twins."""

    planned: int
    skipped: int  #: already settled in the store
    pending: int  #: planned and not settled in the store: what the replay's progress counts
    settled_here: int  #: of the pending, settled without a sandbox (unrunnable, reused, early-stopped)
    reused: int
    stopped: int
    outcomes: dict[str, int]
    firsts: list[RunSpec] = field(default_factory=list)
    twins: list[RunSpec] = field(default_factory=list)

    def rounds(self, options: ExecutionOptions, settings: ReplaySettings) -> Iterator[tuple[list[RunSpec], int]]:
        """The units of each round, with how many pending runs settled as the round began:
        the first runs; then the twins whose first run did not settle their work (an
        infrastructure error), the others taking its row now."""
        yield self.firsts, 0
        if self.twins:
            units, counts = record_reused(self.twins, options, settings.retry_errors)
            self.reused += sum(counts.values())
            for outcome, n in counts.items():
                self.outcomes[outcome] = self.outcomes.get(outcome, 0) + n
            yield units, len(self.twins) - len(units)


def replay_work(benchmark: Benchmark, store: Store, options: ExecutionOptions, settings: ReplaySettings) -> ReplayWork:
    """Plan the replay, store the rows of what needs no sandbox, and return what is left."""
    specs = plan(benchmark, options)
    todo = pending_runs(specs, finished_keys(store, settings.retry_errors, settings.early_stop))
    unrunnable = record_unrunnable(todo, options)
    left, outcomes = record_reused(todo, options, settings.retry_errors)
    reused = sum(outcomes.values())
    left, stopped = record_early_stopped(left, specs, options)
    if unrunnable + stopped:
        outcomes["E"] = outcomes.get("E", 0) + unrunnable + stopped
    firsts, twins = first_of_each_work([s for s in left if s.runs_in_sandbox])
    return ReplayWork(len(specs), len(specs) - len(todo), len(todo), unrunnable + reused + stopped, reused, stopped,
                      outcomes, firsts, twins)


def replay_batches(units: list[RunSpec], options: ExecutionOptions, size: int, early_stop: bool) -> list[Batch]:
    """A round's units in batches of about `size`, in an order drawn from the replay's
    secret; with early stop a suite's runs on an instance stay in one batch (runs.py
    `group_of`), so that the batch can stop them once decided."""
    return batches(run_order(units, options.order_secret), size, group_of if early_stop else None,
                   options.order_secret)
