"""How much of the reference's change a run executed: each toolchain's coverage report read
into executed lines per file (coverage.py's JSON, Go's profile, V8's ranges (mapped through source maps for
TypeScript), gcov's JSON,
JaCoCo's XML, llvm-cov's lcov,
PCOV's lines, Ruby's Coverage lines), and those scored against the changed lines and functions of
tasks/model/changes.py (ΔC, EC).

Every report is the run's, hence the suite's: JSON is read by the one bounded reader
(tasks/model/bounded_json.py), so a report nested or filled past its bounds is a ValueError,
which the pass records as `coverage_failed` for that run and nothing else.
"""


from __future__ import annotations

import logging
import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from defusedxml import ElementTree as defused_et

from testprism.tasks.model import bounded_json
from testprism.tasks.model.changes import ChangedFile

log = logging.getLogger(__name__)


# -- what a run executed ------------------------------------------------------------------------


@dataclass(frozen=True)
class MeasuredFile:
    """coverage.py's view of one file in one run."""

    statements: frozenset[int]
    executed: frozenset[int]


def parse_report(data: bytes) -> dict[str, MeasuredFile]:
    """The collector's JSON report → measured files. Raises ValueError when the report is
    unreadable or says the data could not be combined."""
    report = bounded_json.loads(data)
    if not isinstance(report, dict) or not isinstance(report.get("files"), dict):
        raise ValueError("not a testprism coverage report")
    if report.get("error"):
        raise ValueError(f"coverage data could not be combined: {str(report['error'])[:500]}")
    measured = {}
    for path, entry in report["files"].items():
        if not isinstance(entry, dict):
            raise ValueError(f"coverage of {path[:200]!r} is not an object")
        if "error" in entry:
            log.warning("coverage of %s unreadable: %s", path[:200], str(entry["error"])[:500])
            continue
        try:
            statements = frozenset(int(n) for n in entry["statements"])
            missing = frozenset(int(n) for n in entry["missing"])
        except (TypeError, KeyError, ValueError) as exc:
            raise ValueError(f"coverage of {path[:200]!r} is not line numbers: {exc!r}") from exc
        measured[path] = MeasuredFile(statements, statements - missing)
    return measured


_GO_BLOCK = re.compile(r"(?P<file>.+):(?P<l1>\d+)\.(?P<c1>\d+),(?P<l2>\d+)\.(?P<c2>\d+) (?P<statements>\d+) (?P<count>\d+)")


def _repository_path(import_file: str, modules: Mapping[str, str]) -> str:
    """`example.com/mod/pkg/a.go` → `pkg/a.go` (module `example.com/mod` at the root): the
    longest module path it starts with, replaced by that module's folder. A name outside
    every module is kept as it is (`score_changes` still matches it by suffix)."""
    found = [m for m in modules if import_file.startswith(m + "/")]
    if not found:
        return import_file
    module = max(found, key=len)
    folder = modules[module]
    rest = import_file[len(module) + 1:]
    return f"{folder}/{rest}" if folder else rest


def parse_go_profile(data: bytes, modules: Mapping[str, str]) -> dict[str, MeasuredFile]:
    """A Go cover profile (`mode: set|count|atomic`, then `file:l1.c1,l2.c2 statements
    count` per block) → measured files, named by repository path through `modules`
    (module path → its folder in the repository, "" for the root).

    A block's lines are statements when it holds any (an empty body's block holds none);
    executed when its count is non-zero in any test binary (`-coverpkg` repeats every
    block once per package tested). A block ending at column 1 does not reach its last
    line. Raises ValueError on anything else: the profile is the run's, not trusted."""
    text = data.decode("utf-8", errors="replace").splitlines()
    if not text or not text[0].startswith("mode: "):
        raise ValueError("not a Go cover profile")
    statements: dict[str, set[int]] = {}
    executed: dict[str, set[int]] = {}
    for number, line in enumerate(text[1:], start=2):
        block = _GO_BLOCK.fullmatch(line)
        if block is None:
            raise ValueError(f"cover profile line {number} is not a block: {line[:200]!r}")
        path = _repository_path(block["file"], modules)
        last = int(block["l2"]) - (int(block["c2"]) <= 1)
        lines = range(int(block["l1"]), max(int(block["l1"]), last) + 1)
        statements.setdefault(path, set())
        executed.setdefault(path, set())
        if int(block["statements"]):
            statements[path].update(lines)
            if int(block["count"]):
                executed[path].update(lines)
    return {path: MeasuredFile(frozenset(statements[path]), frozenset(executed[path])) for path in statements}


