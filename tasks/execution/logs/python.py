"""Python runners' logs: pytest's `-rA` summary (and `-v` lines), django's
`tests/runtests.py --verbosity 2`, sympy's `bin/test -C --verbose`.

Names are given as the JUnit path gives them where there is one (pytest: `junit_id`, so that
`tests/t.py::test_x[a b]` and a JUnit case of the same test are one name) and as the runner
prints them otherwise (django: `test_x (app.tests.Class.test_x)`; sympy: `test_x`), which is
how SWE-bench's lists name them.
"""

from __future__ import annotations

import re

from testprism.tasks.execution.junit import junit_id
from testprism.tasks.execution.logs.results import Results, lines

# -- pytest -------------------------------------------------------------------------------------

#: pytest's words, in the one vocabulary. An expected failure (XFAIL) is what the test
#: asserts, so it passes, as SWE-bench's grading counts it; an unexpected pass (XPASS) broke
#: the expectation, as `xfail_strict` says, so it does not
_PYTEST = {"PASSED": "passed", "FAILED": "failed", "ERROR": "error", "SKIPPED": "skipped",
           "XFAIL": "passed", "XPASS": "failed"}
_SUMMARY = re.compile(r"^(PASSED|FAILED|ERROR|XFAIL|XPASS) (\S.*)$")
#: a status word in `-v`'s line per test, `path::name[params] STATUS (reason)   [ 40%]`
_VERBOSE_STATUS = re.compile(r" (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)(?= \(|$)")


def _node_id(rest: str) -> tuple[str, str]:
    """A summary line's node id and message (after ` - `). The id holds no space before its
    parameters, and its parameters (`[a b]`, `[x - y]`) end at the first `]` that ends the
    line or is followed by ` - `: splitting at the first space or the first ` - ` is how
    peers cut `test_x[a b]` to `test_x[a`."""
    head = re.match(r"[^\s\[]+", rest)
    if head is None:
        return "", ""
    end = head.end()
    if rest[end:end + 1] == "[":
        close = [m.end() for m in re.finditer(r"\](?= - |$)", rest) if m.start() >= end]
        if close:
            end = close[0]
    return rest[:end], rest[end:].removeprefix(" - ")


def _verbose(line: str) -> tuple[str, str] | None:
    """A `-v` line's node id and status word. Read with string steps and one scan rather
    than one pattern, whose backtracking over a line of many ` PASSED (` is quadratic."""
    body, bracket, percent = line.rpartition(" [")
    if not bracket or not percent.endswith("%]") or not percent[:-2].strip().isdigit():
        return None
    body = body.rstrip()
    for match in _VERBOSE_STATUS.finditer(body):
        test_id, rest = body[:match.start()], body[match.end():]
        if "::" in test_id and not test_id[0].isspace() and (not rest or rest.endswith(")")):
            return test_id, match[1]
    return None


def pytest(log: str, results: Results) -> None:
    """`pytest -rA`: the short test summary's PASSED/FAILED/ERROR/XFAIL/XPASS lines name
    their tests; SKIPPED lines there name a file and line, not a test, so skipped tests are
    named only where `-v` printed their own line. A collection error names its file."""
    for line in lines(log):
        if verbose := _verbose(line):
            results.add(junit_id(verbose[0]), _PYTEST[verbose[1]])
        elif match := _SUMMARY.match(line):
            test_id, message = _node_id(match[2])
            if test_id:
                results.add(junit_id(test_id), _PYTEST[match[1]], message)


# -- django's runtests.py ---------------------------------------------------------------------

#: `test_x (app.tests.Class.test_x)` (Python 3.11+) or `test_x (app.tests.Class)`, maybe
#: followed on the same line by ` ... ` and the status
_TEST_LINE = re.compile(r"^(\w+ \([\w.]+\))(?: \.\.\. ?(.*))?$")
#: a failing subtest, indented under its test: `  test_x (app.tests.Class.test_x) (p=1) ... FAIL`
_SUBTEST = re.compile(r"^  (\w+ \([\w.]+\)) (\(.*\)) \.\.\. (FAIL|ERROR)$")
_UNITTEST = {"ok": "passed", "FAIL": "failed", "ERROR": "error", "expected failure": "passed",
             "unexpected success": "failed", "skipped": "skipped"}
_WORDS = ("ok", "FAIL", "ERROR", "expected failure", "unexpected success", "skipped")


