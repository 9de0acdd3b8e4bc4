"""States: what a suite runs on (`buggy`, `reference`, `candidate:<id>`), materialised once.

A state's tree is the buggy program with the state's patch applied. It is built once per
work area and copied into a fresh workspace for every run, so a patch is applied once per
state, not once per run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from testprism.tasks.benchmark import Instance
from testprism.tasks.hashing import digest
from testprism.tasks.workdir import WorkPaths, build_once


@dataclass(frozen=True)
class State:
    instance_id: str
    kind: str  # buggy | reference | candidate
    candidate_id: str | None
    label: str | None
    patch: bytes | None
    hash: str

    @property
    def name(self) -> str:
        return f"candidate:{self.candidate_id}" if self.kind == "candidate" else self.kind


def states_of(instance: Instance) -> list[State]:
    """Buggy, reference and every candidate of an instance, with their content hashes."""

    def make(kind: str, patch: bytes | None, cid: str | None = None, label: str | None = None) -> State:
        return State(instance.id, kind, cid, label, patch, digest("state", instance.program_hash, patch or b""))

    return [make("buggy", None), make("reference", instance.reference)] + [
        make("candidate", c.patch, c.id, c.label) for c in instance.candidates
    ]


@dataclass(frozen=True)
class PatchResult:
    applied: bool
    method: str  # git-apply | patch | none
    message: str


def _git_env(tree: Path) -> dict[str, str]:
    # Stop git from discovering an enclosing repository: inside one, `git apply` resolves
    # paths against that repository's top level and silently skips ours.
    return {**os.environ, "GIT_CEILING_DIRECTORIES": str(tree.parent)}


def apply_patch(tree: Path, patch: bytes, fuzz: int = 0) -> PatchResult:
    """Apply with `git apply`, then `patch -p1` (optionally fuzzy); leave the tree untouched
    when neither applies cleanly."""
    git = subprocess.run(
        ["git", "apply", "--whitespace=nowarn", "-p1", "-"],
        cwd=tree, input=patch, capture_output=True, env=_git_env(tree), timeout=120,
    )
    if git.returncode == 0:
        return PatchResult(True, "git-apply", "")
    args = ["patch", "-p1", "--batch", "--forward", "--no-backup-if-mismatch", f"--fuzz={fuzz}"]
    dry = subprocess.run([*args, "--dry-run"], cwd=tree, input=patch, capture_output=True, timeout=120)
    if dry.returncode == 0:
        real = subprocess.run(args, cwd=tree, input=patch, capture_output=True, timeout=120)
        if real.returncode == 0:
            return PatchResult(True, "patch", "")
    message = (git.stderr + dry.stdout + dry.stderr).decode(errors="replace")[-2000:]
    return PatchResult(False, "none", message)


@dataclass(frozen=True)
class StateTree:
    """A materialised state: its tree, or why it could not be built."""

    tree: Path
    patch: PatchResult


def materialise(instance: Instance, state: State, work: WorkPaths) -> StateTree:
    """Build (once) the tree of a state in the work area."""

    def build(target: Path) -> None:
        tree = target / "tree"
        shutil.copytree(instance.program, tree, symlinks=True)
        result = apply_patch(tree, state.patch) if state.patch else PatchResult(True, "none", "")
        (target / "patch.json").write_text(json.dumps(result.__dict__))

    folder = build_once(work.state(instance.id, state.hash), build)
    return StateTree(folder / "tree", PatchResult(**json.loads((folder / "patch.json").read_text())))
