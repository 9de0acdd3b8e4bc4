"""Writes into, reads from and walks a tree that untrusted content shaped, without ever
following a link.

The harness runs as root outside every sandbox, and the trees it writes into hold what
patches, programs and suites made: a link `tests -> /etc` there must not turn "restore
tests/test_x.py" into "write /etc/test_x.py". Each path is walked one component at a time
through directory descriptors opened with O_NOFOLLOW, so a link anywhere on the way (or a
file where a folder is needed) stops the write with `UnsafeTarget` instead of redirecting
it; the caller decides what that means for its run. Reads and walks (what a run left
behind) report a link as a link and never read through one.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

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


def open_file(root: Path, parts: Sequence[str]) -> BinaryIO | None:
    """The regular file `root/parts` open for reading, or None when it is absent, not a
    regular file, or reached only through a link. The caller closes it."""
    try:
        fd = _parent(root, parts, create=False)
    except (UnsafeTarget, OSError):
        return None
    try:
        return _open_regular(parts[-1], fd)
    finally:
        os.close(fd)


def read_file(root: Path, parts: Sequence[str], limit: int) -> bytes | None:
    """At most `limit` bytes of the regular file `root/parts`, or None when it is absent,
    not a regular file, or reached only through a link."""
    fh = open_file(root, parts)
    if fh is None:
        return None
    with fh:
        return fh.read(limit)


def _open_regular(name: str, dir_fd: int) -> BinaryIO | None:
    """`name` in the folder `dir_fd` if it is a regular file itself (O_NONBLOCK: a FIFO
    planted there must not block the harness)."""
    try:
        target = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return None
    fh = os.fdopen(target, "rb")
    if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
        fh.close()
        return None
    return fh


@dataclass(frozen=True)
class TreeEntry:
    """One entry of a tree walked by `walk_tree`. `open` is valid only until the walk moves
    on (it opens relative to the descriptor of the entry's folder)."""

    parts: tuple[str, ...]
    kind: str  # "file", "link" or "other" (a FIFO, a socket, a device, a folder past MAX_WALK_DEPTH)
    size: int
    executable: bool
    link_target: str
    open: Callable[[], BinaryIO | None]


#: how deep `walk_tree` enters a tree a run shaped: 6,000 nested folders would otherwise
#: exhaust Python's recursion (and a descriptor each); a folder past it is one "other" entry
MAX_WALK_DEPTH = 64


def walk_tree(root: Path, skip_folder: Callable[[str], bool]) -> Iterator[TreeEntry]:
    """Every entry under `root` but folders, in name order, reached through directory
    descriptors opened with O_NOFOLLOW: a link is reported as a link and never entered or
    read through. Folders named so that `skip_folder(name)` holds are not entered, nor
    folders deeper than MAX_WALK_DEPTH (reported as "other", which readers skip)."""
    fd = os.open(root, _DIR)
    try:
        yield from _walk(fd, (), skip_folder)
    finally:
        os.close(fd)


def _walk(fd: int, prefix: tuple[str, ...], skip_folder: Callable[[str], bool]) -> Iterator[TreeEntry]:
    with os.scandir(fd) as found:
        names = sorted(entry.name for entry in found)
    for name in names:
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            continue
        parts = (*prefix, name)
        if stat.S_ISDIR(st.st_mode):
            if skip_folder(name):
                continue
            if len(parts) > MAX_WALK_DEPTH:
                yield TreeEntry(parts, "other", 0, False, "", lambda: None)
                continue
            try:
                child = os.open(name, _DIR, dir_fd=fd)
            except OSError:  # swapped for a link since the stat: not entered
                continue
            try:
                yield from _walk(child, parts, skip_folder)
            finally:
                os.close(child)
        elif stat.S_ISLNK(st.st_mode):
            yield TreeEntry(parts, "link", 0, False, os.readlink(name, dir_fd=fd), lambda: None)
        elif stat.S_ISREG(st.st_mode):
            yield TreeEntry(parts, "file", st.st_size, bool(st.st_mode & 0o100), "",
                            lambda name=name: _open_regular(name, fd))
        else:
            yield TreeEntry(parts, "other", 0, False, "", lambda: None)
