"""Why a suite rejected a state when its JUnit report cannot say, read from the run's output.

A suite may report by its exit status alone (docs/benchmark-format.md allows it), and a
report may hold no failing case although the run failed (a part of crossval's merged suite
that reports by exit status). Such a rejection is told apart by evidence in the output the
run left, never by the missing report: the rules below are tried in order, each a small
function of the output, and the first that finds its evidence decides:

1. `collection_error`: the suite never ran its tests (pytest's `ERROR collecting`, an
   unknown fixture, unittest's `Failed to import test module`, `go test`'s
   `[build failed]` / `[setup failed]`, pytest's `no tests ran`): an execution-logic error;
2. `own_crash`: a traceback whose innermost frame lies in the suite's own files (under the
   program's `tmp/`, where a suite is installed, or a Go `_test.go` file) and whose exception is not
   an assertion (Python tracebacks and pytest's `path:line: Error` lines, Node's stacks, Go
   panics): an execution-logic error;
3. `assertion`: an assertion failed (Python's AssertionError, pytest's `E  assert`,
   unittest's `FAIL:`, Go's `--- FAIL:` without a panic, Node's ERR_ASSERTION): the suite
   judged the state, a faulty check when the state is the reference.

Nothing found (a bare `exit 1`, a crash inside the program's own code, output cut before
its evidence) is `unclassified`: the output cannot tell a crash from a rejection.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

EXECUTION_LOGIC_ERROR, FAULTY_CHECK, UNCLASSIFIED = "execution_logic_error", "faulty_check", "unclassified"

#: characters of the deciding line kept in the evidence
WHY_CHARS = 300


@dataclass(frozen=True)
class Reading:
    """What the output shows: the kind it supports and the line that decided it."""

    kind: str
    why: str


#: a path of the suite's own: installed under the program's tmp/ (`/workspace/program/tmp/...`
#: in a sandbox, `tmp/...` relative to the program), or a Go test file, which Go compiles into
#: tests only. Not any `tmp/`: a work area under /tmp or /var/tmp holds the program's files too
_OWN_PATH = re.compile(r"(?:^|/)program/tmp/|^(?:\./)?tmp/|_test\.go$")
#: exceptions that are an assertion's verdict, not a crash
_ASSERTIONS = {"AssertionError", "assert", "AssertionError [ERR_ASSERTION]"}

_COLLECTION = re.compile(
    r"^.*(?:\bERROR collecting \S+|\berrors? during collection\b|\bfixture '[^']*' not found"
    r"|\bFailed to import test module\b|\[(?:build|setup) failed\]|\bno tests ran\b).*$",
    re.MULTILINE)
#: a Python traceback's frame, and the unindented line that names its exception
_PY_FRAME = re.compile(r'^\s+File "([^"]+)", line (\d+)')
_PY_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*)(?::|$)")
#: pytest's location line closing a failure's traceback: `path:line: Exception`
_PYTEST_LOCATION = re.compile(r"^(\S+?\.py):(\d+): ([A-Za-z_][\w.]*)$", re.MULTILINE)
#: Node: an error's line, then its first stack frame (`at f (path:line:col)` or `at path:line:col`)
_NODE_STACK = re.compile(r"^(?:Uncaught )?(\w*Error(?: \[\w+\])?)(?::.*)?\n\s+at (?:.*?\()?(?:file://)?([^\s():]+):(\d+):\d+\)?",
                         re.MULTILINE)
#: Go: a panic, and the frames of its goroutine (`\t/path/file.go:12 +0x1d`)
_GO_PANIC = re.compile(r"^panic: .*$", re.MULTILINE)
_GO_FRAME = re.compile(r"^\t(\S+\.go):(\d+)", re.MULTILINE)
_GO_RUNTIME = re.compile(r"/src/(?:runtime|testing)/")
_ASSERTION = re.compile(
    r"^(?:.*\bAssertionError\b.*|E\s+assert\b.*|FAIL: \w.*|\s*--- FAIL: .*|.*\bERR_ASSERTION\b.*"
    r"|FAILED \S+ - assert\b.*)$",
    re.MULTILINE)


def _line(text: str) -> str:
    return text.strip()[:WHY_CHARS]


def _python_tracebacks(output: str) -> Iterator[tuple[str, str, str]]:
    """(innermost frame's path, its line, the exception) of each Python traceback, a
    traceback whose head the tail cut off included."""
    frame: tuple[str, str] | None = None
    for line in output.splitlines():
        found = _PY_FRAME.match(line)
        if found:
            frame = (found.group(1), found.group(2))
        elif frame is not None and line[:1].strip():
            exception = _PY_EXCEPTION.match(line)
            if exception:
                yield frame[0], frame[1], exception.group(1)
            frame = None


def _crashes(output: str) -> Iterator[tuple[str, str, str]]:
    """(innermost path, line, exception) of every traceback the output shows."""
    yield from _python_tracebacks(output)
    for found in _PYTEST_LOCATION.finditer(output):
        yield found.group(1), found.group(2), found.group(3)
    for found in _NODE_STACK.finditer(output):
        yield found.group(2), found.group(3), found.group(1)
    for panic in _GO_PANIC.finditer(output):
        frame = next((f for f in _GO_FRAME.finditer(output, panic.end()) if not _GO_RUNTIME.search(f.group(1))), None)
        if frame is not None:
            yield frame.group(1), frame.group(2), "panic"


def collection_error(output: str) -> Reading | None:
    found = _COLLECTION.search(output)
    return Reading(EXECUTION_LOGIC_ERROR, f"collection error: {_line(found.group(0))}") if found else None


def own_crash(output: str) -> Reading | None:
    for path, line, exception in _crashes(output):
        if exception not in _ASSERTIONS and _OWN_PATH.search(path):
            return Reading(EXECUTION_LOGIC_ERROR, f"{exception} in the suite's own {path}:{line}")
    return None


def assertion(output: str) -> Reading | None:
    if _GO_PANIC.search(output):  # `--- FAIL:` also heads a test that panicked
        return None
    found = _ASSERTION.search(output)
    return Reading(FAULTY_CHECK, f"assertion: {_line(found.group(0))}") if found else None


#: the rules, in the order they are tried
RULES: tuple[Callable[[str], Reading | None], ...] = (collection_error, own_crash, assertion)


def read_rejection(output: str) -> Reading:
    """The first rule's reading of `output`, or `unclassified` when none finds evidence."""
    for rule in RULES:
        reading = rule(output or "")
        if reading is not None:
            return reading
    return Reading(UNCLASSIFIED, "nothing in the output tells a crash of the suite from a rejection")
