"""The one diff reader: unified diffs read with unidiff, by one rule for each question.

Every part of testprism that asks "which files does this patch touch?" or "which lines
does it change?" asks here, so that the answer cannot drift between callers.

- `parse` reads a patch (bytes are decoded as utf-8 with errors="replace": a stray byte
  in a diff must not stop it from being read). `parse_field` reads a patch as published
  in a row's field (given its final newline) and refuses, naming the field, one that
  changes no file or leaves the program's folder.
- `relative_path` is a diff path without its `a/` or `b/` prefix, None for /dev/null;
  `escapes_program` says whether such a path leaves the program's folder.
- `touched_files` is the relative paths a patch names on either side;
  `touched_test_files` is the test modules it leaves behind (`is_test_file`).
- `changed_lines` is the lines of the patched file a file diff changes. What stands for a
  removed line depends on what the caller does with the numbers (see `Removals`);
  `hunks` is the same lines grouped by the hunk they belong to, with each hunk's extent
  on the source side.
- `file_hunks` is the one writer: the `---`/`+++` lines and hunks of one file's change,
  as git writes them (a run's outputs, a mutant's patch).
"""

from __future__ import annotations

import base64
import difflib
import re
import zlib
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

from unidiff import PatchedFile, PatchSet
from unidiff.errors import UnidiffParseError

from testprism.tasks.model.syntax import named

Removals = Literal["following", "previous", "previous-or-hunk-start"]
"""What line of the patched file stands for removed lines (added lines always count as
their own target-side numbers):

- "following" (coverage): a run of removed lines followed by added lines is a
  replacement, and only the added lines count; a pure deletion is stood in for by the
  next context line, else (at a hunk's end) by the previous context line. Coverage needs a
  line that the patched program executes, which is where the deleted code used to run.
- "previous" (suite import): each removed line marks the last target line before it, the
  line before the hunk (at least 1) when none comes first. Tests are selected by whether
  the marked line falls inside a test function, so a removal at a function's end still
  names that function.
- "previous-or-hunk-start" (panel): as "previous", but the hunk's own target start when
  no target line comes first. The panel picks the function that holds the line, so a pure
  deletion still names the function it happened in.

The two "previous" rules differ only for a removal before any context line of a hunk (a
zero-context diff, or the removal of a whole file); they are kept apart so that neither
caller's results change.
"""


def parse(patch: bytes | str) -> PatchSet:
    """A unified diff read by unidiff; bytes are utf-8, undecodable bytes replaced.
    Raises unidiff's UnidiffParseError for text that is not one."""
    text = patch.decode("utf-8", errors="replace") if isinstance(patch, bytes) else patch
    return PatchSet(text)


