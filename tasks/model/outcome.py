"""Outcomes and their reasons: one enum each, every value documented.

SWE-bench's harnesses leave users asking what "error", "unresolved" and "incomplete" mean;
here every unresolved run says why in one of a fixed set of reasons, and the retry policy
names the reasons it retries (infrastructure, never test verdicts).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Outcome(StrEnum):
    """What a suite did on a state."""

    PASS = "P"  #: completed, exit status 0, no failing test in its JUnit report
    FAIL = "F"  #: completed with a behavioural failure, confirmed by a replay
    ERROR = "E"  #: unresolved (⊥): see Reason; counts as neither acceptance nor rejection


class Reason(StrEnum):
    """Why a run is unresolved (`E`)."""

    TIMEOUT = "timeout"  #: the wall-clock limit was hit; the process tree was killed
    PATCH_FAILED = "patch_failed"  #: the state's patch applied neither with git apply nor patch --fuzz
    UNSTABLE = "unstable"  #: replays of the same run disagreed (flaky suite or state)
    SANDBOX_ERROR = "sandbox_error"  #: the sandbox could not start or broke (infrastructure)
    OUTPUT_LIMIT = "output_limit"  #: the run wrote more than the output bound; it was killed
    MISSING_SUITE = "missing_suite"  #: the configuration has no suite for this instance
    INVALID_SUITE = "invalid_suite"  #: the suite package was rejected when loaded (e.g. symlinks)
    SUITE_NOT_INSTALLED = "suite_not_installed"  #: the suite could not be installed on this state: its
    #: test patch does not apply, or a file of it would land on a link or file of the state's tree
    ENVIRONMENT_FAILED = "environment_failed"  #: the instance's environment could not be built


#: Reasons that come from infrastructure, not from the suite: retried, never final verdicts.
RETRYABLE = frozenset({Reason.SANDBOX_ERROR})


@dataclass(frozen=True, slots=True)
class TestResult:
    """One test case of a run, from the suite's JUnit XML."""

    name: str
    outcome: str  # passed | failed | error | skipped
    message: str = ""


@dataclass(frozen=True, slots=True)
class Verdict:
    """The classified result of one or more attempts of a run."""

    outcome: Outcome
    reason: Reason | None
    exit_code: int | None
    duration_s: float
    attempts: int
    output_tail: str
    tests: tuple[TestResult, ...] = field(default_factory=tuple)
    suite_patch_method: str = ""  #: how the suite's test patch applied ("" without one)
