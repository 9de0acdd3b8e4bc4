"""Removing a tree that untrusted content shaped: iterative, bounded, never through a link.

What a run leaves in its workspace, what a patch leaves in a state's tree, is the
attacker's: 6,000 nested folders (Python's recursive `shutil.rmtree` raised RecursionError
there, and a path that deep is past PATH_MAX anyway), folders without write or search
permission, files in a sticky or read-only folder that cannot be unlinked until that
folder is chmod'ed, links anywhere. The harness runs as root, so a removal that followed a
link, or climbed out of the tree it was given, would delete the host's files.

`remove_tree` walks down one folder at a time through descriptors opened with O_NOFOLLOW
and holds only the current folder's: the way back up is `..` of that descriptor, checked
to be the very folder (device and inode) it came down from, so a folder moved away during
the walk stops it rather than leading it elsewhere. It never enters another filesystem (a
mount left under the tree), and it removes at most `MAX_ENTRIES` entries. Any real failure
is one exception, `RemovalError`, naming the path: the backends make it that run's
`sandbox_error`.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

#: entries one removal may delete before it gives up (a run's disk is bounded; this bounds
#: the time a tree that keeps growing, or an absurdly wide one, can hold the harness)
MAX_ENTRIES = 5_000_000
#: times a folder is listed again after its subfolders went, should entries reappear
MAX_RELISTS = 3

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class RemovalError(OSError):
    """A tree could not be removed entirely; the message names the entry that stopped it."""


@dataclass
class _Level:
    """One folder on the way down: its descriptor, identity, name in its parent, and the
    subfolders still to remove."""

    fd: int
    ident: tuple[int, int]
    name: str
    pending: list[str] = field(default_factory=list)
    relists: int = 0


def _ident(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def _open_folder(name: str, dir_fd: int) -> int:
    """`name` in `dir_fd` opened as a folder, never through a link; a folder its mode keeps
    the harness out of (no read or search permission) is given 0700 first. The mode is
    changed through an O_PATH descriptor (via /proc/self/fd), so a link swapped in
    meanwhile is not what gets chmod'ed."""
    try:
        return os.open(name, _DIR, dir_fd=dir_fd)
    except PermissionError:
        handle = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
        try:
            os.chmod(f"/proc/self/fd/{handle}", 0o700)
        finally:
            os.close(handle)
        return os.open(name, _DIR, dir_fd=dir_fd)


def _retry_writable(action, dir_fd: int) -> None:
    """Run `action` (an unlink or rmdir in the folder `dir_fd`); when the folder's mode or
    sticky bit refuses it, make the folder 0700 and try once more."""
    try:
        action()
    except PermissionError:
        os.fchmod(dir_fd, 0o700)
        action()


def remove_tree(path: Path | str) -> None:
    """Remove `path` and everything under it, never following a link (a link is removed
    itself, whatever it points to); absent already is fine. Raises RemovalError when
    something stays."""
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise RemovalError(exc.errno or errno.EIO, f"cannot remove {path}: {exc.strerror}") from exc
    try:
        parent = os.open(path.parent, _DIR)
    except OSError as exc:
        raise RemovalError(exc.errno or errno.EIO, f"cannot remove {path}: its folder: {exc.strerror}") from exc
    try:
        if stat.S_ISDIR(st.st_mode):
            _remove_folder(parent, path.name, path)
        else:
            _retry_writable(lambda: os.unlink(path.name, dir_fd=parent), parent)
    except FileNotFoundError:
        pass
    except RemovalError:
        raise
    except OSError as exc:
        raise RemovalError(exc.errno or errno.EIO, f"cannot remove {path}: {exc.strerror or exc}") from exc
    finally:
        os.close(parent)


def _remove_folder(parent: int, name: str, path: Path) -> None:
    """The walk: down into each subfolder in turn, up through `..` once it is empty."""
    fd = _open_folder(name, parent)
    top = _Level(fd, _ident(os.fstat(fd)), name)
    device = top.ident[0]
    levels = [top]
    removed = 0
    try:
        while levels:
            level = levels[-1]
            if not level.pending:
                if level.relists > MAX_RELISTS:
                    raise RemovalError(errno.ENOTEMPTY, f"cannot remove {path}: entries keep appearing in "
                                       f"{_where(path, levels)}")
                level.relists += 1
                removed += _clear_files(level)
                if removed > MAX_ENTRIES:
                    raise RemovalError(errno.EFBIG, f"cannot remove {path}: over {MAX_ENTRIES} entries")
                if level.pending:
                    continue
                # empty: go up and remove it from its parent
                if len(levels) == 1:
                    break
                up = os.open("..", _DIR, dir_fd=level.fd)
                if _ident(os.fstat(up)) != levels[-2].ident:
                    os.close(up)
                    raise RemovalError(errno.EXDEV, f"cannot remove {path}: {_where(path, levels)} was moved "
                                       "during the removal")
                os.close(up)
                os.close(level.fd)
                levels.pop()
                parent_level = levels[-1]
                _retry_writable(lambda: os.rmdir(level.name, dir_fd=parent_level.fd), parent_level.fd)
                removed += 1
                continue
            child = level.pending.pop()
            try:
                child_fd = _open_folder(child, level.fd)
            except FileNotFoundError:
                continue
            ident = _ident(os.fstat(child_fd))
            if ident[0] != device:
                os.close(child_fd)
                raise RemovalError(errno.EXDEV, f"cannot remove {path}: {_where(path, levels)}/{child} is on "
                                   "another filesystem (a mount left under the tree)")
            levels.append(_Level(child_fd, ident, child))
        os.close(top.fd)
        levels.clear()
        _retry_writable(lambda: os.rmdir(name, dir_fd=parent), parent)
    except RemovalError:
        raise
    except OSError as exc:
        raise RemovalError(exc.errno or errno.EIO,
                           f"cannot remove {path}: {_where(path, levels)}: {exc.strerror or exc}") from exc
    finally:
        for level in levels:
            os.close(level.fd)


def _clear_files(level: _Level) -> int:
    """Unlink every entry of the folder but its subfolders, which become `pending`;
    returns how many went."""
    with os.scandir(level.fd) as found:
        names = [entry.name for entry in found]
    removed = 0
    for name in names:
        try:
            st = os.lstat(name, dir_fd=level.fd)
        except FileNotFoundError:
            continue
        if stat.S_ISDIR(st.st_mode):
            level.pending.append(name)
            continue
        try:
            _retry_writable(lambda: os.unlink(name, dir_fd=level.fd), level.fd)
        except FileNotFoundError:
            continue
        removed += 1
    return removed


def _where(path: Path, levels: list[_Level]) -> str:
    """The folder being removed, for messages: its first components below `path` (a tree
    6,000 deep would make a useless message), and how deep it is."""
    names = [level.name for level in levels[1:]]
    shown = "/".join(names[:8]) + ("/..." if len(names) > 8 else "")
    return f"{path}/{shown} (depth {len(names)})" if names else str(path)
