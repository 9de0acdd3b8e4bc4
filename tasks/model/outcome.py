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
    """Why something has no plain result: the ONE vocabulary of every dataset's `reason`
    column (runs, verifications, coverage, candidates, quarantined instances, panels, audits) and of
    the report. A word means the same wherever it appears; the sets below say which
    dataset uses which."""

    # -- a sandboxed run (replay, verification, coverage pass) -----------------------------------
    TIMEOUT = "timeout"  #: the wall-clock limit was hit; the process tree was killed
    PATCH_FAILED = "patch_failed"  #: the state's patch applied neither with git apply nor patch --fuzz
    UNSTABLE = "unstable"  #: replays of the same run disagreed (flaky suite or state)
    SANDBOX_ERROR = "sandbox_error"  #: the sandbox could not start or broke (infrastructure)
    OUTPUT_LIMIT = "output_limit"  #: the run wrote more than the output bound; it was killed
    MEMORY_LIMIT = "memory_limit"  #: the run's processes together (tmpfs pages included) reached its memory
    #: limit and were killed by the run's memory cgroup (`Limits.memory_mb`)
    DISK_LIMIT = "disk_limit"  #: the run filled its workspace's bounded space (`Limits.disk_mb`)
    PROCESS_LIMIT = "process_limit"  #: the run's processes together reached its process limit
    #: (`Limits.processes`, the run's pids cgroup): a fork was refused
    ENVIRONMENT_FAILED = "environment_failed"  #: the instance's environment could not be built
    BUILD_FAILED = "build_failed"  #: the state's build step (`[build]`) failed, timed out or left an unsafe tree
    PARSE_FAILED = "parse_failed"  #: the run's log, read by the instance's `[checks] parser`, named no test,
    #: passed a bound or broke the parser (tasks/execution/logs): no per-test result, so never P or F
    REPORT_UNREADABLE = "report_unreadable"  #: the run handed back a JUnit report that cannot be read
    #: (garbled, written twice, past a bound of tasks/execution/junit.py): never the exit status's verdict
    RESULTS_DISAGREE = "results_disagree"  #: the run's report, log and exit status contradict each other
    #: (a report of passes from a runner that exited non-zero, a log whose summary says tests failed,
    #: a verifier's reward file it does not write): tasks/execution/crosscheck.py; never P
    # -- the suite ---------------------------------------------------------------------------
    MISSING_SUITE = "missing_suite"  #: the configuration has no suite for this instance
    INVALID_SUITE = "invalid_suite"  #: the suite package was rejected when loaded (e.g. symlinks)
    SUITE_NOT_INSTALLED = "suite_not_installed"  #: the suite could not be installed on this state: its
    #: test patch does not apply, or a file of it would land on a link or file of the state's tree
    NOT_RUN = "not_run"  #: a planned run the store does not hold (report and metrics: counted as `E`)
    EARLY_STOPPED = "early_stopped"  #: not run (opt-in early stop, `replay --early-stop`): another run of
    #: the suite on the instance had already decided its joint success (S = 0); counted as `E`, so
    #: only JVR is what a full replay gives
    # -- the official checks (verifications) -------------------------------------------------------
    CHECKS_PATCH_FAILED = "checks_patch_failed"  #: the checks patch does not apply over the state
    # -- the coverage pass -----------------------------------------------------------------------
    NO_PYTHON_CHANGE = "no_python_change"  #: the reference changes no executable Python line nor function
    NO_CODE_CHANGE = "no_code_change"  #: the reference changes no code line its language's toolchain measures
    NOT_MEASURED = "not_measured"  #: coverage is not measured for the instance's language (tsx, ...)
    COVERAGE_FAILED = "coverage_failed"  #: the run finished but left no readable coverage report
    # -- candidates: why one is not (or no longer) in its instance's pool ----------------------------
    DUPLICATE = "duplicate"  #: same normalised patch as `duplicate_of`; carries its label
    SAME_AS_REFERENCE = "same_as_reference"  #: identical to the reference: not a candidate
    NEAR_DUPLICATE = "near_duplicate"  #: token cosine ≥ threshold with `duplicate_of`, same label
    INSTANCE_QUARANTINED = "instance_quarantined"  #: its instance failed gold validation
    EQUIVALENT_MUTANT = "equivalent_mutant"  #: a mutant every official check passes on: possibly
    #: equivalent to the reference, so never an invalid candidate (tasks/collect/mutants.py)
    NO_MUTANTS = "no_mutants"  #: mutants were asked for a thin pool but none could be made (another
    #: language than Python, or no operator applies to what the reference changes)
    # -- candidate files: what reading them set aside -----------------------------------------------
    UNREADABLE_FILE = "unreadable_file"  #: the file cannot be read or parsed as JSON/JSONL
    BAD_ROW = "bad_row"  #: a row lacks a field or has the wrong type
    UNKNOWN_INSTANCE = "unknown_instance"  #: the instance id is not in the benchmark
    EMPTY_PATCH = "empty_patch"  #: no patch text
    NOT_A_DIFF = "not_a_diff"  #: the text is not a unified diff we can apply
    # -- instances quarantined by gold validation (neither labelled nor scored) ----------------------
    REFERENCE_PATCH_FAILED = "reference_patch_failed"  #: the reference does not apply
    UNRESOLVED = "unresolved"  #: a gold run timed out, overflowed or lost its sandbox
    PASSES_BEFORE = "fail_to_pass_passes_before"  #: a fail-to-pass check passes on the buggy program
    REFERENCE_FAILS = "reference_fails_checks"  #: a check does not pass on the reference
    FAILED_GATE = "failed_gate"  #: its row failed the release gate (`testprism check`, docs/gate.md)
    # -- curation: why an instance is not in the curated benchmark --------------------------------
    SOLUTION_TOO_SMALL = "solution_too_small"  #: fewer effective reference lines than its source's bound
    TOO_FEW_TESTS = "too_few_tests"  #: fewer official test functions than its source's bound
    TESTS_TOO_SPARSE = "tests_too_sparse"  #: tests per modified file under its source's bound
    SOURCE_SKIPPED = "source_skipped"  #: its source's adapter could not turn it into an instance
    NOT_SAMPLED = "not_sampled"  #: eligible, beyond the split's sizes (or its repository's quota)
    NEEDS_REVIEW = "needs_review"  #: the judge's score is under the threshold but not by much, or unusable
    JUDGE_EXCLUDED = "judge_excluded"  #: the judge scored its reference tests far under the threshold
    TOO_EASY = "too_easy"  #: every configuration of the named panel already reproduces its transition
    # -- instances without a TestPrism-shaped panel ------------------------------------------------
    TOO_FEW_VALID = "too_few_valid"
    TOO_FEW_INVALID = "too_few_invalid"
    VALID_NOT_DIVERSE = "valid_not_diverse"  #: best mean pairwise AST distance found ≤ threshold
    INVALID_NOT_DIVERSE = "invalid_not_diverse"  #: not enough invalid ones with pairwise Jaccard ≤ threshold
    # -- the reference-test audit by a judge (audits; docs/curate.md) ------------------------------
    MALFORMED_ANSWER = "malformed_answer"  #: the judge answered, but not JSON with a score 0..100 and a rationale
    JUDGE_REFUSED = "judge_refused"  #: the judge declined to answer (a refusal or a content filter)
    JUDGE_FAILED = "judge_failed"  #: no answer: retries exhausted (429, 5xx, timeouts, connection
    #: errors) or the endpoint rejected the request; asked again on a rerun (as is `over_budget`:
    #: the stage's request or token budget was spent before it was asked)
    # -- a generation run (generations; docs/generate.md): why its suite was not kept --------------
    OVER_BUDGET = "over_budget"  #: the channel's step or token budget ran out, or the agent reported more;
    #: a judge's or reviewer's question not asked: the stage's model-call budget was spent
    AGENT_FAILED = "agent_failed"  #: the agent command exited non-zero
    NO_SUITE = "no_suite"  #: it ended well but left no test file under tmp/