def _utf16_lines(text: str) -> tuple[list[int], list[bool]]:
    """Per UTF-16 code unit of `text` (V8's offsets), its line number and whether it is
    blank (whitespace); a character outside the BMP takes two units."""
    lines: list[int] = []
    blank: list[bool] = []
    line = 1
    for char in text:
        width = 2 if ord(char) > 0xFFFF else 1
        lines.extend([line] * width)
        blank.extend([char.isspace()] * width)
        if char == "\n":
            line += 1
    return lines, blank


def v8_executed(source: str, scripts: list) -> MeasuredFile:
    """V8 block coverage of one file (one list of functions per process that loaded it) →
    its lines. Every line with a non-blank character is a statement (V8 covers the whole
    script); a line ran when one of its non-blank characters has a non-zero count, the
    count at an offset being that of the innermost range holding it (ranges nest, so
    painting them outer first leaves the innermost count).

    Offsets only mean lines in the file as it is here: a script whose extent is not the
    file's length was transformed before V8 saw it (a loader, babel-jest, a transpiler),
    and is refused (ValueError) rather than mapped onto the wrong lines. Node strips a
    leading BOM from CommonJS modules: such a file is matched without it."""
    if source.startswith("\ufeff"):
        source = source[1:]
    line_of, blank = _utf16_lines(source)
    length = len(line_of)
    statements = frozenset(line_of[i] for i in range(length) if not blank[i])
    executed: set[int] = set()
    for functions in scripts:
        ranges = []
        try:
            for function in functions:
                for r in function["ranges"]:
                    ranges.append((int(r["startOffset"]), int(r["endOffset"]), int(r["count"])))
        except (TypeError, KeyError, ValueError) as exc:
            raise ValueError(f"not V8 coverage: {exc!r}") from exc
        if max((end for _, end, _ in ranges), default=None) != length or min(s for s, _, _ in ranges) != 0:
            raise ValueError(f"V8 saw a script of another extent than the file's {length} characters: transformed")
        counts = [0] * length
        for start, end, count in sorted(ranges, key=lambda r: (r[0], -r[1])):
            start, end = max(0, start), min(length, end)
            if start < end:
                counts[start:end] = [count] * (end - start)
        executed.update(line_of[i] for i in range(length) if counts[i] and not blank[i])
    return MeasuredFile(statements, frozenset(executed))


def _collector_files(data: bytes, kind: str, failure: str, nothing: str) -> dict:
    """The files of a collector's report (`{"data_files": n, "files": {...}, "error": ...}`,
    written by the helpers of JavaScript, TypeScript, PHP and Ruby in the run, so untrusted):
    ValueError when it is no `kind` report, when the collector says `failure` (its error
    cut to 500 characters), or when no process wrote data (`nothing`: not measured, not 0)."""
    try:
        report = bounded_json.loads(data)
    except ValueError as exc:
        raise ValueError(f"not a testprism {kind} report: {exc}") from exc
    if not isinstance(report, dict) or not isinstance(report.get("files"), dict):
        raise ValueError(f"not a testprism {kind} report")
    if report.get("error"):
        raise ValueError(f"{failure}: {str(report['error'])[:500]}")
    if not report.get("data_files"):
        raise ValueError(nothing)
    return report["files"]


