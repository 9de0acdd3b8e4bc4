"""The working area: built environments, materialised states and run workspaces.

Kept apart from the store (which users read) because it is a cache: deleting it costs time,
never results. Several processes share it, so anything built there is built once under a
file lock and marked ready only when whole.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from testprism.storage.owner import alive, process_tag
from testprism.tasks.model.removal import remove_tree


def default_work_root() -> Path:
    """`$TESTPRISM_WORK`, else a per-user folder in /var/tmp (not /tmp: often a small tmpfs)."""
    env = os.environ.get("TESTPRISM_WORK")
    if env:
        return Path(env)
    base = Path("/var/tmp") if Path("/var/tmp").is_dir() else Path("/tmp")
    return base / f"testprism-{os.geteuid()}"


def _workspaces_setting() -> Path | None:
    env = os.environ.get("TESTPRISM_WORKSPACES")
    return Path(env) if env else None


@dataclass(frozen=True)
class WorkPaths:
    root: Path
    #: where run workspaces go, when not the work area's runs/: `$TESTPRISM_WORKSPACES`. A
    #: workspace lives for one run and every run copies its state's tree into one, so a
    #: tmpfs (/dev/shm) makes that copy a memory copy: 0.06 s against 0.45-1.0 s for a Go
    #: tree of 600 entries on this machine's disk (docs/performance.md)
    runs_root: Path | None = field(default_factory=_workspaces_setting)

    def __post_init__(self) -> None:
        """Absolute paths: the sandbox binds the environment and workspace folders by path,
        from another working directory (`--work work` once failed every run that way)."""
        object.__setattr__(self, "root", Path(self.root).absolute())
        if self.runs_root is not None:
            object.__setattr__(self, "runs_root", Path(self.runs_root).absolute())

    def environment(self, key: str) -> Path:
        return self.root / "envs" / key

    def state(self, instance_id: str, state_hash: str) -> Path:
        return self.root / "states" / instance_id / state_hash

    def part(self, key: str) -> Path:
        """A benchmark part a batch brought (tasks/execution/parcel.py), by content key."""
        return self.root / "parts" / key

    @property
    def workspaces(self) -> Path:
        return self.runs_root if self.runs_root is not None else self.root / "runs"

    def ensure(self) -> None:
        """Create the root traversable by others: a sandbox may run as an unprivileged uid.
        A workspaces folder of the user's choosing may sit in a world-writable place
        (/dev/shm): one that another user made, or a link, is refused rather than used."""
        for path in (self.root, self.root / "envs", self.root / "states", self.workspaces):
            path.mkdir(parents=True, exist_ok=True)
            if path == self.runs_root:
                info = path.lstat()
                if path.is_symlink() or not path.is_dir() or info.st_uid != os.geteuid() or info.st_mode & 0o022:
                    raise WorkspacesUnsafe(f"TESTPRISM_WORKSPACES={path}: not a folder of this user's that only it "
                                           "can write (a link, another user's, or group/world-writable): choose a "
                                           "new path, e.g. /dev/shm/testprism-runs")
            path.chmod(0o755)


class WorkspacesUnsafe(RuntimeError):
    """The configured workspaces folder is not one the harness may write into."""


@contextmanager
def locked(lock_path: Path) -> Iterator[None]:
    """An exclusive lock on a file, across processes (builds shared by Dask workers)."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def workspace_prefix(kind: str) -> str:
    """The name prefix of this process's workspaces of one kind (`run`, `docker`):
    `<kind>-<pid>.<start time>-`, so a sweep can tell a crashed process's from a live one's."""
    return f"{kind}-{process_tag()}-"


def orphaned_workspaces(work: WorkPaths, kind: str) -> list[Path]:
    """Workspaces of `kind` whose process is gone; those of live processes are not listed."""
    if not work.workspaces.is_dir():
        return []
    found = []
    for path in work.workspaces.glob(f"{kind}-*"):
        if not alive(path.name.removeprefix(f"{kind}-").partition("-")[0]):
            found.append(path)
    return found


def build_once(target: Path, build: Callable[[Path], None]) -> Path:
    """Run `build(target)` unless a previous build completed; safe across processes.

    A build killed halfway leaves no `.ready` marker, so the next caller wipes and redoes it.
    """
    ready = target / ".ready"
    if ready.exists():
        return target
    with locked(target.with_name(target.name + ".lock")):
        if ready.exists():
            return target
        if target.exists():  # a killed build's tree: a patch's or a build's output, so untrusted
            remove_tree(target)
        target.mkdir(parents=True)
        build(target)
        ready.touch()
    return target
