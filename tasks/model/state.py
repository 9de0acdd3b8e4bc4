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

A patch is untrusted, and applying it runs as root outside every sandbox, so what it may
write is bounded and checked three times: before (the paths its headers name, C-quoted
names decoded as the tools decode them, and the bytes its git binary hunks declare, at most
PATCH_OUTPUT_MAX_BYTES), during (each tool runs under RLIMIT_FSIZE of that size; GNU
patch's dry run must name only safe paths) and after (no entry under a `.git` folder was
added or changed). Past any of them the patch does not apply (`patch_failed`), and a state
tree whose patch failed is removed whole.
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
from testprism.tasks.model.patch_fuzz import DEFAULT_FUZZ
from testprism.tasks.model.removal import remove_tree
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
#: what one patch may write: its binary hunks' declared output in all, and any one file
#: (RLIMIT_FSIZE on git and patch). A 0.7 MB git binary patch once wrote a 560 MiB file
#: into the work area, copied again into every run's workspace.
PATCH_OUTPUT_MAX_BYTES = 64 * 1024 * 1024


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


def _refusal(patch: bytes) -> str | None:
    """Why a patch may not be applied at all, or None. It may not name a `.git` path, an
    absolute one or `..` (git apply refuses those; GNU patch would write them), read as
    unidiff reads it and as the tools do (C-quoted names decoded: unidiff reads
    `"b/\\056git/config"` literally, GNU patch writes `.git/config`); text the diff reader
    cannot read names nothing it could check, so it is refused too. Nor may its git binary
    hunks declare more than PATCH_OUTPUT_MAX_BYTES."""
    try:
        names = patches.touched_files(patches.parse(patch))
    except UnidiffParseError:
        return "the patch cannot be read as a unified diff"
    unsafe = sorted(name for name in names | patches.header_paths(patch)
                    if ".git" in PurePosixPath(name).parts or patches.unsafe_path(name))
    if unsafe:
        return f"the patch touches a .git path, an absolute path or '..', which no patch may: {unsafe[0]!r}"
    declared = patches.binary_output_bytes(patch)
    if declared > PATCH_OUTPUT_MAX_BYTES:
        return f"the patch's binary hunks would write {declared} bytes, over the bound of {PATCH_OUTPUT_MAX_BYTES}"
    return None


def _git_entries(tree: Path) -> dict[str, tuple[int, ...]]:
    """Every entry at or under a `.git` folder of `tree` (any letter case) with what a
    write changes (inode, mode, size, modification and change times), found without
    following links and without recursion."""
    found: dict[str, tuple[int, ...]] = {}
    pending = [(str(tree), False)]
    while pending:
        folder, inside = pending.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                under = inside or entry.name.lower().rstrip(". ") == ".git"
                if under:
                    info = entry.stat(follow_symlinks=False)
                    found[entry.path] = (info.st_ino, info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
                if entry.is_dir(follow_symlinks=False):
                    pending.append((entry.path, under))
    return found


def _unsafe_checked(output: bytes) -> list[str]:
    """The paths GNU patch's dry run says it would write (`checking file "..."`, C-quoted
    under QUOTING_STYLE=c) that are absolute, climb out or lie in a `.git` folder."""
    names = []
    for line in output.splitlines():
        if line.startswith(b"checking file "):
            rest = line[len(b"checking file "):]
            while b'"' in rest:
                name, rest = patches.c_unquote(rest[rest.index(b'"'):])
                names.append(name.decode("utf-8", "surrogateescape"))
    return [name for name in names if patches.unsafe_path(name)]


def _run(argv: list[str], tree: Path, patch: bytes, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """`argv` in `tree` under RLIMIT_FSIZE (prlimit: no Python runs in the forked child),
    with GNU patch's names C-quoted; past APPLY_TIMEOUT_S it counts as failed."""
    bound = ["prlimit", f"--fsize={PATCH_OUTPUT_MAX_BYTES}", "--"]
    env = {**(env if env is not None else os.environ), "QUOTING_STYLE": "c"}
    try:
        return subprocess.run(bound + argv, cwd=tree, input=patch, capture_output=True, env=env,
                              timeout=APPLY_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(argv, 124, b"", f"{argv[0]} took over {APPLY_TIMEOUT_S} s\n".encode())


def apply_patch(tree: Path, patch: bytes, fuzz: int = DEFAULT_FUZZ) -> PatchResult:
    """Apply with `git apply`, then `patch -p1 --fuzz` (SWE-bench's order, with `--forward`:
    `--batch` alone would take an already applied patch for a reversed one and revert it);
    leave the tree untouched when neither applies (patch is tried dry first: no half-applied
    tree). A patch that names `.git`, whose binary hunks write too much, or after which an
    entry under a `.git` folder changed, applies under no method (module docstring)."""
    refused = _refusal(patch)
    if refused is not None:
        return PatchResult(False, "none", refused)
    before = _git_entries(tree)
    result = _apply(tree, patch, fuzz)
    if result.applied and _git_entries(tree) != before:
        return PatchResult(False, "none", f"applying the patch ({result.method}) wrote under a .git folder")
    return result


def _apply(tree: Path, patch: bytes, fuzz: int) -> PatchResult:
    """git apply, else GNU patch (dry run first, whose named files must all be safe)."""
    env = {**_git_env(tree), "GIT_DIR": str(_empty_repository()), "GIT_WORK_TREE": str(tree)}
    git = _run(["git", "-c", f"core.attributesFile={os.devnull}", "-c", "core.hooksPath=" + os.devnull,
                "apply", "--whitespace=nowarn", "-p1", "-"], tree, patch, env)
    if git.returncode == 0:
        return PatchResult(True, "git apply", "")
    args = ["patch", "-p1", "--batch", "--forward", "--no-backup-if-mismatch", f"--fuzz={fuzz}"]
    dry = _run([*args, "--dry-run"], tree, patch)
    unsafe = _unsafe_checked(dry.stdout)
    if unsafe:
        return PatchResult(False, "none", f"patch would write {unsafe[0]!r}, which no patch may")
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
        if not result.applied:
            remove_tree(tree)  # nothing a failed patch left (a link, a half-written file) is kept
        (target / "patch.json").write_text(json.dumps(result.__dict__))

    folder = build_once(work.state(instance.id, tree_key(state, fuzz)), build)
    return StateTree(folder / "tree", PatchResult(**json.loads((folder / "patch.json").read_text())))
