"""Three witnesses of a run's results, held against each other: its report (or the per-test
lines a log parser read), its log's closing summary, and its exit status.

A candidate patch runs in the same process as the checks that label it, so any one witness
can be made to lie: an exit handler can rewrite a report after the runner wrote it (the
report pipe now shows that: tasks/sandbox/report_pipe.py), a program can print a runner's
`PASSED` lines for every check and exit before any test runs. The witnesses are written at
different moments by different code, and a lie told to one rarely matches the others. So
where two say different things about whether tests failed, the run is `E` with reason
`results_disagree`: never `P` (a forged pass), and never `F` either (which witness lied is
not known). Only the disagreements a forged pass makes are looked for; a failure that one
witness alone reports already makes the run fail.

- a report whose every case passed, from a run that exited non-zero (the runner said
  something failed: the report was not its last word);
- results with no failure, from a log whose runner's closing summary counts failures;
- per-test lines read by a log parser, from a log with no closing summary of its runner
  (the runner never finished: the lines were printed by something else, or the run died
  half way, when its results are not whole either).

What a candidate can still do, and what it cannot, is said in SECURITY.md ("Labels").
"""

from __future__ import annotations

from testprism.tasks.execution.logs.summary import PARSER_FAMILY, last_summary, summary
from testprism.tasks.model.outcome import TestResult
from testprism.tasks.sandbox.base import ExecResult

_FAILING = ("failed", "error")


def disagreement(result: ExecResult, tests: tuple[TestResult, ...] | None, parser: str | None = None) -> str | None:
    """Why the run's witnesses contradict each other (module docstring), or None. `tests`:
    the run's per-test results from its report, or from its log by `parser`."""
    if tests is None:
        return None  # one witness only: the exit status decides, or the run is already unreadable
    failing = any(t.outcome in _FAILING for t in tests)
    log = result.output_tail
    if parser is None:
        if tests and not failing and result.exit_code not in (0, None):
            return f"the report says all {len(tests)} tests passed, but the run exited {result.exit_code}"
        closing = last_summary(log)
    else:
        family = PARSER_FAMILY.get(parser)
        if family is None:
            return None
        closing = summary(family, log)
        if closing is None:
            return (f"the log has per-test lines but no closing summary of its runner ({family}): "
                    "the runner did not finish")
    if closing is not None and closing.failed and not failing:
        return (f"the log's closing {closing.family} summary counts {closing.failed} failed, "
                f"but its results show none")
    return None
