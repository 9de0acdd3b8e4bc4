"""Verification: run an instance's official checks on a state, validate the reference
(gold validation) and label candidates by SWE-bench's resolved rule.

A verification runs `checks.command` on the *checked tree* of a state: the program with
the state's patch applied, the files the checks patch touches restored to the program's
version (SWE-bench checks out the test files before applying its test patch, so a
candidate's own edits to them cannot break or fake the official tests), then the checks
patch. It is keyed by content (state hash, checks hash, environment hash, execution
policy, repeat), stored in the `verifications` dataset, and never run twice.

Plain functions, no Prefect: flows/collect.py wires them into coarse tasks.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

import polars as pl
import pyarrow as pa

from testprism.storage import SCHEMAS, Store
from testprism.tasks.model import patches
from testprism.tasks.model.benchmark import Candidate, Instance
from testprism.tasks.collect.candidate import CandidatePatch, CandidateReason
from testprism.tasks.model.hashing import digest
from testprism.tasks.execution.junit import select
from testprism.tasks.sandbox.environment import EnvironmentBuildError
from testprism.tasks.sandbox.nofollow import UnsafeTarget, remove_entry, write_file
from testprism.tasks.model.outcome import Outcome, Reason, TestResult, Verdict
from testprism.tasks.replay.runs import Environments, ExecutionOptions
from testprism.tasks.sandbox.base import RunRequest, SandboxBackend, SandboxError, backend_class
from testprism.tasks.model.state import DEFAULT_FUZZ, PatchResult, State, apply_patch, states_of
from testprism.tasks.execution.verdict import Policy, judge
from testprism.tasks.model.workdir import WorkPaths, build_once

log = logging.getLogger(__name__)

#: Gold validation runs each state GOLD_REPEATS times and compares the runs itself, so a
#: single run must not replay failures on its own.
GOLD_POLICY = Policy(confirm_failures=0)
GOLD_REPEATS = 2
#: A candidate's failure is confirmed by one replay before it is labelled invalid.
LABEL_POLICY = Policy(confirm_failures=1)


class QuarantineReason(StrEnum):
    """Why an instance failed gold validation (it is then neither labelled nor scored)."""

    REFERENCE_PATCH_FAILED = "reference_patch_failed"  #: the reference does not apply
    CHECKS_PATCH_FAILED = "checks_patch_failed"  #: the checks patch does not apply
    UNRESOLVED = "unresolved"  #: a gold run timed out, overflowed or lost its sandbox
    UNSTABLE = "unstable"  #: the two gold runs of a state disagree
    PASSES_BEFORE = "fail_to_pass_passes_before"  #: a fail-to-pass check passes on the buggy program
    REFERENCE_FAILS = "reference_fails_checks"  #: a check does not pass on the reference


def check_ids(instance: Instance) -> tuple[str, ...]:
    """Every official check id: fail-to-pass, then pass-to-pass."""
    return instance.spec.checks.fail_to_pass + instance.spec.checks.pass_to_pass


def checks_hash(instance: Instance) -> str:
    """What the checks are: the test patch, the command, and the ids that decide."""
    checks = instance.spec.checks
    return digest("checks", instance.checks_patch, checks.command, *checks.fail_to_pass, "|", *checks.pass_to_pass)


def candidate_states(instance: Instance, patches: Mapping[str, str]) -> dict[str, State]:
    """States of collected candidates (id → normalised patch), built by `states_of` so that
    their hashes are exactly the ones replay gives the same patches."""
    declared = tuple(Candidate(id=cid, label="", note="", patch=patch.encode()) for cid, patch in patches.items())
    return {s.candidate_id: s for s in states_of(replace(instance, candidates=declared)) if s.candidate_id}


@dataclass(frozen=True)
class Verification:
    """One planned run of an instance's checks on a state."""

    key: str
    instance: Instance
    state: State
    repeat: int


def plan(instance: Instance, states: Sequence[State], options: ExecutionOptions, repeats: int = 1) -> list[Verification]:
    """Verifications of `states`, `repeats` times each, keyed by content and policy."""
    base = (checks_hash(instance), instance.spec.environment.key, options.policy_hash)
    return [
        Verification(digest("verification", state.hash, *base, str(repeat)), instance, state, repeat)
        for state in states for repeat in range(repeats)
    ]


