"""Extract a tar stream that an image's content shaped, as root, without trusting it.

An image is someone else's: its tar (a program read out with the engine's `get_archive`,
a root filesystem with `export`) may hold absolute names, `..`, links that later entries
are written through, hard links to files outside it, device nodes and setuid binaries.
Python 3.11.2 (this project's) has no tarfile `data` filter, so the rules are kept here,
one entry at a time as the stream goes by (nothing is buffered whole):

- names: relative, no `..`, every folder on the way reached without following a link
  (tasks/sandbox/nofollow.py), so an entry cannot land outside the target;
- modes: `& 0o755`: setuid, setgid and sticky bits and group/other write are dropped, never
  honoured; owner: whoever extracts (root for the harness), never the archive's ids;
- devices and FIFOs: refused, or skipped where a root filesystem is read (`special="skip"`);
- symbolic links: kept as they are where a root filesystem is read (`/lib -> usr/lib` and
  absolute targets resolve inside the sandbox's root; the harness never follows a link of
  it); elsewhere only relative ones that stay inside the tree;
- hard links: only to a regular file already extracted inside the tree;
- size: the stream is cut past `limit` bytes (UnsafeArchive).
"""

from __future__ import annotations

import io
import os
import posixpath
import stat
import tarfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from testprism.tasks.sandbox.nofollow import UnsafeTarget, _parent

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: what survives of an entry's mode: permission bits without group/other write
KEPT_MODE = 0o755


class UnsafeArchive(ValueError):
    """The archive holds an entry these rules refuse, or is over its bound. Says which."""


@dataclass
class Extracted:
    """What an extraction did beyond copying: for the log and the tests."""

    entries: int = 0
    bytes: int = 0
    #: device nodes and FIFOs left out (special="skip")
    skipped_special: int = 0
    #: entries whose setuid/setgid/sticky bits were dropped
    stripped_modes: int = 0


class ChunkReader(io.RawIOBase):
    """A file over an iterator of byte chunks (the docker SDK's streams), which raises
    UnsafeArchive once more than `limit` bytes came through."""

    def __init__(self, chunks: Iterable[bytes], limit: int) -> None:
        self._chunks: Iterator[bytes] = iter(chunks)
        self._pending = b""
        self.limit, self.count = limit, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self._pending:
            try:
                self._pending = next(self._chunks)
            except StopIteration:
                return 0
            self.count += len(self._pending)
            if self.count > self.limit:
                raise UnsafeArchive(f"the archive is over its bound of {self.limit} bytes")
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size


def _parts(name: str, strip: str | None) -> tuple[str, ...] | None:
    """An entry's path as components inside the target, None for the target itself.
    `strip`: the first component every name must have (get_archive names entries under
    the folder's own name), removed."""
    if name.startswith("/"):
        raise UnsafeArchive(f"{name!r}: an absolute name")
    parts = tuple(p for p in name.split("/") if p not in ("", "."))
    if ".." in parts:
        raise UnsafeArchive(f"{name!r}: a name climbing out with '..'")
    if strip is not None:
        if not parts or parts[0] != strip:
            raise UnsafeArchive(f"{name!r}: outside {strip}/")
        parts = parts[1:]
    return parts or None


def _link_inside(parts: tuple[str, ...], target: str) -> bool:
    """Whether a relative symbolic link at `parts` pointing to `target` stays in the tree."""
    if target.startswith("/"):
        return False
    joined = posixpath.normpath(posixpath.join(*parts[:-1], target)) if len(parts) > 1 else posixpath.normpath(target)
    return joined != ".." and not joined.startswith("../")


