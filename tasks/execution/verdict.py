"""Classify runs into outcomes, and confirm failures by replay.

The rule (README "Outcomes"): a run that completed with exit 0 and no failing test is `P`;
one that completed otherwise is `F` only if a replay fails again — if the replay passes, the
run is `E`/`unstable`; a run that hit the timeout or output bound, or whose sandbox broke,
is `E` with that reason. Infrastructure errors are retried up to `infra_retries` times.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace

from testprism.tasks.execution.crosscheck import disagreement
from testprism.tasks.execution.junit import ReportUnreadable, parse_junit, select
from testprism.tasks.execution.logs import parse_log
from testprism.tasks.model.hashing import digest
from testprism.tasks.model.outcome import Outcome, Reason, TestResult, Verdict
from testprism.tasks.sandbox.base import ExecResult, Limits, SandboxError, SuiteNotInstalled
from testprism.tasks.model.patch_fuzz import DEFAULT_FUZZ

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Policy:
    """How runs are judged. Part of the run key: change it and runs are redone."""

    confirm_failures: int = 1  # replays that must agree before a failure is `F`
    infra_retries: int = 2
    #: the fuzz of the `patch` fallback, for every patch a run applies (state and suite):
    #: it decides which trees exist, so it is part of the key
    patch_fuzz: int = DEFAULT_FUZZ
    #: the cheaper confirmation policy (docs/replay.md, "Confirmation of failures"): None replays every failure, the
    #: papers' rule; a share in (0, 1] replays a failure on the buggy program or the
    #: reference always (they decide every suite's f and r) and one on a candidate only when
    #: the run is drawn, by `audit_seed` and its content, into an audit of that share, whose
    #: observed flake rate `flake_table` reports with its interval
    audit_share: float | None = None
    audit_seed: int = 0

    def __post_init__(self) -> None:
        if self.audit_share is not None and not 0 < self.audit_share <= 1:
            raise ValueError(f"audit share {self.audit_share}: must be in (0, 1]")

    @property
    def key(self) -> str:
        base = f"confirm={self.confirm_failures};retries={self.infra_retries};fuzz={self.patch_fuzz}"
        return base if self.audit_share is None else f"{base};audit={self.audit_share};seed={self.audit_seed}"

    @property
    def confirmation(self) -> str:
        """The confirmation rule in words, as every row records it."""
        if self.audit_share is None:
            return "every failure"
        return f"buggy and reference, audit {self.audit_share:g} of candidates (seed {self.audit_seed})"

    def confirms(self, state_kind: str, content_key: str) -> bool:
        """Whether a failure of this run is replayed to confirm it."""
        if self.audit_share is None or state_kind in ("buggy", "reference"):
            return True
        draw = int(digest("audit", str(self.audit_seed), content_key)[:12], 16) / float(16 ** 12)
        return draw < self.audit_share


def logged_limits(limits: Limits) -> Limits:
    """The limits of a run whose results a log parser reads: its whole output kept (up to
    the output bound, past which the run is `E`/output_limit anyway), not just a tail."""
    return replace(limits, tail_bytes=max(limits.tail_bytes, limits.output_bytes))


class Unreadable(ValueError):
    """A run's results cannot be read by its `Reader` (a reward that is not a number): the
    run is `E`/`reason` with this message, never `P` or `F`."""

    reason = Reason.PARSE_FAILED


class ResultsDisagree(Unreadable):
    """A run handed back results from two sources where only one is the checks' (a reward
    file of the name the verifier does not write beside the one it does): `E`/results_disagree."""

    reason = Reason.RESULTS_DISAGREE


#: reads a run's per-test results from what it handed back (a verifier's reward,
#: tasks/execution/reward.py); raises Unreadable, with why, when they cannot be read
Reader = Callable[[ExecResult], tuple[TestResult, ...]]


def test_results(result: ExecResult, parser: str | None = None,
                 read: Reader | None = None) -> tuple[TestResult, ...] | None:
    """The per-test results of a run: `read`'s (which may raise Unreadable), else read from
    its output by the log parser `parser` (tasks/execution/logs; the run made with
    `logged_limits`; None when unreadable), else from its JUnit report (None when it wrote
    none; junit.ReportUnreadable when it wrote one that cannot be read)."""
    if read is not None:
        return read(result)
    if parser is not None:
        return parse_log(parser, result.output_tail.encode("utf-8", errors="surrogateescape"))
    return parse_junit(result.junit_xml) if result.junit_xml else None


@dataclass(frozen=True)
class Reading:
    """What one attempt handed back, read once: its outcome before confirmation (and why,
    where it is `E`), its per-test results (None where there are none or they cannot be
    read), and the note that heads its verdict's tail (why its results could not be read,
    or how its witnesses disagree)."""

    outcome: Outcome
    reason: Reason | None
    tests: tuple[TestResult, ...] | None
    note: str | None = None


def read_attempt(result: ExecResult, selected: tuple[str, ...] = (), parser: str | None = None,
                 read: Reader | None = None) -> Reading:
    """One attempt's reading. With `selected` tests and readable results, only those tests
    decide; otherwise the exit status and any failing case. A run whose log `parser` or
    `read` cannot read is `E`/parse_failed, one whose witnesses disagree (crosscheck.py)
    `E`/results_disagree: never a pass or a failure. The results are read even where a
    limit decides the outcome, so that its verdict keeps what the run reported."""
    reason: Reason | None = None
    note: str | None = None
    try:
        tests = test_results(result, parser, read)
    except Unreadable as exc:
        tests, reason, note = None, exc.reason, str(exc)
    except ReportUnreadable as exc:
        tests, reason, note = None, Reason.REPORT_UNREADABLE, str(exc)
    else:
        if parser is not None and tests is None:
            reason = Reason.PARSE_FAILED
        elif read is None and (note := disagreement(result, tests, parser)) is not None:
            reason = Reason.RESULTS_DISAGREE
    if result.timed_out:
        return Reading(Outcome.ERROR, Reason.TIMEOUT, tests, note)
    if result.output_exceeded:
        return Reading(Outcome.ERROR, Reason.OUTPUT_LIMIT, tests, note)
    if result.limit is not None:  # a run-wide limit: what the suite saw says nothing of the state
        return Reading(Outcome.ERROR, Reason(result.limit), tests, note)
    if reason is not None:
        return Reading(Outcome.ERROR, reason, tests, note)
    if selected and tests is not None:
        passed = all(o == "passed" for o in select(tests, selected).values())
        return Reading(Outcome.PASS if passed else Outcome.FAIL, None, tests)
    failing = any(t.outcome in ("failed", "error") for t in tests or ())
    return Reading(Outcome.PASS if result.exit_code == 0 and not failing else Outcome.FAIL, None, tests)


def classify(result: ExecResult, selected: tuple[str, ...] = (), parser: str | None = None,
             read: Reader | None = None) -> tuple[Outcome, Reason | None]:
    """One attempt's outcome and reason (`read_attempt`)."""
    reading = read_attempt(result, selected, parser, read)
    return reading.outcome, reading.reason