#: What any sandboxed run can end in without a verdict of its own.
#: A run that hit one of its limits: the `ExecResult.limit` a backend reports (never P or F).
LIMIT_REASONS = frozenset({Reason.MEMORY_LIMIT, Reason.DISK_LIMIT, Reason.PROCESS_LIMIT})
RUN_FAILURES = frozenset({Reason.TIMEOUT, Reason.PATCH_FAILED, Reason.UNSTABLE, Reason.SANDBOX_ERROR,
                          Reason.OUTPUT_LIMIT, Reason.ENVIRONMENT_FAILED, Reason.BUILD_FAILED,
                          Reason.PARSE_FAILED, Reason.REPORT_UNREADABLE, Reason.RESULTS_DISAGREE}) | LIMIT_REASONS
#: The `runs` dataset (and the report's `not_run`).
RUN_REASONS = RUN_FAILURES | {Reason.MISSING_SUITE, Reason.INVALID_SUITE, Reason.SUITE_NOT_INSTALLED, Reason.NOT_RUN,
                              Reason.EARLY_STOPPED}
#: The `verifications` dataset.
VERIFICATION_REASONS = RUN_FAILURES | {Reason.CHECKS_PATCH_FAILED}
#: `scores/coverage` and `scores/candidate_coverage`: why a row has no measurement (null ΔC and
#: EC, or null counts), or is 0 without a run.
COVERAGE_REASONS = (RUN_FAILURES - {Reason.UNSTABLE}) | {
    Reason.MISSING_SUITE, Reason.INVALID_SUITE, Reason.SUITE_NOT_INSTALLED, Reason.NO_PYTHON_CHANGE,
    Reason.NO_CODE_CHANGE, Reason.NOT_MEASURED, Reason.COVERAGE_FAILED}
