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
from testprism.tasks.model.outcome import Outcome, Reason, Verdict
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

    @property
    def key(self) -> str:
        return f"confirm={self.confirm_failures};retries={self.infra_retries};fuzz={self.patch_fuzz}"


def classify(result: ExecResult, selected: tuple[str, ...] = ()) -> tuple[Outcome, Reason | None]:
    """One attempt's outcome, before confirmation. With `selected` tests and a readable
    JUnit report, only those tests decide; otherwise the exit status and any failing case."""
    if result.timed_out:
        return Outcome.ERROR, Reason.TIMEOUT
    if result.output_exceeded:
        return Outcome.ERROR, Reason.OUTPUT_LIMIT
    tests = parse_junit(result.junit_xml) if result.junit_xml else None
    if selected and tests is not None:
        passed = all(o == "passed" for o in select(tests, selected).values())
        return (Outcome.PASS, None) if passed else (Outcome.FAIL, None)
    failing = any(t.outcome in ("failed", "error") for t in tests or ())
    if result.exit_code == 0 and not failing:
        return Outcome.PASS, None
    return Outcome.FAIL, None


def judge(attempt: Callable[[], ExecResult], policy: Policy, selected: tuple[str, ...] = ()) -> Verdict:
    """Run `attempt` until its outcome is settled under `policy`."""
    attempts = 0
    infra_failures = 0
    seen: list[Outcome] = []
    last: ExecResult | None = None
    while True:
        attempts += 1
        try:
            last = attempt()
        except SuiteNotInstalled as exc:  # a fact of (state, suite): replaying cannot change it
            return Verdict(Outcome.ERROR, Reason.SUITE_NOT_INSTALLED, None, 0.0, attempts, str(exc)[-2000:])
        except SandboxError as exc:
            infra_failures += 1
            log.warning("sandbox error (attempt %d): %s", attempts, exc)
            if infra_failures > policy.infra_retries:
                return Verdict(Outcome.ERROR, Reason.SANDBOX_ERROR, None, 0.0, attempts, str(exc)[-2000:])
            continue
        outcome, reason = classify(last, selected)
        seen.append(outcome)
        if outcome is Outcome.FAIL and len(seen) <= policy.confirm_failures:
            continue  # confirm the failure by replaying it
        if len(seen) > 1 and any(o != seen[0] for o in seen):
            outcome, reason = Outcome.ERROR, Reason.UNSTABLE
        tests = parse_junit(last.junit_xml) if last.junit_xml else None
        return Verdict(outcome, reason, last.exit_code, last.duration_s, attempts, last.output_tail, tests or (),
                       last.suite_patch_method)