class DiffError(ValueError):
    """A published patch is not one the harness can apply to a program; `field` is the
    field that holds it (a row's `patch`, `test_patch`, `model_patch`)."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(message)


def with_final_newline(text: str) -> str:
    """Patches published without a final newline make `git apply` say "corrupt patch"."""
    return text if text.endswith("\n") else text + "\n"


def parse_field(text: str, field: str) -> PatchSet:
    """The patch published in `field`: a unified diff with at least one file, whose paths
    stay inside the program. Raises DiffError naming the field."""
    try:
        parsed = parse(with_final_newline(text))
    except UnidiffParseError as exc:
        raise DiffError(field, f"not a unified diff: {exc}") from exc
    if not len(parsed):
        raise DiffError(field, "not a unified diff: no file changes found")
    for patched in parsed:
        for name in (patched.source_file, patched.target_file):
            if escapes_program(name):
                raise DiffError(field, f"patch path escapes the program: {name!r}")
    return parsed


def relative_path(name: str) -> str | None:
    """A diff path without its `a/` or `b/` prefix; None for /dev/null (no file)."""
    if name == "/dev/null":
        return None
    return name[2:] if name.startswith(("a/", "b/")) else name


def escapes_program(name: str) -> bool:
    """Whether a diff path, once its prefix is stripped, is absolute or climbs out with `..`."""
    rel = relative_path(name)
    return rel is not None and (rel.startswith("/") or ".." in PurePosixPath(rel).parts)


_C_ESCAPES = {ord("a"): 7, ord("b"): 8, ord("t"): 9, ord("n"): 10, ord("v"): 11, ord("f"): 12, ord("r"): 13,
              ord("\\"): 92, ord('"'): 34}


def c_unquote(text: bytes) -> tuple[bytes, bytes]:
    """A C-quoted name at the start of `text` (`"b/\\056git/config"`) decoded as git and GNU
    patch decode it (`\\ooo` octal, `\\n`-style escapes), and what follows it. Text that
    does not start with a quote is returned as is, with nothing after it."""
    if not text.startswith(b'"'):
        return text, b""
    out, i = bytearray(), 1
    while i < len(text):
        byte = text[i]
        if byte == ord('"'):
            return bytes(out), text[i + 1:]
        if byte == ord("\\") and i + 1 < len(text):
            nxt = text[i + 1]
            if ord("0") <= nxt <= ord("7"):
                digits = re.match(rb"[0-7]{1,3}", text[i + 1:i + 4])[0]
                out.append(int(digits, 8) & 0xFF)
                i += 1 + len(digits)
                continue
            out.append(_C_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(byte)
        i += 1
    return bytes(out), b""


#: header lines that name a path some patch tool writes (git: `diff --git`, `rename/copy
#: from/to`, `---`/`+++`; GNU patch: those, `Index:` and a context diff's `***`)
_NAME_HEADERS = (b"diff --git ", b"--- ", b"+++ ", b"*** ", b"Index: ", b"rename from ", b"rename to ",
                 b"copy from ", b"copy to ", b"rename old ", b"rename new ")
_HUNK = re.compile(rb"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")


def _names_in(rest: bytes) -> list[str]:
    """Every reading of the names on a header line that a tool might take: each C-quoted
    name decoded, and for unquoted text the whole (up to a tab) and each word."""
    names: list[bytes] = []
    rest = rest.rstrip(b"\r")
    while rest:
        rest = rest.lstrip(b" ")
        if rest.startswith(b'"'):
            name, rest = c_unquote(rest)
            names.append(name)
            continue
        unquoted = rest.split(b"\t")[0]
        names += [unquoted, *unquoted.split()]
        break
    return [name.decode("utf-8", "surrogateescape") for name in names if name]


def header_paths(patch: bytes) -> set[str]:
    """The paths a patch's headers name, as a tool would write them: C-quoted names decoded
    (unidiff reads `"b/\\056git/config"` literally, GNU patch writes `.git/config`). Lines
    inside a unified hunk's body are not headers and are skipped by the hunk's counts."""
    found: set[str] = set()
    old = new = 0
    for line in patch.split(b"\n"):
        if old > 0 or new > 0:
            tag = line[:1]
            if tag in (b" ", b""):
                old, new = old - 1, new - 1
            elif tag == b"-":
                old -= 1
            elif tag == b"+":
                new -= 1
            elif tag != b"\\":
                old = new = 0  # a body cut short: read the line as a header again
            if old > 0 or new > 0 or tag in (b" ", b"", b"-", b"+", b"\\"):
                continue
        hunk = _HUNK.match(line)
        if hunk:
            old = int(hunk[1]) if hunk[1] is not None else 1
            new = int(hunk[2]) if hunk[2] is not None else 1
            continue
        for header in _NAME_HEADERS:
            if line.startswith(header):
                found.update(_names_in(line[len(header):]))
    return found


def unsafe_path(name: str) -> bool:
    """Whether a path a patch tool writes (as given, or with its first component stripped,
    as `-p1` does) is absolute, climbs out with `..`, or lies in a `.git` folder (in any
    letter case: git refuses those too)."""
    if name == "/dev/null":
        return False
    parts = name.replace("\\", "/").split("/")
    return name.startswith("/") or any(part == ".." or part.lower().rstrip(". ") == ".git" for part in parts)


def _base85_lines(lines: list[bytes]) -> bytes:
    """The bytes of a git binary hunk's base85 lines (a length letter, then the data)."""
    out = bytearray()
    for line in lines:
        size = line[0] - ord("A") + 1 if line[:1].isupper() else line[0] - ord("a") + 27
        out += base64.b85decode(line[1:])[:size]
    return bytes(out)


def _delta_result_size(lines: list[bytes]) -> int | None:
    """The size of the file a git binary delta makes: the second varint of the inflated
    delta's header; None when the hunk cannot be read that far."""
    try:
        head = zlib.decompressobj().decompress(_base85_lines(lines), 32)
    except (ValueError, zlib.error, IndexError):
        return None
    values, value, shift = [], 0, 0
    for byte in head:
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            values.append(value)
            value, shift = 0, 0
            if len(values) == 2:
                return values[1]
    return None


def binary_output_bytes(patch: bytes) -> int:
    """The bytes a patch's git binary hunks would write: a `literal N` hunk writes N, a
    `delta N` the result size its delta declares (it may copy up to 16 MiB per few bytes of
    data, so N says nothing); an unreadable delta counts as its declared N. Every hunk
    counts, the reverse ones too: an over-estimate, never an under-estimate."""
    lines = patch.split(b"\n")
    total = 0
    for index, line in enumerate(lines):
        found = re.fullmatch(rb"(literal|delta) (\d+)\r?", line)
        if not found:
            continue
        size = int(found[2])
        if found[1] == b"delta":
            data = []
            for following in lines[index + 1:]:
                if not following.strip():
                    break
                data.append(following.rstrip(b"\r"))
            result = _delta_result_size(data)
            size = max(size, result) if result is not None else size
        total += size
    return total


def touched_files(patch: PatchSet) -> set[str]:
    """The relative paths a patch names, on either side (a rename names both)."""
    names = set()
    for patched in patch:
        for name in (patched.source_file, patched.target_file):
            rel = relative_path(name)
            if rel is not None:
                names.add(rel)
    return names


#: folders of a test tree whose files are data or helpers, not tests (express's test/fixtures,
#: mocha's test/support)
NOT_TEST_FOLDERS = frozenset({"fixtures", "fixture", "support", "helpers", "testdata"})


