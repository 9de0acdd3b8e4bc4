"""What a run left behind (`RunRequest.keep_outputs`): the suite it wrote under `tmp/` and
the change it made to the rest of the program, as a patch.

A generation run is an agent's: everything it left is untrusted, and the harness reading it
runs as root. So the workspace is read through tasks/sandbox/nofollow.py (local, docker's
bind mode) or from the tar stream the engine sends (docker's archive mode), never by
extracting it: a link (`tmp/x -> /etc/shadow`) is listed in `skipped`, never read; FIFOs and
devices likewise. Caps bound what is kept (a run can leave gigabytes); what is over them is
skipped with the reason, so the caller can tell a short suite from a cut one.

The diff is against the state tree the run started from (`RunRequest.tree`), git-style
(`a/`, `b/`, `diff --git` headers, `new file mode`, `\\ No newline at end of file`), so
`git apply` and the harness's own patch procedure (tasks/model/state.py) take it. Files
under `tmp/` are the suite, never part of the patch; caches (`__pycache__`,
`.pytest_cache`, `*.pyc`) are neither; a `.git` path is skipped (no patch naming one ever
applies: SECURITY.md).
"""

from __future__ import annotations

import hashlib
import itertools
import re
import tarfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from testprism.tasks.model.patches import file_hunks
from testprism.tasks.sandbox.nofollow import TreeEntry, open_file, walk_tree

#: the suite kept from `tmp/`: at most this many files and bytes in all
SUITE_MAX_FILES = 1000
SUITE_MAX_BYTES = 16 * 1024 * 1024
#: a changed file larger than this is skipped (a repair patch edits source, not data)
DIFF_FILE_MAX_BYTES = 1024 * 1024
#: the whole patch at most this large
DIFF_MAX_BYTES = 16 * 1024 * 1024
#: entries looked at: a run leaving more (a million empty files) is cut, and says so
ENTRIES_MAX = 200_000
CACHE_FOLDERS = frozenset({"__pycache__", ".pytest_cache"})
SUITE_FOLDER = "tmp"
_CHUNK = 1024 * 1024
#: names `diff --git` would have to quote (git apply reads such headers differently)
_UNQUOTED = re.compile(r'[\x00-\x1f\x7f"\\]')


@dataclass(frozen=True)
class RunOutputs:
    """The suite (`tmp/` relative paths → contents), the patch to the rest of `program/`
    (b"" when the run changed nothing there), and what was left out, as `path: reason`."""

    suite_files: dict[str, bytes]
    program_diff: bytes
    skipped: tuple[str, ...]


def outputs_from_folder(program: Path, original: Path) -> RunOutputs:
    """The outputs of a run whose workspace's `program/` is the host folder `program`."""
    entries = walk_tree(program, _is_cache_folder)
    try:
        first = next(entries, None)
    except OSError:  # ELOOP, ENOENT, ENOTDIR: the run swapped program/ for a link, or removed it
        return program_unreadable("a link or not a folder")
    return _Reading(original).read(itertools.chain([first] if first else [], entries))


def program_unreadable(reason: str) -> RunOutputs:
    """What a run left when its `program/` itself cannot be read: nothing, and why (not the
    deletion of every file: the run may only have hidden them)."""
    return RunOutputs({}, b"", (f"program/: {reason}; nothing read",))


def outputs_from_tar(stream: Iterable[bytes], root: str, original: Path) -> RunOutputs:
    """The outputs of a run from a tar of its `program/` folder, as the engine streams it
    (docker's get_archive: members named `root/...`). Parsed as a stream, never extracted."""
    with tarfile.open(fileobj=_ChunkReader(iter(stream)), mode="r|") as tar:
        return _Reading(original).read(_tar_entries(tar, root))


