"""Writes into a tree that untrusted content shaped, without ever following a link.

The harness runs as root outside every sandbox, and the trees it writes into hold what
patches, programs and suites made: a link `tests -> /etc` there must not turn "restore
tests/test_x.py" into "write /etc/test_x.py". Each path is walked one component at a time
through directory descriptors opened with O_NOFOLLOW, so a link anywhere on the way (or a
file where a folder is needed) stops the write with `UnsafeTarget` instead of redirecting
it; the caller decides what that means for its run.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafeTarget(Exception):
    """A path the harness would write crosses a link, or a file where a folder is needed."""


def _parent(root: Path, parts: Sequence[str], create: bool) -> int:
    """A descriptor of `root/parts[:-1]`, reached without following links; missing folders
    are created when `create`. The caller closes it."""
    fd = os.open(root, _DIR)
    try:
        for i, part in enumerate(parts[:-1]):
            if create:
                try:
                    os.mkdir(part, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
            try:
                child = os.open(part, _DIR, dir_fd=fd)
            except OSError as exc:  # ELOOP: a link; ENOTDIR: a file; ENOENT: absent
                raise UnsafeTarget(f"{'/'.join(parts[: i + 1])} is a link or not a folder") from exc
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_file(root: Path, parts: Sequence[str], data: bytes, mode: int = 0o644) -> None:
    """Create or replace the regular file `root/parts` with `data`."""
    fd = _parent(root, parts, create=True)
    try:
        try:
            out = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK
                          | os.O_CLOEXEC, mode, dir_fd=fd)
        except OSError as exc:
            raise UnsafeTarget(f"{'/'.join(parts)} is a link, a folder or a special file") from exc
        with os.fdopen(out, "wb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise UnsafeTarget(f"{'/'.join(parts)} is not a regular file")
            os.fchmod(fh.fileno(), mode)
            fh.write(data)
    finally:
        os.close(fd)


def remove_entry(root: Path, parts: Sequence[str]) -> None:
    """Remove the file or link `root/parts` itself, if present (never a link's target)."""
    try:
        fd = _parent(root, parts, create=False)
    except UnsafeTarget:
        if _absent_parent(root, parts):
            return
        raise
    try:
        os.unlink(parts[-1], dir_fd=fd)
    except FileNotFoundError:
        pass
    except IsADirectoryError as exc:
        raise UnsafeTarget(f"{'/'.join(parts)} is a folder") from exc
    finally:
        os.close(fd)


def _absent_parent(root: Path, parts: Sequence[str]) -> bool:
    """Whether the walk stopped only because a folder on the way does not exist."""
    path = root
    for part in parts[:-1]:
        path = path / part
        if path.is_symlink():
            return False
        if not path.exists():
            return True
    return False


def read_file(root: Path, parts: Sequence[str], limit: int) -> bytes | None:
    """At most `limit` bytes of the regular file `root/parts`, or None when it is absent,
    not a regular file, or reached only through a link."""
    try:
        fd = _parent(root, parts, create=False)
    except (UnsafeTarget, OSError):
        return None
    try:
        target = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
    except OSError:
        return None
    finally:
        os.close(fd)
    with os.fdopen(target, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return None
        return fh.read(limit)