def is_test_file(path: str, language: str = "python") -> bool:
    """Whether `path` holds tests of `language`. Python: what pytest would take for a test
    module: `test_*.py`, `*_test.py`, `tests.py`, or any module under a `tests`/`test`
    folder; helpers a test patch also edits (sympy's `testing/quality_unicode.py`, a
    conftest.py) are not run as tests. Another language: a file of its extensions that its
    syntax record's test rule accepts (Go's `*_test.go`) and that is named as a test
    (`*.test.js`, `*.spec.ts`, `FooTest.java`), wherever it lies (vuejs/core keeps specs under
    `__tests__/helpers/`), or lies in a test folder outside fixtures. A JavaScript repository's
    tests may be TypeScript, which Jest and Vitest transform (immutable-js's `__tests__/Range.ts`)."""
    name = PurePosixPath(path)
    if language != "python":
        record = named(language)
        extensions = record.extensions + (named("typescript").extensions if language == "javascript" else ())
        if name.suffix not in extensions or not record.test_file(path):
            return False
        stem = name.name.split(".")[0]
        if ".test." in name.name or ".spec." in name.name or stem.endswith(("_test", "Test", "Tests")):
            return True
        if any(part in NOT_TEST_FOLDERS for part in name.parts[:-1]):
            return False
        return any(part in ("test", "tests", "__tests__", "spec") for part in name.parts[:-1])
    if name.suffix != ".py" or name.name in ("conftest.py", "__init__.py"):
        return False
    if name.name.startswith("test_") or name.stem.endswith("_test") or name.name == "tests.py":
        return True
    return any(part in ("tests", "test") for part in name.parts[:-1])


def touched_test_files(patch: PatchSet, language: str = "python") -> list[str]:
    """The test files of `language` a test patch adds or edits (deleted ones cannot run)."""
    return sorted({p.path for p in patch if not p.is_removed_file and is_test_file(p.path, language)})


def changed_lines(patched: PatchedFile, removals: Removals) -> set[int]:
    """Target-side line numbers a file diff changes: the lines it adds, and for removed
    lines the stand-in that `removals` names."""
    if removals == "following":
        return _changed_following(patched)
    lines: set[int] = set()
    for hunk in patched:
        last = hunk.target_start if removals == "previous-or-hunk-start" else max(hunk.target_start - 1, 1)
        for line in hunk:
            if line.is_added:
                lines.add(line.target_line_no)
            elif line.is_removed:
                lines.add(last)
            if line.target_line_no is not None:
                last = line.target_line_no
    return lines


def _changed_following(patched: PatchedFile) -> set[int]:
    lines: set[int] = set()
    for hunk in patched:
        body = [line for line in hunk if line.line_type in "+- "]
        for index, line in enumerate(body):
            if line.is_added:
                lines.add(line.target_line_no)
            elif line.is_removed and (index + 1 == len(body) or not body[index + 1].is_removed):
                following = body[index + 1] if index + 1 < len(body) else None
                if following is not None and following.is_added:
                    continue  # a replacement: the added lines count
                if following is not None:
                    lines.add(following.target_line_no)
                    continue
                before = [b for b in body[:index] if b.is_context]
                if before:
                    lines.add(before[-1].target_line_no)
    return lines


def _git_lines(data: bytes) -> list[bytes]:
    """Lines as git counts them: ended by \\n only (bytes.splitlines also splits at \\r)."""
    return [line for line in re.split(rb"(?<=\n)", data) if line]


def file_hunks(name: str, before: bytes | None, after: bytes | None) -> bytes:
    """`--- a/name`, `+++ b/name` and the hunks turning `before` into `after` (None: the
    file is absent on that side, /dev/null), a missing final newline marked as git marks
    it so that `git apply` takes the patch."""
    path = name.encode("utf-8", "surrogateescape")
    hunks = difflib.diff_bytes(
        difflib.unified_diff, _git_lines(before or b""), _git_lines(after or b""),
        fromfile=b"a/" + path if before is not None else b"/dev/null",
        tofile=b"b/" + path if after is not None else b"/dev/null",
    )
    return b"".join(line if line.endswith(b"\n") else line + b"\n\\ No newline at end of file\n" for line in hunks)
@dataclass(frozen=True)
class Hunk:
    """One hunk of a file diff: its extent on the source side (context lines included) and
    the target-side lines it changes (`changed_lines`' rule; none for a removed file)."""

    path: str
    source: range
    lines: frozenset[int]


def hunks(patch: bytes | str, removals: Removals) -> list[Hunk]:
    """Every hunk of a patch, in order, with the changed lines (`removals`' rule) that
    fall inside its target-side extent."""
    found = []
    for patched in parse(patch):
        lines = changed_lines(patched, removals) if not patched.is_removed_file else set()
        for hunk in patched:
            target = range(hunk.target_start, hunk.target_start + max(hunk.target_length, 1))
            found.append(Hunk(patched.path, range(hunk.source_start, hunk.source_start + max(hunk.source_length, 1)),
                              frozenset(n for n in lines if n in target)))
    return found