def _tar_entries(tar: tarfile.TarFile, root: str) -> Iterator[TreeEntry]:
    for member in tar:
        parts = tuple(p for p in member.name.split("/") if p not in ("", "."))
        if not parts or parts[0] != root or ".." in parts:
            continue
        parts = parts[1:]
        if not parts or member.isdir() or any(p in CACHE_FOLDERS for p in parts[:-1]):
            continue
        if member.issym():
            yield TreeEntry(parts, "link", 0, False, member.linkname, lambda: None)
        elif member.isreg():  # a hard link member is not: "other", never resolved
            yield TreeEntry(parts, "file", member.size, bool(member.mode & 0o100), "",
                            lambda member=member: tar.extractfile(member))
        else:
            yield TreeEntry(parts, "other", 0, False, "", lambda: None)


class _ChunkReader:
    """The engine's chunks as the file object tarfile's stream mode reads (it only calls
    `read`)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._buffer = b""

    def read(self, size: int = -1) -> bytes:
        while size < 0 or len(self._buffer) < size:
            chunk = next(self._chunks, None)
            if chunk is None:
                break
            self._buffer += chunk
        if size < 0:
            size = len(self._buffer)
        data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data


def _is_cache_folder(name: str) -> bool:
    return name in CACHE_FOLDERS


def _ignored(parts: tuple[str, ...]) -> bool:
    return any(p in CACHE_FOLDERS for p in parts[:-1]) or parts[-1].endswith(".pyc") or parts[-1] in CACHE_FOLDERS


@dataclass
class _Reading:
    """One pass over a run's `program/` entries against the state tree it started from."""

    original: Path
    suite: dict[str, bytes] = field(default_factory=dict)
    suite_bytes: int = 0
    diff: list[bytes] = field(default_factory=list)
    diff_bytes: int = 0
    skipped: list[str] = field(default_factory=list)

    def read(self, entries: Iterator[TreeEntry]) -> RunOutputs:
        before = {e.parts: e for e in walk_tree(self.original, _is_cache_folder)
                  if not _ignored(e.parts) and e.parts[0] != SUITE_FOLDER}
        seen: set[tuple[str, ...]] = set()
        complete = True
        for count, entry in enumerate(entries):
            if count == ENTRIES_MAX:
                self.skipped.append(f"program/: more than {ENTRIES_MAX} entries; the rest was not read "
                                    "and no deletion is reported")
                complete = False
                break
            if _ignored(entry.parts):
                continue
            if entry.parts[0] == SUITE_FOLDER and len(entry.parts) > 1:
                self._take_suite_file(entry)
            else:
                seen.add(entry.parts)
                self._compare(before.get(entry.parts), entry)
        if complete:
            for parts in sorted(before.keys() - seen):
                self._compare(before[parts], None)
        return RunOutputs(self.suite, b"".join(self.diff), tuple(self.skipped))

    def _skip(self, parts: tuple[str, ...], reason: str) -> None:
        self.skipped.append(f"{'/'.join(parts)}: {reason}")

    def _take_suite_file(self, entry: TreeEntry) -> None:
        rel = "/".join(entry.parts[1:])
        if entry.kind != "file":
            self._skip(entry.parts, "a link" if entry.kind == "link" else "not a regular file")
        elif len(self.suite) >= SUITE_MAX_FILES:
            self._skip(entry.parts, f"past the suite's cap of {SUITE_MAX_FILES} files")
        elif self.suite_bytes + entry.size > SUITE_MAX_BYTES:
            self._skip(entry.parts, f"{entry.size} bytes: past the suite's cap of {SUITE_MAX_BYTES} bytes")
        else:
            data = _read(entry, SUITE_MAX_BYTES - self.suite_bytes)
            if data is None:
                self._skip(entry.parts, "unreadable")
                return
            self.suite[rel] = data
            self.suite_bytes += len(data)

    def _compare(self, old: TreeEntry | None, new: TreeEntry | None) -> None:
        """The patch of one path: `old` in the state tree, `new` in the workspace (None:
        absent there)."""
        here = old or new
        assert here is not None
        parts = here.parts
        if old is not None and new is not None and old.kind == new.kind == "link":
            if old.link_target != new.link_target:
                self._skip(parts, "a link (changed)")
            return
        if (old is not None and old.kind != "file") or (new is not None and new.kind != "file"):
            kinds = {e.kind for e in (old, new) if e is not None}
            self._skip(parts, "a link" if "link" in kinds else "not a regular file")
            return
        if ".git" in parts:
            self._skip(parts, "a .git path (no patch naming one applies)")
            return
        if any(e.size > DIFF_FILE_MAX_BYTES for e in (old, new) if e is not None):
            if old is None or new is None or old.size != new.size or not _same(self.original, old, new):
                self._skip(parts, f"changed, larger than {DIFF_FILE_MAX_BYTES} bytes")
            elif old.executable != new.executable:
                self._add(parts, _header(parts, old.executable, new.executable, b""))
            return
        before = b"" if old is None else _read_original(self.original, old)
        after = b"" if new is None else _read(new, DIFF_FILE_MAX_BYTES)
        if before is None or after is None:
            self._skip(parts, "unreadable")
        elif old is not None and new is not None and before == after:
            if old.executable != new.executable:
                self._add(parts, _header(parts, old.executable, new.executable, b""))
        elif b"\0" in before or b"\0" in after:
            self._skip(parts, "binary")
        elif _UNQUOTED.search("/".join(parts)):
            self._skip(parts, "a name git would quote")
        else:
            self._add(parts, _file_diff(parts, old, new, before, after))

    def _add(self, parts: tuple[str, ...], patch: bytes) -> None:
        if self.diff_bytes + len(patch) > DIFF_MAX_BYTES:
            self._skip(parts, f"changed: past the patch's cap of {DIFF_MAX_BYTES} bytes")
            return
        self.diff.append(patch)
        self.diff_bytes += len(patch)