def gold_plan(instance: Instance, options: ExecutionOptions) -> list[Verification]:
    """Buggy and reference, GOLD_REPEATS times each (options carry GOLD_POLICY)."""
    buggy, reference = states_of(instance)[:2]
    return plan(instance, [buggy, reference], options, GOLD_REPEATS)


# -- running ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckedTree:
    """A state's tree with the checks patch over it, or which patch did not apply."""

    tree: Path
    patch: PatchResult  # the state's own patch
    checks: PatchResult | None  # None when the state's patch failed first


def _checks_files(instance: Instance) -> set[str]:
    return patches.touched_files(patches.parse(instance.checks_patch))


def _restore(instance: Instance, tree: Path, files: set[str]) -> None:
    """Put the program's version of `files` back (removing files the program lacks),
    never through a link the state's patch made (raises UnsafeTarget)."""
    for rel in sorted(files):
        parts = Path(rel).parts
        remove_entry(tree, parts)
        original = instance.program / rel
        if original.is_file():
            write_file(tree, parts, original.read_bytes(), original.stat().st_mode & 0o777)


def checked_tree(instance: Instance, state: State, work: WorkPaths, fuzz: int = DEFAULT_FUZZ) -> CheckedTree:
    """Build (once) the checked tree of a state in the work area: the state's patch and
    the official checks applied by the one procedure (tasks/model/state.py)."""

    def build(target: Path) -> None:
        tree = target / "tree"
        shutil.copytree(instance.program, tree, symlinks=True)
        own = apply_patch(tree, state.patch, fuzz) if state.patch else PatchResult.unpatched()
        checks = None
        if own.applied:
            try:
                _restore(instance, tree, _checks_files(instance))
                checks = apply_patch(tree, instance.checks_patch, fuzz)
            except UnsafeTarget as exc:
                checks = PatchResult(False, "none", f"the official test files cannot be restored: {exc}")
        (target / "patch.json").write_text(json.dumps({"patch": own.__dict__, "checks": checks and checks.__dict__}))

    # The fuzz is in the key whatever the state: the checks patch is applied with it too.
    folder = build_once(work.state(instance.id, digest("checked", state.hash, f"fuzz={fuzz}", checks_hash(instance))),
                        build)
    record = json.loads((folder / "patch.json").read_text())
    checks = PatchResult(**record["checks"]) if record["checks"] else None
    return CheckedTree(folder / "tree", PatchResult(**record["patch"]), checks)


def post_patch_reader(instance: Instance, state: State, work: WorkPaths) -> Callable[[str], str | None]:
    """Read a file of the state after its patch (None when absent or touched by the checks,
    whose files hold the program's version in the checked tree)."""
    tree = checked_tree(instance, state, work).tree
    checks_files = _checks_files(instance)

    def read(rel: str) -> str | None:
        path = tree / rel
        if rel in checks_files or not path.is_file():
            return None
        return path.read_text(encoding="utf-8", errors="replace")

    return read


def _verify(spec: Verification, environments: Environments, options: ExecutionOptions
            ) -> tuple[Verdict, str | None, str]:
    """Run the checks on one state; the verdict, its reason (a `Reason` value, or
    `checks_patch_failed`, which the outcome enum does not know: no suite run has it) and
    how the state's patch applied."""
    built = checked_tree(spec.instance, spec.state, WorkPaths(options.work_root), options.policy.patch_fuzz)
    method = built.patch.method
    if not built.patch.applied:
        failed = Verdict(Outcome.ERROR, Reason.PATCH_FAILED, None, 0.0, 1, built.patch.message)
        return failed, Reason.PATCH_FAILED.value, method
    assert built.checks is not None
    if not built.checks.applied:
        failed = Verdict(Outcome.ERROR, None, None, 0.0, 1, built.checks.message)
        return failed, CandidateReason.CHECKS_PATCH_FAILED.value, method
    try:
        environment = environments.prepare(spec.instance.spec.environment)
    except SandboxError as exc:  # infrastructure: not a verdict on the candidate
        return Verdict(Outcome.ERROR, Reason.SANDBOX_ERROR, None, 0.0, 1, str(exc)[-2000:]), Reason.SANDBOX_ERROR.value, method
    if isinstance(environment, EnvironmentBuildError):
        failed = Verdict(Outcome.ERROR, Reason.ENVIRONMENT_FAILED, None, 0.0, 0, str(environment)[-2000:])
        return failed, Reason.ENVIRONMENT_FAILED.value, method
    request = RunRequest(
        tree=built.tree, suite_folder=None, suite_files=(), command=spec.instance.spec.checks.command,
        environment=environment, limits=options.limits, patch_fuzz=options.policy.patch_fuzz,
    )
    verdict = judge(lambda: environments.backend.run(request), options.policy, check_ids(spec.instance))
    return verdict, verdict.reason.value if verdict.reason else None, method


