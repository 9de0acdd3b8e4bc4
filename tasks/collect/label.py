"""Gold validation and labels: what the stored verifications say about an instance's
reference (it makes the fail-to-pass transition, stably) and about each candidate
(SWE-bench's resolved rule: every official check passes).

Plain functions on rows, no sandbox: tasks/collect/verification.py ran them; collection.py
wires both into one collect.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from testprism.tasks.collect.candidate import CandidatePatch
from testprism.tasks.collect.verification import Verification, candidate_states, check_ids, plan
from testprism.tasks.execution.batch import ExecutionOptions
from testprism.tasks.execution.junit import select
from testprism.tasks.execution.verdict import Policy
from testprism.tasks.model.benchmark import Instance
from testprism.tasks.model.outcome import Reason, TestResult
from testprism.tasks.model.state import states_of

#: Gold validation runs each state GOLD_REPEATS times and compares the runs itself, so a
#: single run must not replay failures on its own.
GOLD_POLICY = Policy(confirm_failures=0)
GOLD_REPEATS = 2
#: A candidate's failure is confirmed by one replay before it is labelled invalid.
LABEL_POLICY = Policy(confirm_failures=1)
#: Verification reasons that leave no check proven passed: the candidate is invalid (label_of)
UNPROVEN = frozenset({Reason.REPORT_UNREADABLE, Reason.RESULTS_DISAGREE})


def gold_plan(instance: Instance, options: ExecutionOptions) -> list[Verification]:
    """Buggy and reference, GOLD_REPEATS times each (options carry GOLD_POLICY)."""
    buggy, reference = states_of(instance)[:2]
    return plan(instance, [buggy, reference], options, GOLD_REPEATS)


# -- judging ---------------------------------------------------------------------------------


def _results(row: dict, ids: tuple[str, ...]) -> dict[str, str]:
    """passed | failed | missing per check id. A run whose JUnit report is missing or
    unreadable has no cases, so every check is `missing`: not passed."""
    cases = tuple(TestResult(t["name"], t["outcome"], t["message"] or "") for t in row["tests"] or ())
    return select(cases, ids)


def _listed(ids: Sequence[str], limit: int = 5) -> str:
    more = f" and {len(ids) - limit} more" if len(ids) > limit else ""
    return ", ".join(ids[:limit]) + more


@dataclass(frozen=True)
class GoldVerdict:
    instance_id: str
    reason: Reason | None  # None: validated
    detail: str

    @property
    def validated(self) -> bool:
        return self.reason is None


def gold_verdict(instance: Instance, rows: Sequence[dict]) -> GoldVerdict:
    """Whether the reference makes the checks' fail-to-pass transition, stably: on every
    repeat the fail-to-pass checks do not pass on buggy, and every check passes on the
    reference, with identical results across repeats."""

    def verdict(reason: Reason | None, detail: str = "") -> GoldVerdict:
        return GoldVerdict(instance.id, reason, detail)

    ids = check_ids(instance)
    by_state: dict[str, list[dict]] = {}
    for row in sorted(rows, key=lambda r: r["repeat"]):
        by_state.setdefault(row["state"], []).append(row)
    for state in ("buggy", "reference"):
        for row in by_state.get(state, []):
            if row["reason"] == Reason.PATCH_FAILED:
                return verdict(Reason.REFERENCE_PATCH_FAILED, row["stdout_tail"][-500:])
            if row["reason"] == Reason.CHECKS_PATCH_FAILED:
                return verdict(Reason.CHECKS_PATCH_FAILED, f"on {state}: {row['stdout_tail'][-500:]}")
            if row["reason"]:
                return verdict(Reason.UNRESOLVED, f"{row['reason']} on {state} (repeat {row['repeat']})")
    results = {state: [_results(row, ids) for row in by_state.get(state, [])] for state in ("buggy", "reference")}
    for state, runs in results.items():
        if len(runs) < GOLD_REPEATS:
            raise ValueError(f"{instance.id}: {len(runs)} gold runs of {state} stored, {GOLD_REPEATS} expected")
        differ = [i for i in ids if len({run[i] for run in runs}) > 1]
        if differ:
            return verdict(Reason.UNSTABLE, f"on {state}: {_listed(differ)}")
    before, after = results["buggy"][0], results["reference"][0]
    passing = [i for i in instance.spec.checks.fail_to_pass if before[i] == "passed"]
    if passing:
        return verdict(Reason.PASSES_BEFORE, _listed(passing))
    failing = [i for i in ids if after[i] != "passed"]
    if failing:
        unread = not by_state["reference"][0]["tests"]
        no_report = " (no test results: the JUnit report is missing or unreadable)" if unread else ""
        return verdict(Reason.REFERENCE_FAILS, _listed([f"{i} {after[i]}" for i in failing]) + no_report)
    return verdict(None)


@dataclass(frozen=True)
class Label:
    label: str | None  # valid | invalid; None when the verification did not settle it
    reason: Reason | None
    failed_checks: tuple[str, ...]
    restored: tuple[str, ...] = ()  #: test infrastructure put back before the checks (verification.py)


def label_of(instance: Instance, row: dict) -> Label:
    """SWE-bench's resolved rule: valid iff every fail-to-pass and pass-to-pass check
    passed; a check that did not run (`missing`) counts as not passed, so a candidate that
    breaks the runner's JUnit output is invalid, not a crash. A patch that applies under
    no method (git apply, patch --fuzz) is unlabelled ("unlabelled: patch does not apply",
    reason `patch_failed`, kept out of panels): the checks never ran on it, so nothing says
    it is wrong — SWE-bench counts its own patches that way as unresolved executions, not
    as incorrect fixes. A run whose results cannot be believed (UNPROVEN: a report written
    twice or garbled, witnesses that disagree) proved no check passed: invalid, every check
    failed, as SWE-bench counts a test its log does not show passing. A candidate whose tree,
    with the official checks over it, does not build (the build step ran to its end and exited
    non-zero, where the reference built in the same environment: its instance was validated)
    is invalid as the benchmarks count it (Multi-SWE-bench, SWE-bench-java: a compile error
    resolves nothing), every check failed; it keeps its reason `build_failed` and so stays out
    of panels, where every suite's run on it would end `E` and decide nothing. A build cut
    short (timed out) says nothing of the patch: unlabelled. Any other unresolved run leaves
    the candidate unlabelled, with its reason."""
    ids = check_ids(instance)
    restored = tuple(row.get("restored") or ())
    if row["reason"] in UNPROVEN:
        return Label("invalid", None, ids, restored)
    if row["reason"] == Reason.BUILD_FAILED and row.get("exit_code") is not None:
        return Label("invalid", Reason.BUILD_FAILED, ids, restored)
    if row["reason"]:
        return Label(None, Reason(row["reason"]), (), restored)
    results = _results(row, ids)
    failed = tuple(i for i in ids if results[i] != "passed")
    return Label("invalid" if failed else "valid", None, failed, restored)


def apply_labels(candidates: Sequence[CandidatePatch],
                 labels: Mapping[tuple[str, str], Label]) -> list[CandidatePatch]:
    """Set the labels found for (instance id, candidate id); an exact duplicate takes the
    label of the candidate it duplicates (it was not run: same patch, same label)."""
    out = []
    for cand in candidates:
        found = labels.get((cand.instance_id, cand.candidate_id))
        if found is not None:
            cand = replace(cand, label=found.label, reason=found.reason, failed_checks=found.failed_checks,
                           restored=found.restored)
        out.append(cand)
    kept = {(c.instance_id, c.candidate_id): c for c in out}
    return [
        replace(c, label=kept[(c.instance_id, c.duplicate_of)].label,
                failed_checks=kept[(c.instance_id, c.duplicate_of)].failed_checks)
        if c.reason is Reason.DUPLICATE and c.duplicate_of else c
        for c in out
    ]


def gold_verdicts(instances: Mapping[str, Instance], specs: Mapping[str, Sequence[Verification]],
                  rows: Mapping[str, dict]) -> list[GoldVerdict]:
    """Each instance's gold verdict from the stored rows of its gold plan."""
    return [gold_verdict(instances[iid], [rows[s.key] for s in group]) for iid, group in specs.items()]


def label_plan(pool: Sequence[CandidatePatch], validated: Sequence[Instance],
               options: ExecutionOptions) -> list[Verification]:
    """One verification per candidate still in the pool of a validated instance."""
    specs: list[Verification] = []
    for instance in validated:
        todo = {c.candidate_id: c.patch for c in pool if c.instance_id == instance.id and c.reason is None}
        specs += plan(instance, list(candidate_states(instance, todo).values()), options)
    return specs


def labelled(pool: Sequence[CandidatePatch], specs: Sequence[Verification],
             rows: Mapping[str, dict]) -> list[CandidatePatch]:
    """The pool with the labels the stored rows of `specs` give."""
    labels = {(s.instance.id, s.state.candidate_id or ""): label_of(s.instance, rows[s.key]) for s in specs}
    return apply_labels(pool, labels)
