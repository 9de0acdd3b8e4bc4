"""Content hashes: the parts of a run key. Identical work has identical keys, so it is
never run twice."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def digest(*parts: str | bytes) -> str:
    """A short, stable hash of ordered parts (length-prefixed so parts cannot run together)."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()[:32]


def tree_files(root: Path) -> list[Path]:
    """Regular files under root, sorted, skipping VCS metadata and caches."""
    skip = {".git", "__pycache__", ".pytest_cache"}
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in skip)
        found.extend(Path(dirpath) / name for name in sorted(filenames) if not name.endswith(".pyc"))
    return found


def tree_digest(root: Path) -> str:
    """Hash of a tree's relative paths, executable bits and contents. A symbolic link is hashed
    by where it points, never followed: a program may hold a dangling one on purpose (navidrome's
    tests/fixtures/synlink_invalid, SWE-bench Pro), and one pointing out of the tree must not
    make the hash read, or depend on, what is outside it."""
    h = hashlib.sha256()
    for path in tree_files(root):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            h.update(f"{rel}\0l\0".encode())
            h.update(hashlib.sha256(os.readlink(path).encode()).digest())
            continue
        mode = "x" if os.access(path, os.X_OK) else "-"
        h.update(f"{rel}\0{mode}\0".encode())
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()[:32]