def parse_v8_report(data: bytes, sources: Mapping[str, str]) -> dict[str, MeasuredFile]:
    """The JavaScript collector's report (`{"data_files": n, "files": {path: [functions
    per process]}, "error": ...}`) → measured files, read against `sources` (each changed
    file's text in the reference tree; a path not there is ignored). Raises ValueError when
    the report is unreadable, says the data could not be read, or no Node process wrote
    coverage at all (the suite ran no Node: nothing was measured, which is not 0)."""
    files = _collector_files(data, "V8 coverage", "V8 coverage could not be read", "no Node process wrote V8 coverage")
    return {path: v8_executed(sources[path], scripts) for path, scripts in files.items()
            if path in sources and isinstance(scripts, list)}


def parse_mapped_v8_report(data: bytes) -> dict[str, MeasuredFile]:
    """The TypeScript collector's report (`{"data_files": n, "files": {path: [{"statements":
    [...], "executed": [...]} per script]}, "error": ...}`: V8's counts already mapped to the
    source's lines through the compiled code's source map) → measured files. Raises
    ValueError when the report is unreadable, says the coverage could not be mapped, or no
    Node process wrote coverage (nothing was measured, which is not 0)."""
    files = _collector_files(data, "TypeScript coverage", "V8 coverage could not be mapped", "no Node process wrote V8 coverage")
    measured = {}
    for path, scripts in files.items():
        statements: set[int] = set()
        executed: set[int] = set()
        try:
            for script in scripts:
                lines = [int(n) for n in script["statements"]]
                ran = [int(n) for n in script["executed"]]
                if not all(n > 0 for n in lines + ran) or not set(ran) <= set(lines):
                    raise ValueError("a line that is not one of its statements")
                statements.update(lines)
                executed.update(ran)
        except (TypeError, KeyError, ValueError) as exc:
            raise ValueError(f"TypeScript coverage of {path[:200]!r} is not mapped lines: {exc!r}") from exc
        measured[path] = MeasuredFile(frozenset(statements), frozenset(executed))
    return measured


GCOV_HEADER = "# testprism gcov"


def parse_gcov_report(data: bytes) -> dict[str, MeasuredFile]:
    """The C/C++ collector's report → measured files, named by repository path.

    The report is `# testprism gcov`, `# root <program root in the run>`, `# gcda <data
    files the run wrote>`, then one line of `gcov --json-format --stdout` per object
    compiled with `--coverage` (`{"current_working_directory": ..., "files": [{"file":
    ..., "lines": [{"line_number": n, "count": c}, ...]}]}`). A line gcov lists is a
    statement, executed when its count is non-zero in any object (a header's inline code
    is compiled into several). Sources outside the root (system headers) are dropped.
    Raises ValueError when the report is not one, or no process wrote any data: nothing
    instrumented ran (built without `--coverage`, or every process died before exiting
    normally, which is when libgcov writes), and that measures nothing rather than 0."""
    text = data.decode("utf-8", errors="replace").splitlines()
    if not text or text[0] != GCOV_HEADER:
        raise ValueError("not a testprism gcov report")
    header = dict(line[2:].split(" ", 1) for line in text[1:3] if line.startswith("# ") and " " in line[2:])
    root = header.get("root", "").rstrip("/")
    if not root.startswith("/") or not header.get("gcda", "").isdigit():
        raise ValueError("gcov report without its root or data count")
    if int(header["gcda"]) == 0:
        raise ValueError("no process wrote gcov data: nothing built with --coverage ran to its exit")
    statements: dict[str, set[int]] = {}
    executed: dict[str, set[int]] = {}
    for number, line in enumerate(text[3:], start=4):
        if line.startswith("# error "):
            raise ValueError(f"gcov could not read {line[8:][:300]}")
        if not line.strip():
            continue
        try:
            document = bounded_json.loads(line)
            cwd = str(document.get("current_working_directory") or root)
            for entry in document["files"]:
                name = posixpath.normpath(posixpath.join(cwd, str(entry["file"])))
                if not name.startswith(root + "/"):
                    continue
                path = name[len(root) + 1:]
                for record in entry["lines"]:
                    statements.setdefault(path, set()).add(int(record["line_number"]))
                    if int(record["count"]):
                        executed.setdefault(path, set()).add(int(record["line_number"]))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise ValueError(f"gcov report line {number} is not gcov's JSON: {exc!r}") from exc
    return {path: MeasuredFile(frozenset(lines), frozenset(executed.get(path, ()))) for path, lines in statements.items()}


