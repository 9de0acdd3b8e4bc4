"""Classify runs into outcomes, and confirm failures by replay.

The rule (README "Outcomes"): a run that completed with exit 0 and no failing test is `P`;
one that completed otherwise is `F` only if a replay fails again — if the replay passes, the
run is `E`/`unstable`; a run that hit the timeout or output bound, or whose sandbox broke,
is `E` with that reason. Infrastructure errors are retried up to `infra_retries` times.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from testprism.tasks.execution.junit import parse_junit, select
from testprism.tasks.model.hashing import digest
from testprism.tasks.model.outcome import Outcome, Reason, TestResult, Verdict
from testprism.tasks.sandbox.base import ExecResult, SandboxError, SuiteNotInstalled
from testprism.tasks.model.state import DEFAULT_FUZZ

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Policy:
    """How runs are judged. Part of the run key: change it and runs are redone."""

    confirm_failures: int = 1  # replays that must agree before a failure is `F`
    infra_retries: int = 2
    #: the fuzz of the `patch` fallback, for every patch a run applies (state and suite):
    #: it decides which trees exist, so it is part of the key
    patch_fuzz: int = DEFAULT_FUZZ
    #: the cheaper confirmation policy (README, Outcomes): None replays every failure, the
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


class Unreadable(ValueError):
    """A run's results cannot be read by its `Reader` (a reward that is not a number): the
    run is `E`/parse_failed with this message, never `P` or `F`."""


#: reads an attempt's per-test results another way than its JUnit report (a verifier's
#: reward, tasks/execution/reward.py); raises Unreadable when they cannot be read
Reader = Callable[[ExecResult], tuple[TestResult, ...]]


def _tests(result: ExecResult, read: Reader | None) -> tuple[TestResult, ...] | None:
    """The attempt's per-test results: `read`'s, else its JUnit report's (None without one)."""
    if read is not None:
        return read(result)
    return parse_junit(result.junit_xml) if result.junit_xml else None


def classify(result: ExecResult, selected: tuple[str, ...] = (), read: Reader | None = None) -> tuple[Outcome, Reason | None]:
    """One attempt's outcome, before confirmation. With `selected` tests and readable
    results (JUnit's, or `read`'s), only those tests decide; otherwise the exit status and
    any failing case. Results `read` cannot read are `E`/parse_failed."""
    if result.timed_out:
        return Outcome.ERROR, Reason.TIMEOUT
    if result.output_exceeded:
        return Outcome.ERROR, Reason.OUTPUT_LIMIT
    if result.limit is not None:  # a run-wide limit: what the suite saw says nothing of the state
        return Outcome.ERROR, Reason(result.limit)
    try:
        tests = _tests(result, read)
    except Unreadable:
        return Outcome.ERROR, Reason.PARSE_FAILED
    if selected and tests is not None:
        passed = all(o == "passed" for o in select(tests, selected).values())
        return (Outcome.PASS, None) if passed else (Outcome.FAIL, None)
    failing = any(t.outcome in ("failed", "error") for t in tests or ())
    if result.exit_code == 0 and not failing:
        return Outcome.PASS, None
    return Outcome.FAIL, None


@dataclass(frozen=True)
class RunResult:
    """What one judged run on a state left: its verdict and how the state's patch applied
    ("git apply", "patch --fuzz=N" or "none"), both written into its row."""

    verdict: Verdict
    patch_method: str | None = None


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
          confirm: bool = True, pace: Callable[[], None] | None = None, read: Reader | None = None) -> Verdict:
    """Run `attempt` until its outcome is settled under `policy`; `confirm` False
    (Policy.confirms) lets a failure stand without its replays. `pace` is called before
    each confirmation replay: the batch's turn (tasks/execution/batch.py `Schedule`), so a
    confirmation does not run right after the attempt it confirms. `read`: where the
    per-test results come from, when not from JUnit (classify)."""
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
        outcome, reason = classify(last, selected, read)
        seen.append(outcome)
        if outcome is Outcome.FAIL and len(seen) <= confirmations:
            if pace is not None:
                pace()
            continue  # confirm the failure by replaying it
        if len(seen) > 1 and any(o != seen[0] for o in seen):
            outcome, reason = Outcome.ERROR, Reason.UNSTABLE
        replayed = (len(seen) > 1) if seen[0] is Outcome.FAIL else None
        try:
            tests, message = _tests(last, read), last.output_tail
        except Unreadable as exc:
            tests, message = None, f"{exc}\n{last.output_tail}"
        return Verdict(outcome, reason, last.exit_code, last.duration_s, runs.count, message, tests or (),
                       last.suite_patch_method, replayed)