def _row(spec: Verification, verdict: Verdict, reason: str | None, options: ExecutionOptions,
         backend: SandboxBackend, started: datetime, patch_method: str) -> dict:
    """One `verifications` row (storage/schema.py VERIFICATIONS)."""
    return {
        "verification_key": spec.key,
        "instance_id": spec.instance.id,
        "state": spec.state.kind,
        "candidate_id": spec.state.candidate_id,
        "repeat": spec.repeat,
        "state_hash": spec.state.hash,
        "checks_hash": checks_hash(spec.instance),
        "environment_hash": spec.instance.spec.environment.key,
        "policy_hash": options.policy_hash,
        "outcome": verdict.outcome.value,
        "reason": reason,
        "exit_code": verdict.exit_code,
        "duration_s": round(verdict.duration_s, 4),
        "attempts": verdict.attempts,
        "stdout_tail": verdict.output_tail,
        "started_at": started,
        "backend": backend.name,
        "isolation": backend.isolation,
        "tests": [{"name": t.name, "outcome": t.outcome, "message": t.message} for t in verdict.tests],
        "patch_method": patch_method,
    }


def execute(specs: Sequence[Verification], options: ExecutionOptions) -> int:
    """Run a batch of verifications on a bounded pool, writing rows as they finish
    (every `flush_every`, so a killed batch loses at most that many). Returns how many ran."""
    store = Store(options.store_root)
    backend = backend_class(options.backend)(WorkPaths(options.work_root), trusted=options.trusted, unsafe=options.unsafe)
    pending: list[dict] = []

    def flush() -> None:
        if pending:
            store.append("verifications", pa.Table.from_pylist(pending, schema=SCHEMAS["verifications"]))
            pending.clear()

    environments = Environments(backend)

    def work(spec: Verification) -> dict:
        started = datetime.now(UTC)
        verdict, reason, method = _verify(spec, environments, options)
        log.debug("verified %s %s (repeat %d): %s %s", spec.instance.id, spec.state.name, spec.repeat,
                  verdict.outcome.value, reason or "")
        return _row(spec, verdict, reason, options, backend, started, method)

    done = 0
    try:
        with ThreadPoolExecutor(max_workers=max(1, options.concurrency)) as pool:
            for row in pool.map(work, specs):
                pending.append(row)
                done += 1
                if len(pending) >= options.flush_every:
                    flush()
    finally:
        flush()
        backend.close()
    return done


def stored_keys(store: Store) -> set[str]:
    return set(store.scan("verifications").select("verification_key").collect().to_series().to_list())


def stored_rows(store: Store, keys: Sequence[str]) -> dict[str, dict]:
    """The stored verification rows of `keys` (one per key, whoever wrote it)."""
    frame = (store.scan("verifications").filter(pl.col("verification_key").is_in(list(keys)))
             .unique("verification_key", keep="first").collect())
    return {row["verification_key"]: row for row in frame.iter_rows(named=True)}


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
    reason: QuarantineReason | None  # None: validated
    detail: str

    @property
    def validated(self) -> bool:
        return self.reason is None