def parse_jacoco_report(data: bytes) -> dict[str, MeasuredFile]:
    """JaCoCo's XML report → measured source files, named `package/File.java` (its
    `<package name="a/b">` and `<sourcefile name="File.java">`). A `<line>` is a statement
    (it holds bytecode instructions); executed when any of them ran (`ci` > 0). Read with
    defusedxml: the report is the run's (its DOCTYPE names JaCoCo's DTD, never fetched)."""
    try:
        root = defused_et.fromstring(data)
    except (defused_et.ParseError, ValueError) as exc:
        raise ValueError(f"not a JaCoCo XML report: {exc}") from exc
    if root.tag != "report":
        raise ValueError("not a JaCoCo XML report")
    measured = {}
    try:
        for package in root.iter("package"):
            for source in package.iter("sourcefile"):
                lines = [(int(line.get("nr", "")), int(line.get("ci", ""))) for line in source.iter("line")]
                name = f"{package.get('name', '')}/{source.get('name', '')}".lstrip("/")
                measured[name] = MeasuredFile(frozenset(n for n, _ in lines), frozenset(n for n, ci in lines if ci))
    except ValueError as exc:
        raise ValueError(f"JaCoCo report with a line that is not one: {exc}") from exc
    return measured


LCOV_HEADER = "# testprism llvm-cov"


def parse_lcov_report(data: bytes) -> dict[str, MeasuredFile]:
    """The Rust collector's report → measured files: `# testprism llvm-cov`, then `llvm-cov
    export --format=lcov` of the changed files, each record's `SF:` already a repository
    path. A `DA:line,count` line is a statement, executed when its count is non-zero (llvm-cov
    has summed every test binary's counts). Raises ValueError on anything else: the report
    is the run's."""
    text = data.decode("utf-8", errors="replace").splitlines()
    if not text or text[0] != LCOV_HEADER:
        raise ValueError("not a testprism llvm-cov report")
    statements: dict[str, set[int]] = {}
    executed: dict[str, set[int]] = {}
    path = None
    for number, line in enumerate(text[1:], start=2):
        if line.startswith("SF:"):
            path = line[3:]
            statements.setdefault(path, set())
            executed.setdefault(path, set())
        elif line.startswith("DA:"):
            fields = line[3:].split(",")
            if path is None or len(fields) < 2 or not fields[0].isdigit() or not fields[1].isdigit():
                raise ValueError(f"llvm-cov report line {number} is not a line count: {line[:200]!r}")
            statements[path].add(int(fields[0]))
            if int(fields[1]):
                executed[path].add(int(fields[0]))
        elif line == "end_of_record":
            path = None
    return {p: MeasuredFile(frozenset(lines), frozenset(executed[p])) for p, lines in statements.items()}


