"""The progress a stage reports (flows/progress.py) and the terminal line that shows it: the
counts come from the batches' summaries, so a replay on threads and one on a Dask cluster
report the same totals; the rate and time left leave out what ran no sandbox."""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import pytest
from rich.console import Console

from testprism.flows import progress
from testprism.tasks.execution.batch import BatchSummary
from testprism.tasks.execution.run_settings import RunSettings
from tests.benchfixture import CHECKS, WEAK, make_benchmark


@dataclass
class Recorder:
    """A hook that keeps every call, as the CLI's display receives them."""

    calls: list[tuple] = field(default_factory=list)

    def start(self, stage: str, planned: int, already: int = 0) -> None:
        self.calls.append(("start", stage, planned, already))

    def batch_done(self, done: int, stored: int = 0, reused: int = 0, failed: int = 0) -> None:
        self.calls.append(("batch", done, stored, reused, failed))

    def finish(self) -> None:
        self.calls.append(("finish",))

    def totals(self) -> tuple[int, int, int, int]:
        batches = [c[1:] for c in self.calls if c[0] == "batch"]
        return tuple(sum(column) for column in zip(*batches)) if batches else (0, 0, 0, 0)  # type: ignore[return-value]


def test_the_display_shows_done_of_planned_stored_reused_failed_and_pace():
    stream = io.StringIO()
    display = progress.StageDisplay(Console(file=stream, width=200, force_terminal=False))
    display.start("replay", 20, already=5)
    display.batch_done(4, stored=4, reused=0, failed=1)
    display.batch_done(3, stored=3, reused=2, failed=0)
    display.finish()
    text = stream.getvalue()
    assert "replay" in text and "12/20" in text  # 5 stored before + 7 done now
    assert "5 stored before" in text and "stored 7" in text and "reused 2" in text and "failed 1" in text
    assert "runs/s" in text and "in all" in text


def test_rate_and_time_left_leave_out_work_settled_without_a_sandbox():
    counts = progress.StageCounts("replay", planned=100, already=40, started=0.0)
    counts.add(done=10, stored=10, reused=10, failed=0)  # taken from the same work stored: no run
    assert counts.rate(now=5.0) is None and counts.left_s(now=5.0) is None
    counts.add(done=20, stored=20, reused=0, failed=2)
    assert counts.rate(now=10.0) == pytest.approx(2.0)  # 20 runs ran in 10 s
    assert counts.left_s(now=10.0) == pytest.approx(15.0)  # 100 - 40 - 30 = 30 runs left at 2 a second


def test_counts_of_a_batch_summary_and_of_another_stage_s_summary():
    summary = BatchSummary(executed=5, reused=1, outcomes={"P": 3, "F": 2, "E": 1})
    assert progress.summary_counts(summary, 6) == (6, 6, 1, 1)
    assert progress.summary_counts(4, 4) == (4, 4, 0, 0)  # collect's verification batches return a count


@pytest.mark.slow
@pytest.mark.requires("sandbox")
@pytest.mark.parametrize("workers", [1, 2])
def test_a_replay_reports_every_planned_run_on_threads_and_on_dask(tmp_path, work_root, workers):
    """The batches' summaries come back to the flow's process under `--workers 2` as on
    threads: what the hook adds up is the replay's own summary; a second replay reports all
    of it as stored before."""
    from testprism.flows.replay import replay_flow

    bench = make_benchmark(tmp_path / "bench", {"strong": {"test_m.py": CHECKS}, "weak": {"test_m.py": WEAK}})
    hook = Recorder()
    with progress.reporting_to(hook):
        summary = replay_flow(benchmark=str(bench), store=str(tmp_path / "store"), run=RunSettings(work=str(work_root), workers=workers))
    assert hook.calls[0] == ("start", "replay", summary.planned, 0) and hook.calls[-1] == ("finish",)
    done, stored, reused, failed = hook.totals()
    assert done == stored == summary.planned == 8
    assert reused == summary.reused and failed == summary.outcomes.get("E", 0)
    again = Recorder()
    with progress.reporting_to(again):
        replay_flow(benchmark=str(bench), store=str(tmp_path / "store"), run=RunSettings(work=str(work_root)))
    assert again.calls == [("start", "replay", 8, 8), ("finish",)]


@pytest.mark.slow
@pytest.mark.requires("sandbox")
def test_score_with_a_benchmark_shows_its_coverage_passes(tmp_path, work_root, monkeypatch):
    """`testprism score --benchmark` runs the coverage passes through the stage driver: the
    CLI's display gets each pass's start and batches (make demo's score showed no progress
    while its passes ran for minutes). Control: the same command without --benchmark runs no
    pass, and the display sees no stage."""
    from typer.testing import CliRunner

    from testprism.flows.cli import app
    from testprism.flows.replay import replay_flow

    bench = make_benchmark(tmp_path / "bench", {"strong": {"test_m.py": CHECKS}, "weak": {"test_m.py": WEAK}})
    store = tmp_path / "store"
    replay_flow(benchmark=str(bench), store=str(store), run=RunSettings(work=str(work_root)))
    shown: list[Recorder] = []

    def display(console: Console) -> Recorder:
        shown.append(Recorder())
        return shown[-1]

    monkeypatch.setattr(progress, "StageDisplay", display)
    for args, passes in ((["score", str(store)], False),
                         (["score", str(store), "--benchmark", str(bench), "--work", str(work_root)], True)):
        shown.clear()
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        # the weak suite accepts invalid candidates, so the candidates' pass has work too
        assert {c[1] for r in shown for c in r.calls if c[0] == "start"} == (
            {"coverage", "candidate_coverage"} if passes else set())
        starts = [c for r in shown for c in r.calls if c[0] == "start"]
        assert sum(r.totals()[0] for r in shown) == sum(planned - already for _, _, planned, already in starts)


def test_off_a_terminal_the_display_prints_a_plain_line_every_few_seconds(monkeypatch):
    """A demo piped to a file showed nothing for 18 minutes: off a terminal, a plain line
    every PLAIN_EVERY_S while a stage runs, and one when it ends. CONTROL: on a terminal the
    stage is rich's bar (no such line is printed while it runs)."""
    import time

    monkeypatch.setattr(progress, "PLAIN_EVERY_S", 0.05)
    for terminal in (False, True):
        out = io.StringIO()
        display = progress.StageDisplay(Console(file=out, force_terminal=terminal, width=200))
        display.start("replay", planned=10, already=2)
        display.batch_done(3, stored=3)
        time.sleep(0.3)
        running = out.getvalue()
        display.finish()
        lines = [line for line in out.getvalue().splitlines() if line.startswith("replay 5/10")]
        if terminal:
            assert "replay 5/10" not in running
        else:
            assert running.count("replay 5/10") >= 3 and "stored 3" in lines[-1] and "in all" in lines[-1]