def gold_verdict(instance: Instance, rows: Sequence[dict]) -> GoldVerdict:
    """Whether the reference makes the checks' fail-to-pass transition, stably: on every
    repeat the fail-to-pass checks do not pass on buggy, and every check passes on the
    reference, with identical results across repeats."""

    def verdict(reason: QuarantineReason | None, detail: str = "") -> GoldVerdict:
        return GoldVerdict(instance.id, reason, detail)

    ids = check_ids(instance)
    by_state: dict[str, list[dict]] = {}
    for row in sorted(rows, key=lambda r: r["repeat"]):
        by_state.setdefault(row["state"], []).append(row)
    for state in ("buggy", "reference"):
        for row in by_state.get(state, []):
            if row["reason"] == Reason.PATCH_FAILED:
                return verdict(QuarantineReason.REFERENCE_PATCH_FAILED, row["stdout_tail"][-500:])
            if row["reason"] == CandidateReason.CHECKS_PATCH_FAILED:
                return verdict(QuarantineReason.CHECKS_PATCH_FAILED, f"on {state}: {row['stdout_tail'][-500:]}")
            if row["reason"]:
                return verdict(QuarantineReason.UNRESOLVED, f"{row['reason']} on {state} (repeat {row['repeat']})")
    results = {state: [_results(row, ids) for row in by_state.get(state, [])] for state in ("buggy", "reference")}
    for state, runs in results.items():
        if len(runs) < GOLD_REPEATS:
            raise ValueError(f"{instance.id}: {len(runs)} gold runs of {state} stored, {GOLD_REPEATS} expected")
        differ = [i for i in ids if len({run[i] for run in runs}) > 1]
        if differ:
            return verdict(QuarantineReason.UNSTABLE, f"on {state}: {_listed(differ)}")
    before, after = results["buggy"][0], results["reference"][0]
    passing = [i for i in instance.spec.checks.fail_to_pass if before[i] == "passed"]
    if passing:
        return verdict(QuarantineReason.PASSES_BEFORE, _listed(passing))
    failing = [i for i in ids if after[i] != "passed"]
    if failing:
        unread = not by_state["reference"][0]["tests"]
        no_report = " (no test results: the JUnit report is missing or unreadable)" if unread else ""
        return verdict(QuarantineReason.REFERENCE_FAILS, _listed([f"{i} {after[i]}" for i in failing]) + no_report)
    return verdict(None)


@dataclass(frozen=True)
class Label:
    label: str | None  # valid | invalid; None when the verification did not settle it
    reason: CandidateReason | None
    failed_checks: tuple[str, ...]


def label_of(instance: Instance, row: dict) -> Label:
    """SWE-bench's resolved rule: valid iff every fail-to-pass and pass-to-pass check
    passed; a check that did not run (`missing`) counts as not passed, so a candidate that
    breaks the runner's JUnit output is invalid, not a crash. A patch that applies under
    no method (git apply, patch --fuzz) is unlabelled ("unlabelled: patch does not apply",
    reason `patch_failed`, kept out of panels): the checks never ran on it, so nothing says
    it is wrong — SWE-bench counts its own patches that way as unresolved executions, not
    as incorrect fixes. Any other unresolved run leaves the candidate unlabelled too, with
    its reason."""
    ids = check_ids(instance)
    if row["reason"]:
        return Label(None, CandidateReason(row["reason"]), ())
    results = _results(row, ids)
    failed = tuple(i for i in ids if results[i] != "passed")
    return Label("invalid" if failed else "valid", None, failed)


def apply_labels(candidates: Sequence[CandidatePatch],
                 labels: Mapping[tuple[str, str], Label]) -> list[CandidatePatch]:
    """Set the labels found for (instance id, candidate id); an exact duplicate takes the
    label of the candidate it duplicates (it was not run: same patch, same label)."""
    out = []
    for cand in candidates:
        found = labels.get((cand.instance_id, cand.candidate_id))
        if found is not None:
            cand = replace(cand, label=found.label, reason=found.reason, failed_checks=found.failed_checks)
        out.append(cand)
    kept = {(c.instance_id, c.candidate_id): c for c in out}
    return [
        replace(c, label=kept[(c.instance_id, c.duplicate_of)].label,
                failed_checks=kept[(c.instance_id, c.duplicate_of)].failed_checks)
        if c.reason is CandidateReason.DUPLICATE and c.duplicate_of else c
        for c in out
    ]