@dataclass(frozen=True)
class RunResult:
    """What one judged run on a state left: its verdict and how the state's patch applied
    ("git apply", "patch --fuzz=N" or "none"), both written into its row."""

    verdict: Verdict
    patch_method: str | None = None
    #: the test infrastructure a candidate changed, put back before its checks ran
    #: (tasks/collect/verification.py): written into its verification's row
    restored: tuple[str, ...] = ()


#: how much of a failure's message a row keeps
MESSAGE_TAIL = 2000


def failed(reason: Reason, message: str, attempts: int = 1) -> Verdict:
    """The verdict of a run that ended before a suite could decide anything."""
    return Verdict(Outcome.ERROR, reason, None, 0.0, attempts, message[-MESSAGE_TAIL:])


class Attempts:
    """Runs of one unit, with ONE budget of infrastructure retries (every job's: replay,
    verification, coverage): a SandboxError is retried until `retries` are spent, then
    raised; SuiteNotInstalled is a fact of (state, suite) and is raised at once."""

    def __init__(self, attempt: Callable[[], ExecResult], retries: int) -> None:
        self._attempt = attempt
        self._retries = retries
        self.count = 0  #: attempts made, failed ones included
        self._failures = 0

    def __call__(self) -> ExecResult:
        while True:
            self.count += 1
            try:
                return self._attempt()
            except SuiteNotInstalled:
                raise
            except SandboxError as exc:
                self._failures += 1
                log.warning("sandbox error (attempt %d): %s", self.count, exc)
                if self._failures > self._retries:
                    raise


def judge(attempt: Callable[[], ExecResult], policy: Policy, selected: tuple[str, ...] = (),
          confirm: bool = True, pace: Callable[[], None] | None = None, parser: str | None = None,
          read: Reader | None = None) -> Verdict:
    """Run `attempt` until its outcome is settled under `policy`; `confirm` False
    (Policy.confirms) lets a failure stand without its replays. `pace` is called before
    each confirmation replay: the batch's turn (tasks/execution/batch.py `Schedule`), so a
    confirmation does not run right after the attempt it confirms. `parser`: the log
    parser that reads the tests' results (`test_results`); the verdict keeps the output's
    usual tail, not the whole log. `read`: where the results come from instead (a
    verifier's reward), its Unreadable message heading the verdict's."""
    confirmations = policy.confirm_failures if confirm else 0
    runs = Attempts(attempt, policy.infra_retries)
    seen: list[Outcome] = []
    while True:
        try:
            last = runs()
        except SuiteNotInstalled as exc:  # a fact of (state, suite): replaying cannot change it
            return failed(Reason.SUITE_NOT_INSTALLED, str(exc), runs.count)
        except SandboxError as exc:
            return failed(Reason.SANDBOX_ERROR, str(exc), runs.count)
        reading = read_attempt(last, selected, parser, read)
        outcome, reason = reading.outcome, reading.reason
        seen.append(outcome)
        if outcome is Outcome.FAIL and len(seen) <= confirmations:
            if pace is not None:
                pace()
            continue  # confirm the failure by replaying it
        if len(seen) > 1 and any(o != seen[0] for o in seen):
            outcome, reason = Outcome.ERROR, Reason.UNSTABLE
        replayed = (len(seen) > 1) if seen[0] is Outcome.FAIL else None
        tail = last.output_tail[-Limits.tail_bytes:] if parser is not None else last.output_tail
        if reading.note is not None:
            tail = f"{reading.note}\n{tail}"
        return Verdict(outcome, reason, last.exit_code, last.duration_s, runs.count, tail, reading.tests or (),
                       last.suite_patch_method, replayed)