def _read(entry: TreeEntry, limit: int) -> bytes | None:
    fh = entry.open()
    if fh is None:
        return None
    with fh:
        return fh.read(limit)


def _read_original(original: Path, entry: TreeEntry) -> bytes | None:
    fh = open_file(original, entry.parts)
    if fh is None:
        return None
    with fh:
        return fh.read(DIFF_FILE_MAX_BYTES)


def _same(original: Path, old: TreeEntry, new: TreeEntry) -> bool:
    """Whether two large regular files hold the same bytes (hashed in chunks: an unchanged
    data file may be far larger than anything kept). Reads `new` once: a tar stream's
    member cannot be read twice."""
    before, after = open_file(original, old.parts), new.open()
    if before is None or after is None:
        return False
    with before, after:
        return _digest(before) == _digest(after)


def _digest(fh: BinaryIO) -> bytes:
    sha = hashlib.sha256()
    while chunk := fh.read(_CHUNK):
        sha.update(chunk)
    return sha.digest()


def _mode(executable: bool) -> bytes:
    return b"100755" if executable else b"100644"


def _header(parts: tuple[str, ...], old_exec: bool | None, new_exec: bool | None, body: bytes) -> bytes:
    """`diff --git` and its mode lines (None: the file is absent on that side)."""
    name = "/".join(parts).encode("utf-8", "surrogateescape")
    lines = [b"diff --git a/" + name + b" b/" + name + b"\n"]
    if old_exec is None:
        lines.append(b"new file mode " + _mode(bool(new_exec)) + b"\n")
    elif new_exec is None:
        lines.append(b"deleted file mode " + _mode(old_exec) + b"\n")
    elif old_exec != new_exec:
        lines += [b"old mode " + _mode(old_exec) + b"\n", b"new mode " + _mode(new_exec) + b"\n"]
    return b"".join(lines) + body


def _file_diff(parts: tuple[str, ...], old: TreeEntry | None, new: TreeEntry | None,
               before: bytes, after: bytes) -> bytes:
    body = file_hunks("/".join(parts), before if old is not None else None, after if new is not None else None)
    return _header(parts, None if old is None else old.executable, None if new is None else new.executable, body)

