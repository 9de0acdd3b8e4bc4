"""Verification: run an instance's official checks on a state.

A verification runs `checks.command` on the *checked tree* of a state: the program with
the state's patch applied, the files the checks patch touches restored to the program's
version (SWE-bench checks out the test files before applying its test patch, so a
candidate's own edits to them cannot break or fake the official tests), and so is every
piece of test infrastructure the state's patch changed (a `conftest.py` hook, a runner's
configuration: tasks/execution/infrastructure.py), then the checks patch. It is keyed by content (state hash, checks hash, environment hash, execution
policy, repeat), stored in the `verifications` dataset, and never run twice. The batch
executor (tasks/execution/batch.py) runs it; what its rows mean is tasks/collect/label.py's.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

import polars as pl
from unidiff.errors import UnidiffParseError

from testprism.storage import Store
from testprism.tasks.model import patches
from testprism.tasks.model.benchmark import Candidate, Instance, run_limits
from testprism.tasks.model.hashing import digest
from testprism.tasks.sandbox.nofollow import UnsafeTarget, remove_entry, write_file
from testprism.tasks.model.outcome import Reason, Verdict
from testprism.tasks.execution import batch, infrastructure
from testprism.tasks.execution.batch import Environments, ExecutionOptions, Job
from testprism.tasks.execution.build import built_tree, unbound_image
from testprism.tasks.sandbox.base import Limits, Mount, RunRequest, SandboxBackend
from testprism.tasks.model.patch_fuzz import DEFAULT_FUZZ
from testprism.tasks.model.state import PatchResult, State, apply_patch, states_of
from testprism.tasks.execution.reward import LOGS_AT, TESTS_AT, read_reward, verifier_command
from testprism.tasks.execution.verdict import RunResult, failed
from testprism.tasks.model.workdir import WorkPaths, build_once

log = logging.getLogger(__name__)


def check_ids(instance: Instance) -> tuple[str, ...]:
    """Every official check id: fail-to-pass, then pass-to-pass."""
    return instance.spec.checks.fail_to_pass + instance.spec.checks.pass_to_pass


def checks_hash(instance: Instance) -> str:
    """What the checks are: the test patch, the command, and the ids that decide (and,
    for a verifier's reward, the folder placed at /tests and the reward file it declares;
    for a log parser, its name: the same log read by another parser is other results).
    Parts added only when set, so the keys of JUnit checks (and of rewards without a
    declared format) stay as they were."""
    checks = instance.spec.checks
    reward = ("reward", checks.reward.tests) if checks.reward is not None else ()
    if checks.reward is not None and checks.reward.format is not None:
        reward += ("format", checks.reward.format)
    parser = ("parser", checks.parser) if checks.parser is not None else ()
    return digest("checks", instance.checks_patch, checks.command, *checks.fail_to_pass, "|", *checks.pass_to_pass,
                  *reward, *parser)


def real_folder(tree: Path, rel: str) -> Path | None:
    """`tree/rel` when each of its components is a folder, not a link (lstat'ed), else None."""
    path = tree
    for part in rel.split("/"):
        path = path / part
        try:
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                return None
        except FileNotFoundError:
            return None
    return path


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
    base = (checks_hash(instance), instance.spec.environment.key, options.policy_hash, infrastructure.rules().key)
    if instance.spec.limits is not None:  # the instance's own limits: keys of others unchanged
        base += (run_limits(instance, options.limits).key,)
    return [
        Verification(digest("verification", state.hash, *base, str(repeat)), instance, state, repeat)
        for state in states for repeat in range(repeats)
    ]


@dataclass(frozen=True)
class CheckedTree:
    """A state's tree with the checks patch over it, or which patch did not apply."""

    tree: Path
    patch: PatchResult  # the state's own patch
    checks: PatchResult | None  # None when the state's patch failed first
    #: the test infrastructure the state's patch changed, put back as the program has it
    #: (tasks/execution/infrastructure.py) before the checks patch
    restored: tuple[str, ...] = ()


def _checks_files(instance: Instance) -> set[str]:
    return patches.touched_files(patches.parse(instance.checks_patch))


def _touched(patch: bytes) -> set[str]:
    """The paths a state's patch names (its headers', where unidiff cannot read it)."""
    try:
        return patches.touched_files(patches.parse(patch))
    except UnidiffParseError:
        return {rel for name in patches.header_paths(patch) if (rel := patches.relative_path(name)) is not None}


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
        restored: list[str] = []
        if own.applied:
            try:
                if state.patch:
                    restored = infrastructure.to_restore(instance.program, tree, _touched(state.patch))
                _restore(instance, tree, _checks_files(instance) | set(restored))
                checks = apply_patch(tree, instance.checks_patch, fuzz)
            except UnsafeTarget as exc:
                checks = PatchResult(False, "none", f"the official test files cannot be restored: {exc}")
        (target / "patch.json").write_text(json.dumps({"patch": own.__dict__, "checks": checks and checks.__dict__,
                                                       "restored": restored}))

    # The fuzz is in the key whatever the state: the checks patch is applied with it too.
    folder = build_once(work.state(instance.id, digest("checked", state.hash, f"fuzz={fuzz}", checks_hash(instance),
                                                       infrastructure.rules().key)), build)
    record = json.loads((folder / "patch.json").read_text())
    checks = PatchResult(**record["checks"]) if record["checks"] else None
    return CheckedTree(folder / "tree", PatchResult(**record["patch"]), checks, tuple(record["restored"]))


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


class VerifyJob(Job[Verification, RunResult]):
    """The official checks on one state's checked tree (tasks/execution/batch.py runs it)."""

    dataset = "verifications"

    def content_key(self, unit: Verification) -> str:
        return unit.key

    def attempt(self, unit: Verification, environments: Environments, options: ExecutionOptions) -> RunResult:
        missing = unbound_image(unit.instance, environments)
        if missing is not None:
            return RunResult(missing, "none")
        built = checked_tree(unit.instance, unit.state, options.work, options.policy.patch_fuzz)
        method = built.patch.method
        if not built.patch.applied:
            return RunResult(failed(Reason.PATCH_FAILED, built.patch.message), method)
        assert built.checks is not None
        if not built.checks.applied:
            return RunResult(failed(Reason.CHECKS_PATCH_FAILED, built.checks.message), method, built.restored)
        tree = built.tree
        if unit.instance.spec.build is not None:
            made = built_tree(unit.instance, tree, environments, options.work, options.limits)
            if isinstance(made, Verdict):
                return RunResult(made, method, built.restored)
            tree = made
        checks = unit.instance.spec.checks
        # an environment that cannot be had is infrastructure or a failed build: not a verdict on the state
        limits = run_limits(unit.instance, options.limits)
        if checks.reward is not None:
            verdict = self._rewarded(unit, tree, environments, options, limits)
        else:
            verdict = environments.judged(unit.instance.spec.environment, options, check_ids(unit.instance),
                                          lambda environment: RunRequest(
                tree=tree, suite_folder=None, suite_files=(), command=checks.command,
                environment=environment, limits=limits, patch_fuzz=options.policy.patch_fuzz,
            ), parser=checks.parser)
        log.debug("verified %s %s (repeat %d): %s %s", unit.instance.id, unit.state.name, unit.repeat,
                  verdict.outcome.value, verdict.reason or "")
        return RunResult(verdict, method, built.restored)

    @staticmethod
    def _rewarded(unit: Verification, tree: Path, environments: Environments, options: ExecutionOptions,
                  limits: Limits) -> Verdict:
        """The checks as a verifier whose reward decides (`[checks.reward]`, tasks/execution/reward.py)."""
        reward = unit.instance.spec.checks.reward
        assert reward is not None
        tests = real_folder(tree, reward.tests)
        if tests is None:  # the state's patch made it a link or a file: never bound (a bind follows links)
            return failed(Reason.CHECKS_PATCH_FAILED, f"{reward.tests} of the checked tree is a link or not a folder: "
                                                      f"not placed at {TESTS_AT}")
        return environments.judged(unit.instance.spec.environment, options, check_ids(unit.instance),
                                   lambda environment: RunRequest(
            tree=tree, suite_folder=None, suite_files=(), environment=environment, limits=limits,
            command=verifier_command(unit.instance.spec.checks.command), patch_fuzz=options.policy.patch_fuzz,
            mounts=(Mount(TESTS_AT, tests), Mount(LOGS_AT)),
        ), read=lambda result: read_reward(result.junit_xml, reward))

    def row(self, unit: Verification, result: RunResult, started: datetime, backend: SandboxBackend) -> dict:
        """One `verifications` row (storage/schema.py VERIFICATIONS)."""
        verdict = result.verdict
        return {
            "verification_key": unit.key,
            "instance_id": unit.instance.id,
            "state": unit.state.kind,
            "candidate_id": unit.state.candidate_id,
            "repeat": unit.repeat,
            "state_hash": unit.state.hash,
            "checks_hash": checks_hash(unit.instance),
            "environment_hash": unit.instance.spec.environment.key,
            "policy_hash": self.options.policy_hash,
            "outcome": verdict.outcome.value,
            "reason": verdict.reason.value if verdict.reason else None,
            "exit_code": verdict.exit_code,
            "duration_s": round(verdict.duration_s, 4),
            "attempts": verdict.attempts,
            "stdout_tail": verdict.output_tail,
            "started_at": started,
            "backend": backend.name,
            "isolation": backend.isolation,
            "tests": [{"name": t.name, "outcome": t.outcome, "message": t.message} for t in verdict.tests],
            "patch_method": result.patch_method,
            "restored": list(result.restored),
        }


def execute(specs: Sequence[Verification], options: ExecutionOptions) -> int:
    """Run a batch of verifications (tasks/execution/batch.py); returns how many rows it
    wrote (verifications with one key, e.g. the same buggy program and checks under two
    instance ids, run once and leave a row each)."""
    summary = batch.execute(VerifyJob(options), specs, options)
    return summary.executed + summary.reused


def stored_keys(store: Store) -> set[str]:
    return set(store.scan("verifications").select("verification_key").collect().to_series().to_list())


def stored_rows(store: Store, keys: Sequence[str]) -> dict[str, dict]:
    """The stored verification rows of `keys` (one per key, whoever wrote it)."""
    frame = (store.scan("verifications").filter(pl.col("verification_key").is_in(list(keys)))
             .unique("verification_key", keep="first").collect())
    return {row["verification_key"]: row for row in frame.iter_rows(named=True)}