def _status(line: str) -> tuple[int, str] | None:
    """Where unittest's status word starts at the end of `line` (at its start or after a
    space), and the word: `ok`, `FAIL`, ..., `skipped 'reason'` (the reason's repr)."""
    for word in _WORDS:
        if line.endswith(word) and (len(line) == len(word) or line[-len(word) - 1].isspace()):
            return len(line) - len(word), word
    for quote in "'\"":
        start = line.find(f"skipped {quote}")
        if start >= 0 and (start == 0 or line[start - 1].isspace()) and line.endswith(quote) \
                and len(line) > start + 9:
            return start, "skipped"
    return None


#: unittest's rule between the progress lines and the failures' details
_RULE = re.compile(r"^(=|-){70}$")


class _DjangoTest:
    """One test's progress: its name, its docstring's first line, what followed ` ... `."""

    def __init__(self, name: str) -> None:
        self.name, self.description, self.output = name, "", []
        self.started = False  #: its ` ... ` was seen (on its line or its description's)
        self.failed_subtests = False

    def settle(self, results: Results) -> None:
        """The status is the last thing unittest printed for the test: what the test itself
        printed comes before it (`... a line the test prints ... ok` then `ok`)."""
        printed = [line.strip() for line in self.output if line.strip()]
        status = _status(printed[-1]) if printed else None
        if status:
            outcome = _UNITTEST[status[1]]
        elif self.failed_subtests:
            outcome = "failed"
        else:
            return  # no status: the run stopped inside it; the test is missing, not passed
        if self.failed_subtests and outcome == "passed":
            outcome = "failed"
        results.add(self.name, outcome)
        if self.description:
            # SWE-bench's lists name a test with a docstring by the docstring's first line
            results.add(self.description, outcome)


def django(log: str, results: Results) -> None:
    """`tests/runtests.py --verbosity 2`: one `name (dotted.Class) ... status` per test, a
    docstring's first line between the name and ` ... ` when the test has one, whatever the
    test prints between ` ... ` and the status, failing subtests indented under their test."""
    current: _DjangoTest | None = None
    for line in lines(log):
        if _RULE.match(line):
            break  # the failures' details, then the totals: no more progress lines
        if match := _SUBTEST.match(line):
            results.add(f"{match[1]} {match[2]}", _UNITTEST[match[3]])
            if current is not None and current.name == match[1]:
                current.failed_subtests = True
            continue
        if match := _TEST_LINE.match(line):
            if current is not None:
                current.settle(results)
            current = _DjangoTest(match[1])
            if match[2] is not None:
                current.started = True
                current.output.append(match[2])
            continue
        if current is None:
            continue
        if not current.started and " ... " in line:
            description, _, rest = line.partition(" ... ")
            if (status := _status(line)) and line[:status[0]].endswith(" ... "):
                description, rest = line[:status[0]].removesuffix(" ... "), status[1]
            current.description, current.started = description.strip(), True
            current.output.append(rest)
        elif current.started:
            current.output.append(line)
    if current is not None:
        current.settle(results)


# -- sympy's bin/test --------------------------------------------------------------------------

#: sympy's marks: ok, F failed, E exception, f expected failure (it asserts the bug: passed,
#: as XFAIL above), X unexpected pass (failed), s skipped (after its reason), w skipped as
#: slow, T timed out
_SYMPY = {"ok": "passed", "F": "failed", "E": "error", "f": "passed", "X": "failed", "s": "skipped",
          "w": "skipped", "T": "error"}
#: a file's header: `sympy/x/tests/test_y.py[8] `
_SYMPY_FILE = re.compile(r"^\S+\.py\[\d+\]")
_SYMPY_TEST = re.compile(r"^(test_\w*)(?: |$)")
#: the file's verdict padded onto its last test's line
_SYMPY_VERDICT = re.compile(r"\s+\[(?:OK|FAIL)\]$")


def sympy(log: str, results: Results) -> None:
    """`bin/test --verbose`: after a file's header, `test_name` then whatever the test
    prints then its mark, the last word before the next test's name; the listing ends at
    the first rule (`____`, before the failures' details) or the totals, which a passing run
    prints inside a rule of its own (`==== tests finished: 8 passed, in 0.10 seconds ====`):
    read as the last test's output, that line hid its mark."""
    name, printed = "", []

    def settle() -> None:
        words = " ".join(printed).split()
        if name and words and words[-1] in _SYMPY:
            results.add(name, _SYMPY[words[-1]])

    inside = False
    for line in lines(log):
        if _SYMPY_FILE.match(line):
            settle()
            name, printed, inside = "", [], True
        elif line.startswith("____") or line.strip("= ").startswith("tests finished:"):
            break
        elif inside and (match := _SYMPY_TEST.match(line)):
            settle()
            name, printed = match[1], [_SYMPY_VERDICT.sub("", line[match.end():])]
        elif inside:
            printed.append(_SYMPY_VERDICT.sub("", line))
    settle()