def parse_pcov_report(data: bytes) -> dict[str, MeasuredFile]:
    """The PHP collector's report (`{"data_files": n, "files": {path: [lines per process]},
    "error": ...}`, each process's lines being PCOV's `{"line": 1 ran | -1 did not}` of the
    executable lines) → measured files. Raises ValueError when the report is unreadable,
    says the data could not be read, or no PHP process wrote coverage (nothing was
    measured, which is not 0)."""
    files = _collector_files(data, "PCOV", "PCOV coverage could not be read", "no PHP process wrote coverage: none ran to its shutdown")
    measured = {}
    for path, runs in files.items():
        if not isinstance(runs, list) or not all(isinstance(lines, dict) for lines in runs):
            raise ValueError(f"PCOV coverage of {path[:200]!r} is not lists of lines")
        statements: set[int] = set()
        executed: set[int] = set()
        for lines in runs:
            for number, hit in lines.items():
                if not number.isdigit() or not isinstance(hit, int) or isinstance(hit, bool):
                    raise ValueError(f"PCOV coverage of {path[:200]!r}: {number[:20]!r}: {hit!r} is no line")
                statements.add(int(number))
                if hit > 0:
                    executed.add(int(number))
        measured[path] = MeasuredFile(frozenset(statements), frozenset(executed))
    return measured


def parse_ruby_report(data: bytes) -> dict[str, MeasuredFile]:
    """The Ruby collector's report (`{"data_files": n, "files": {path: [lines per process]},
    "error": ...}`, each process's lines being Ruby's `Coverage` lines array: index i is
    line i + 1, null where the line is no statement, else how often it ran) → measured
    files. Raises ValueError when the report is unreadable, says the data could not be
    read, or no Ruby process wrote coverage (nothing was measured, which is not 0)."""
    files = _collector_files(data, "Ruby coverage", "Ruby coverage could not be read", "no Ruby process wrote coverage: none ran to its exit")
    measured = {}
    for path, runs in files.items():
        statements: set[int] = set()
        executed: set[int] = set()
        if not isinstance(runs, list) or not all(isinstance(lines, list) for lines in runs):
            raise ValueError(f"Ruby coverage of {path[:200]!r} is not lists of line counts")
        for lines in runs:
            for number, count in enumerate(lines, start=1):
                if count is None:
                    continue
                if not isinstance(count, int) or isinstance(count, bool):
                    raise ValueError(f"Ruby coverage of {path[:200]!r} line {number}: {count!r} is no count")
                statements.add(number)
                if count:
                    executed.add(number)
        measured[path] = MeasuredFile(frozenset(statements), frozenset(executed))
    return measured


def _measured(measured: dict[str, MeasuredFile], path: str) -> MeasuredFile | None:
    if path in measured:
        return measured[path]
    return next((m for name, m in measured.items() if name.endswith("/" + path)), None)


@dataclass
class CoverageCounts:
    """Numerators and denominators of ΔC and EC, and what was missed (for the audit)."""

    changed_lines: int = 0
    covered_lines: int = 0
    changed_functions: int = 0
    entered_functions: int = 0
    missed_lines: list[str] = field(default_factory=list)  # path:line
    executed_lines: list[str] = field(default_factory=list)  # path:line, the counted lines that ran
    missed_functions: list[str] = field(default_factory=list)  # path:name

    @property
    def delta_c(self) -> float | None:
        return self.covered_lines / self.changed_lines if self.changed_lines else None

    @property
    def ec(self) -> float | None:
        return self.entered_functions / self.changed_functions if self.changed_functions else None


def score_changes(changes: Iterable[ChangedFile], measured: dict[str, MeasuredFile]) -> CoverageCounts:
    """ΔC and EC of one run: `measured` is what it executed (empty: nothing ran)."""
    counts = CoverageCounts()
    for change in changes:
        seen = _measured(measured, change.path)
        for line, span in sorted(change.lines.items()):
            if seen is not None and not any(n in seen.statements for n in span):
                continue  # coverage says it is not executable (excluded, optimised away)
            counts.changed_lines += 1
            if seen is not None and any(n in seen.executed for n in span):
                counts.covered_lines += 1
                counts.executed_lines.append(f"{change.path}:{line}")
            else:
                counts.missed_lines.append(f"{change.path}:{line}")
        for function in change.functions:
            counts.changed_functions += 1
            if seen is not None and any(n in seen.executed for n in function.body):
                counts.entered_functions += 1
            else:
                counts.missed_functions.append(f"{change.path}:{function.name}")
    return counts
