"""Progress reporting, one small interface: a stage reports, the CLI decides how to show it.

A stage calls its hook (`current()`) three ways: `start(stage, planned, already)` once, with
the runs it has to settle and how many of those the store settled before anything ran
(stored earlier, reused, unrunnable); `batch_done(done, stored, reused, failed)` for every
batch that finished, with that batch's counts (not totals): runs it settled, rows it
stored, runs it took from the same work already stored, runs that ended in an error (`E`);
and `finish()` at the end. The counts come from the batches' summaries, which return to the
flow's process wherever the batch ran (threads, `--workers N`, a Dask cluster), so the
display is the same everywhere.

`StageDisplay` is the terminal's: one rich line per stage (runs done of planned, stored,
reused and failed so far, rate and time left). Outside the CLI (a deployment, a script) the
hook is silent.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID


#: the environment variables that keep Prefect's and Dask's own log lines out of a terminal,
#: each with its value without and with --verbose: set by the CLI before Prefect is imported
#: (`quiet_console`) and handed to the workers a flow starts (flows/runner.py `quiet_env`),
#: whose output is the same terminal's. Prefect's console handler is raised to WARNING; its
#: API handler is not, so flow and task runs keep their logs on the server.
QUIET_LOGS = {"PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": ("WARNING", "INFO"),
              "DASK_LOGGING__DISTRIBUTED": ("warning", "info")}


def quiet_console(verbose: bool) -> None:
    """Keep Prefect's and Dask's own lines (task runs finishing, flow-run names, the
    temporary server stopping) out of this process's terminal, unless `verbose` or the
    user set the variables: a process-wide setting, as a CLI process's own."""
    for name, (quiet, loud) in QUIET_LOGS.items():
        os.environ.setdefault(name, loud if verbose else quiet)


class StageProgress(Protocol):
    def start(self, stage: str, planned: int, already: int = 0) -> None: ...
    def batch_done(self, done: int, stored: int = 0, reused: int = 0, failed: int = 0) -> None: ...
    def finish(self) -> None: ...


class _Silent:
    def start(self, stage: str, planned: int, already: int = 0) -> None:
        pass

    def batch_done(self, done: int, stored: int = 0, reused: int = 0, failed: int = 0) -> None:
        pass

    def finish(self) -> None:
        pass


_current: ContextVar[StageProgress] = ContextVar("testprism_progress", default=_Silent())


def current() -> StageProgress:
    return _current.get()


@contextmanager
def reporting_to(hook: StageProgress) -> Iterator[None]:
    token = _current.set(hook)
    try:
        yield
    finally:
        _current.reset(token)


@dataclass
class StageCounts:
    """One stage's counts so far, and what its rate and time left are computed from."""

    stage: str
    planned: int
    already: int = 0
    done: int = 0
    stored: int = 0
    reused: int = 0
    failed: int = 0
    started: float = field(default_factory=time.monotonic)

    def add(self, done: int, stored: int, reused: int, failed: int) -> None:
        self.done += done
        self.stored += stored
        self.reused += reused
        self.failed += failed

    def rate(self, now: float) -> float | None:
        """Runs per second of the runs that ran: those settled before anything ran and those
        reused (no sandbox) are left out, or a resumed replay would promise an instant end."""
        ran = self.done - self.reused
        elapsed = now - self.started
        return ran / elapsed if ran > 0 and elapsed > 0 else None

    def left_s(self, now: float) -> float | None:
        rate = self.rate(now)
        remaining = self.planned - self.already - self.done
        return remaining / rate if rate else None


#: seconds between two plain progress lines when the output is not a terminal
PLAIN_EVERY_S = 5.0


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "-:--:--"
    whole = int(seconds)
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


class StageDisplay:
    """The terminal's progress: a rich line per stage, kept when the stage ends.

    `replay  ━━━━━━━━━━━━━━━━━━━━━━━━━━━  812/1200  stored 790 · reused 12 · failed 3  4.1 runs/s  0:01:35 left`
    """

    def __init__(self, console: Console) -> None:
        self.console = console
        self.bar: Progress | None = None
        self.task: TaskID | None = None
        self.counts: StageCounts | None = None
        self.final = False  #: the stage ended: its line shows the time it took, not the time left
        #: off a terminal (a demo piped to a file) rich draws nothing until a stage ends: a
        #: plain line every PLAIN_EVERY_S instead, from a thread of its own, stopped by this
        self._plain: threading.Event | None = None

    def start(self, stage: str, planned: int, already: int = 0) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn
        from rich.text import Text

        display = self

        class Counts(ProgressColumn):
            """The counts, rate and time left, read when the line is drawn (twice a second),
            so the time left counts down between batches."""

            def render(self, task: object) -> Text:
                return Text.from_markup(f"{display._counts()}  {display._pace()}")

        self.finish()
        self.counts = StageCounts(stage, planned, already)
        self.final = False
        if not self.console.is_terminal:
            self._plain = threading.Event()
            self._line()
            threading.Thread(target=self._plain_lines, args=(self._plain,), daemon=True).start()
            return
        self.bar = Progress(TextColumn("[bold]{task.description:<9}"), BarColumn(), MofNCompleteColumn(), Counts(),
                            console=self.console, transient=False, refresh_per_second=2)
        self.bar.start()
        self.task = self.bar.add_task(stage, total=planned, completed=already)

    def batch_done(self, done: int, stored: int = 0, reused: int = 0, failed: int = 0) -> None:
        if self.counts is None:
            return
        self.counts.add(done, stored, reused, failed)
        if self.bar is not None and self.task is not None:
            self.bar.update(self.task, advance=done)

    def _line(self) -> None:
        """One plain line of the stage's progress (off a terminal)."""
        c = self.counts
        if c is not None:
            self.console.print(f"{c.stage} {c.already + c.done}/{c.planned}  {self._counts()}  {self._pace()}",
                               highlight=False, markup=True, soft_wrap=True)

    def _plain_lines(self, stop: threading.Event) -> None:
        while not stop.wait(PLAIN_EVERY_S):
            self._line()

    def finish(self) -> None:
        if self._plain is not None:
            self._plain.set()
            self._plain = None
            self.final = True
            self._line()
            return
        if self.bar is None or self.task is None:
            return
        self.final = True
        self.bar.refresh()
        self.bar.stop()
        self.bar = self.task = None

    def _counts(self) -> str:
        c = self.counts
        assert c is not None
        earlier = f"{c.already} stored before · " if c.already else ""
        failed = f"[red]failed {c.failed}[/]" if c.failed else "failed 0"
        return f"{earlier}stored {c.stored} · reused {c.reused} · {failed}"

    def _pace(self) -> str:
        c = self.counts
        assert c is not None
        now = time.monotonic()
        rate = c.rate(now)
        speed = f"{rate:.1f} runs/s" if rate else "– runs/s"
        if self.final:
            return f"{speed} · {_clock(now - c.started)} in all"
        return f"{speed} · {_clock(c.left_s(now))} left"


def summary_counts(summary: object, runs: int) -> tuple[int, int, int, int]:
    """`batch_done`'s counts from what a batch returned: a BatchSummary's rows (stored),
    reuse and errors; a stage whose batches return another summary reports its runs done
    and stored."""
    outcomes = getattr(summary, "outcomes", None)
    if isinstance(outcomes, dict):
        return runs, sum(outcomes.values()), int(getattr(summary, "reused", 0)), outcomes.get("E", 0)
    return runs, runs, 0, 0
