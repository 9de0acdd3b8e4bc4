"""The working area: built environments, materialised states and run workspaces.

Kept apart from the store (which users read) because it is a cache: deleting it costs time,
never results. Several processes share it, so anything built there is built once under a
file lock and marked ready only when whole.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


def default_work_root() -> Path:
    """`$TESTPRISM_WORK`, else a per-user folder in /var/tmp (not /tmp: often a small tmpfs)."""
    env = os.environ.get("TESTPRISM_WORK")
    if env:
        return Path(env)
    base = Path("/var/tmp") if Path("/var/tmp").is_dir() else Path("/tmp")
    return base / f"testprism-{os.geteuid()}"


@dataclass(frozen=True)
class WorkPaths:
    root: Path

    def environment(self, key: str) -> Path:
        return self.root / "envs" / key

    def state(self, instance_id: str, state_hash: str) -> Path:
        return self.root / "states" / instance_id / state_hash

    @property
    def workspaces(self) -> Path:
        return self.root / "runs"

    def ensure(self) -> None:
        """Create the root traversable by others: a sandbox may run as an unprivileged uid."""
        for path in (self.root, self.root / "envs", self.root / "states", self.workspaces):
            path.mkdir(parents=True, exist_ok=True)
            path.chmod(0o755)


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
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        build(target)
        ready.touch()
    return target
