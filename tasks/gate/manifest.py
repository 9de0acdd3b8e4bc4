"""The checksum manifest of a benchmark folder: sha256 of every file under it.

Why every file, not only what the loader reads: a program's file, a Dockerfile shared by
instances, or a suite changes what a check run does as much as instance.toml does, and a
release gate vouches for the folder as published (SWE-bench Pro v2 checksums every file).
Symlinks are not followed: a link's manifest entry is the hash of its target's name, so a
link retargeted is a change and a link to outside the folder reads nothing outside it.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from testprism.tasks.model.hashing import digest

#: read in blocks of this many bytes: a program may hold large files
BLOCK = 1 << 20


def _sha256(path: Path) -> str:
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        return "link:" + hashlib.sha256(os.readlink(path).encode()).hexdigest()
    sha = hashlib.sha256()
    # opened without following a link or blocking on a FIFO swapped in since the walk saw a file
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return f"special:{stat.S_IFMT(os.fstat(fh.fileno()).st_mode)}"
        while block := fh.read(BLOCK):
            sha.update(block)
    return sha.hexdigest()


def manifest(root: Path) -> dict[str, str]:
    """{path relative to `root` (POSIX): sha256} of every plain file and link under `root`,
    sorted by path. Other entries (FIFOs, devices, sockets) are listed by kind, never opened."""
    found: dict[str, str] = {}
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs.sort()
        for name in [*files, *(d for d in dirs if os.path.islink(os.path.join(folder, d)))]:
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            mode = os.lstat(path).st_mode
            found[rel] = _sha256(path) if stat.S_ISREG(mode) or stat.S_ISLNK(mode) else f"special:{stat.S_IFMT(mode)}"
    return dict(sorted(found.items()))


def manifest_hash(files: dict[str, str]) -> str:
    """One digest of a whole manifest: equal iff every path and hash is."""
    return digest("manifest", *(f"{path}\0{sha}" for path, sha in sorted(files.items())))


@dataclass(frozen=True)
class Changes:
    """How a folder differs from a stored manifest."""

    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)

    def summary(self, limit: int = 5) -> str:
        """`2 changed (a, b), 1 added (c)`: what differs, the first few of each named."""
        parts = []
        for word, paths in (("changed", self.changed), ("added", self.added), ("removed", self.removed)):
            if paths:
                more = f", and {len(paths) - limit} more" if len(paths) > limit else ""
                parts.append(f"{len(paths)} {word} ({', '.join(paths[:limit])}{more})")
        return ", ".join(parts) or "no change"


def changes(before: dict[str, str], now: dict[str, str]) -> Changes:
    return Changes(
        added=tuple(sorted(set(now) - set(before))),
        removed=tuple(sorted(set(before) - set(now))),
        changed=tuple(sorted(p for p in set(now) & set(before) if now[p] != before[p])),
    )
