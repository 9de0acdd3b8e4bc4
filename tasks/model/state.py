"""States: what a suite runs on (`buggy`, `reference`, `candidate:<id>`), materialised once.

A state's tree is the buggy program with the state's patch applied. It is built once per
work area and copied into a fresh workspace for every run, so a patch is applied once per
state, not once per run.

The panel is hidden: nothing in a tree tells which state it is but its content. Patching
leaves fresh times on the files it touches; the workspace fill sets every time to one
constant (tasks/sandbox/workspace.py), which is where a run first sees a tree.

Patches apply as SWE-bench applies them (`git apply`, then `patch --batch --fuzz=5 -p1`),
one procedure for references, candidates, checks and suites alike; the method that worked
is kept with the tree and written into the rows. Neither tool writes through a symbolic
link (git: "beyond a symbolic link"; GNU patch: "Invalid file name"), so a patch cannot
make the harness write outside its tree.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path, PurePosixPath

from unidiff.errors import UnidiffParseError

from testprism.tasks.model import patches
from testprism.tasks.model.benchmark import Instance
from testprism.tasks.model.hashing import digest
from testprism.tasks.model.workdir import WorkPaths, build_once


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

    build = instance.spec.build
    # A built tree is another tree: the build's command and environment are part of the state.
    built = () if build is None else ("build", build.command, instance.spec.environment.key)

    def make(kind: str, patch: bytes | None, cid: str | None = None, label: str | None = None) -> State:
        return State(instance.id, kind, cid, label, patch, digest("state", instance.program_hash, patch or b"", *built))

    return [make("buggy", None), make("reference", instance.reference)] + [
        make("candidate", c.patch, c.id, c.label) for c in instance.candidates
    ]


#: SWE-bench's fallback fuzz (`patch --batch --fuzz=5 -p1`); a policy field, so configurable.
DEFAULT_FUZZ = 5


@dataclass(frozen=True)
class PatchResult:
    applied: bool
    method: str  # "git apply" | "patch --fuzz=N" | "none" (no patch, or it did not apply)
    message: str

    @classmethod
    def unpatched(cls) -> PatchResult:
        return cls(True, "none", "")


#: how long one `git apply` or `patch` may take: a patch that keeps `patch --fuzz` searching
#: longer is one that does not apply, not a reason to stop the replay
APPLY_TIMEOUT_S = 120


@cache
def _empty_repository() -> Path:
    """A bare repository of the harness's own, empty, for `git apply` to run in. A tree's
    own `.git` (a program's, or one a patch planted with the `patch` fallback) must never be
    git's repository: its config can name filters and hooks that git runs, as root."""
    folder = Path(tempfile.mkdtemp(prefix="testprism-git-"))
    subprocess.run(["git", "init", "--bare", "--quiet", str(folder)], check=True, capture_output=True,
                   env=_git_env(folder), timeout=APPLY_TIMEOUT_S)
    atexit.register(shutil.rmtree, folder, True)
    return folder


def _git_env(tree: Path) -> dict[str, str]:
    """Git sees our empty repository and `tree` as its work tree, and no configuration but
    that repository's: not the tree's `.git`, not an enclosing repository (which would
    resolve paths against its own top level and silently skip ours), not the host's."""
    return {**os.environ, "GIT_CEILING_DIRECTORIES": str(tree.parent), "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0"}


def _touches_git(patch: bytes) -> bool:
    """Whether the patch names a `.git` path component (git apply refuses those; GNU patch
    would write them). Text the diff reader cannot read names nothing it could check, so it
    counts as touching."""
    try:
        names = patches.touched_files(patches.parse(patch))
    except UnidiffParseError:
        return True
    return any(".git" in PurePosixPath(name).parts for name in names)


def _run(argv: list[str], tree: Path, patch: bytes, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(argv, cwd=tree, input=patch, capture_output=True, env=env, timeout=APPLY_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(argv, 124, b"", f"{argv[0]} took over {APPLY_TIMEOUT_S} s\n".encode())


def apply_patch(tree: Path, patch: bytes, fuzz: int = DEFAULT_FUZZ) -> PatchResult:
    """Apply with `git apply`, then `patch -p1 --fuzz` (SWE-bench's order, with `--forward`:
    `--batch` alone would take an already applied patch for a reversed one and revert it);
    leave the tree untouched when neither applies (patch is tried dry first: no half-applied
    tree). A patch that names `.git` applies under no method."""
    if _touches_git(patch):
        return PatchResult(False, "none", "the patch touches a .git path, which no patch may")
    env = {**_git_env(tree), "GIT_DIR": str(_empty_repository()), "GIT_WORK_TREE": str(tree)}
    git = _run(["git", "-c", f"core.attributesFile={os.devnull}", "-c", "core.hooksPath=" + os.devnull,
                "apply", "--whitespace=nowarn", "-p1", "-"], tree, patch, env)
    if git.returncode == 0:
        return PatchResult(True, "git apply", "")
    args = ["patch", "-p1", "--batch", "--forward", "--no-backup-if-mismatch", f"--fuzz={fuzz}"]
    dry = _run([*args, "--dry-run"], tree, patch)
    if dry.returncode == 0:
        real = _run(args, tree, patch)
        if real.returncode == 0:
            return PatchResult(True, f"patch --fuzz={fuzz}", "")
    message = (git.stderr + dry.stdout + dry.stderr).decode(errors="replace")[-2000:]
    return PatchResult(False, "none", message)


@dataclass(frozen=True)
class StateTree:
    """A materialised state: its tree, or why it could not be built."""

    tree: Path
    patch: PatchResult


def tree_key(state: State, fuzz: int) -> str:
    """The work-area key of a state's tree: its content, and how its patch is applied."""
    return state.hash if state.patch is None else digest("tree", state.hash, f"fuzz={fuzz}")


def materialise(instance: Instance, state: State, work: WorkPaths, fuzz: int = DEFAULT_FUZZ) -> StateTree:
    """Build (once) the tree of a state in the work area."""

    def build(target: Path) -> None:
        tree = target / "tree"
        shutil.copytree(instance.program, tree, symlinks=True)
        result = apply_patch(tree, state.patch, fuzz) if state.patch else PatchResult.unpatched()
        (target / "patch.json").write_text(json.dumps(result.__dict__))

    folder = build_once(work.state(instance.id, tree_key(state, fuzz)), build)
    return StateTree(folder / "tree", PatchResult(**json.loads((folder / "patch.json").read_text())))