#: The `candidates` dataset: null is "in the pool, with its label".
CANDIDATE_REASONS = VERIFICATION_REASONS | {Reason.DUPLICATE, Reason.SAME_AS_REFERENCE, Reason.NEAR_DUPLICATE,
                                            Reason.INSTANCE_QUARANTINED, Reason.EQUIVALENT_MUTANT}
#: The funnel's `mutation` stage: mutants set aside, and instances that got none.
MUTATION_REASONS = VERIFICATION_REASONS | {Reason.DUPLICATE, Reason.SAME_AS_REFERENCE, Reason.EQUIVALENT_MUTANT,
                                           Reason.NO_MUTANTS}
#: Reading candidate files (the funnel's `ingest` exclusions).
INGEST_REASONS = frozenset({Reason.UNREADABLE_FILE, Reason.BAD_ROW, Reason.UNKNOWN_INSTANCE, Reason.EMPTY_PATCH,
                            Reason.NOT_A_DIFF})
#: Gold validation's quarantine.
QUARANTINE_REASONS = frozenset({Reason.REFERENCE_PATCH_FAILED, Reason.CHECKS_PATCH_FAILED, Reason.UNRESOLVED,
                                Reason.UNSTABLE, Reason.PASSES_BEFORE, Reason.REFERENCE_FAILS, Reason.FAILED_GATE})
#: Curation's funnel.
CURATE_REASONS = frozenset({Reason.SOLUTION_TOO_SMALL, Reason.TOO_FEW_TESTS, Reason.TESTS_TOO_SPARSE,
                            Reason.DUPLICATE, Reason.TOO_EASY, Reason.SOURCE_SKIPPED,
                            Reason.NOT_SAMPLED, Reason.NEEDS_REVIEW, Reason.JUDGE_EXCLUDED})
#: Panel selection.
PANEL_REASONS = frozenset({Reason.TOO_FEW_VALID, Reason.TOO_FEW_INVALID, Reason.VALID_NOT_DIVERSE,
                           Reason.INVALID_NOT_DIVERSE})
#: The `audits` dataset: null is "the judge gave a score".
AUDIT_REASONS = frozenset({Reason.MALFORMED_ANSWER, Reason.JUDGE_REFUSED, Reason.JUDGE_FAILED, Reason.OVER_BUDGET})
#: The `generations` dataset: null is "its suite is kept".
GENERATION_REASONS = frozenset({Reason.TIMEOUT, Reason.OUTPUT_LIMIT, Reason.SANDBOX_ERROR, Reason.ENVIRONMENT_FAILED,
                                Reason.BUILD_FAILED, *LIMIT_REASONS,
                                Reason.OVER_BUDGET, Reason.AGENT_FAILED, Reason.NO_SUITE})

#: Reasons that come from infrastructure, not from the suite: retried, never final verdicts.
RETRYABLE = frozenset({Reason.SANDBOX_ERROR})
#: Unresolved outcomes that replaying cannot change: never retried.
DETERMINISTIC = frozenset({Reason.PATCH_FAILED, Reason.MISSING_SUITE, Reason.INVALID_SUITE,
                           Reason.SUITE_NOT_INSTALLED})


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
    #: a failure replayed to confirm it (True), one the policy let stand unreplayed (False:
    #: Policy.audit_share), or no failure to confirm (None)
    replayed: bool | None = None