def extract_stream(chunks: Iterable[bytes], target: Path, *, limit: int, strip: str | None = None,
                   special: Literal["refuse", "skip"] = "refuse", any_symlink: bool = False,
                   leave_out: frozenset[str] = frozenset()) -> Extracted:
    """Extract the tar stream `chunks` into the existing, empty folder `target` under the
    rules of this module. `strip`: the top folder every entry is under (removed); the entry
    naming that folder itself gives the target its mode. `leave_out`: top-level names
    (after `strip`) not extracted, nor anything under them. Raises UnsafeArchive."""
    done = Extracted()
    folders: list[tuple[tuple[str, ...], int]] = []  # modes set last: a 0o555 folder is filled first
    reader = ChunkReader(chunks, limit)
    try:
        with tarfile.open(fileobj=io.BufferedReader(reader, 1024 * 1024), mode="r|") as tar:
            for member in tar:
                done.entries += 1
                parts = _parts(member.name, strip)
                mode = member.mode & KEPT_MODE
                if member.mode & (stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX) and not member.issym():
                    done.stripped_modes += 1
                if parts is None:
                    if not member.isdir():
                        raise UnsafeArchive(f"{member.name!r}: the top entry is not a folder")
                    folders.append(((), mode))
                    continue
                if parts[0] in leave_out:
                    continue
                _entry(tar, member, target, parts, mode, special, any_symlink, done, folders)
    except (tarfile.TarError, UnsafeTarget, OSError) as exc:
        raise UnsafeArchive(f"the archive cannot be extracted: {exc}") from exc
    for parts, mode in sorted(folders, key=lambda f: -len(f[0])):
        fd = _open_folder(target, parts)
        try:
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
    done.bytes = reader.count
    return done


def _open_folder(target: Path, parts: tuple[str, ...]) -> int:
    if not parts:
        return os.open(target, _DIR)
    parent = _parent(target, parts, create=False)
    try:
        return os.open(parts[-1], _DIR, dir_fd=parent)
    finally:
        os.close(parent)


def _entry(tar: tarfile.TarFile, member: tarfile.TarInfo, target: Path, parts: tuple[str, ...], mode: int,
           special: str, any_symlink: bool, done: Extracted, folders: list[tuple[tuple[str, ...], int]]) -> None:
    """One entry, written under its parent reached without following links."""
    name = "/".join(parts)
    if member.ischr() or member.isblk() or member.isfifo():
        if special == "skip":
            done.skipped_special += 1
            return
        raise UnsafeArchive(f"{name}: a device file or FIFO")
    if not (member.isdir() or member.isreg() or member.issym() or member.islnk()):
        raise UnsafeArchive(f"{name}: an entry of tar type {member.type!r}")
    parent = _parent(target, parts, create=True)
    try:
        last = parts[-1]
        if member.isdir():
            try:
                os.mkdir(last, 0o700, dir_fd=parent)
            except FileExistsError:
                if not stat.S_ISDIR(os.lstat(last, dir_fd=parent).st_mode):
                    raise UnsafeArchive(f"{name}: a folder over an entry that is not one") from None
            folders.append((parts, mode))
            return
        _clear(parent, last, name)
        if member.issym():
            if not any_symlink and not _link_inside(parts, member.linkname):
                raise UnsafeArchive(f"{name}: a link to {member.linkname!r}, outside the tree")
            os.symlink(member.linkname, last, dir_fd=parent)
        elif member.islnk():
            source = _parts(member.linkname, _strip_of(member, parts))
            if source is None:
                raise UnsafeArchive(f"{name}: a hard link to the top folder")
            source_parent = _parent(target, source, create=False)
            try:
                if not stat.S_ISREG(os.lstat(source[-1], dir_fd=source_parent).st_mode):
                    raise UnsafeArchive(f"{name}: a hard link to {member.linkname!r}, not a regular file")
                os.link(source[-1], last, src_dir_fd=source_parent, dst_dir_fd=parent, follow_symlinks=False)
            finally:
                os.close(source_parent)
        else:
            content = tar.extractfile(member)
            fd = os.open(last, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                         dir_fd=parent)
            with os.fdopen(fd, "wb") as out:
                if content is not None:
                    while block := content.read(1024 * 1024):
                        out.write(block)
                os.fchmod(out.fileno(), mode)
            os.utime(last, (member.mtime, member.mtime), dir_fd=parent)
    except FileNotFoundError as exc:
        raise UnsafeArchive(f"{name}: links to an entry not in the tree") from exc
    finally:
        os.close(parent)


def _strip_of(member: tarfile.TarInfo, parts: tuple[str, ...]) -> str | None:
    """The top folder a hard link's target is named under: the same as the entry's own
    (get_archive's names all start with it), None when the entry's name has none left."""
    given = tuple(p for p in member.name.split("/") if p not in ("", "."))
    return given[0] if len(given) > len(parts) else None


def _clear(parent: int, last: str, name: str) -> None:
    """A later entry of the same name replaces an earlier file or link (layers do that),
    never a folder."""
    try:
        info = os.lstat(last, dir_fd=parent)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        raise UnsafeArchive(f"{name}: an entry over a folder")
    os.unlink(last, dir_fd=parent)
