"""Jest (`--verbose`), Mocha (the `spec` reporter) and Vitest (`--reporter=verbose`).

Jest's and Vitest's cases are named as their JUnit reports name them, the form
tasks/execution/junit.py's `junit_id` gives the benchmarks' ids: the test file as classname,
then the describe blocks and the title joined by ` > ` (`sample.test.js::math > nested >
throws`; Jest's own separator ` › ` is read as ` > `, inside a title too, as `junit_id` reads it
in an id). So Vitest's `sample.test.js > math > adds` (SWE-bench's id for it), Jest's
`math › adds` and SWE-bench's Jest id `adds` (the title alone) all meet the case. Mocha's are its
`fullTitle()`, titles joined by spaces (`math nested throws`), as SWE-bench and Multi-SWE-bench
name them. A test file that failed to load is one `error` named by its file, so that its tests
are missing, never passed.
"""

from __future__ import annotations

import re

from testprism.tasks.execution.junit import TITLE_SEPARATOR, junit_id
from testprism.tasks.execution.logs.results import Results, lines

_DURATION = re.compile(r" \(\d+(?:\.\d+)? ?m?s\)$")


def _tree(log_lines: list[tuple[int, str]], results: Results, marks: dict[str, str], join: str,
          file: str = "") -> None:
    """A tree of titles indented two spaces a level: a line with one of `marks`' first
    characters is a test under the groups above it, any other a group. With `file` (Jest's),
    the name is junit_id's of `file > groups > title`."""
    groups: list[str] = []
    for level, text in log_lines:
        del groups[max(level - 1, 0):]
        outcome = marks.get(text[0])
        if outcome is None:
            groups.append(text)
            continue
        title = _DURATION.sub("", text[1:].strip())
        name = join.join([*groups, title])
        results.add(junit_id(f"{file}{TITLE_SEPARATOR}{name}") if file else name, outcome)


def _indent(line: str) -> int:
    return (len(line) - len(line.lstrip(" "))) // 2


#: ✓ passed, ✕ failed, ○ skipped (`○ skipped title`), ✎ todo (`✎ todo title`)
_JEST = {"✓": "passed", "✕": "failed", "○": "skipped", "✎": "skipped"}
_JEST_FILE = re.compile(r"^(PASS|FAIL) (\S+)")


def jest(log: str, results: Results) -> None:
    """Each file's tree follows its `PASS|FAIL path` line and ends at its first failure's
    details (`  ● `); `● Test suite failed to run` makes the file an error. A tree before any
    such line (none was printed) is not read: its tests would have no file."""
    tree: list[tuple[int, str]] = []
    current, inside = "", False
    for line in lines(log):
        if match := _JEST_FILE.match(line):
            _tree(tree, results, _JEST, " › ", current)
            tree, current, inside = [], match[2].removeprefix("./"), True
        elif line.startswith("  ● "):
            inside = False
            if line == "  ● Test suite failed to run" and current:
                results.add(current, "error", "Test suite failed to run")
        elif line.startswith("Test Suites:"):
            break
        elif inside and line.strip():
            text = line.strip()
            text = re.sub(r"^([○✎]) (?:skipped|todo) ", r"\1 ", text)
            tree.append((_indent(line), text))
    _tree(tree, results, _JEST, " › ", current)


#: ✔ passed (✓ before Mocha 7), `N) title` failed, `- title` pending
_MOCHA_FAILED = re.compile(r"^\d+\) ")
_MOCHA_END = re.compile(r"^\s+\d+ passing \(")


def mocha(log: str, results: Results) -> None:
    """The tree before `N passing (..)`; a failed hook is a failed test named
    `"before all" hook for "title"` (its tests did not run, so they are missing).

    Without that summary line the log holds no result: the spec reporter prints it on every
    run that reached its end (`0 passing` when all failed), and a bare `N) ` line is too
    plain a mark to trust alone (random bytes make one now and then)."""
    tree: list[tuple[int, str]] = []
    for line in lines(log):
        if _MOCHA_END.match(line):
            _tree(tree, results, {"✔": "passed", "✓": "passed", "✕": "failed", "○": "skipped"}, " ")
            return
        text = line.strip()
        if not text:
            continue
        text = _MOCHA_FAILED.sub("✕ ", text)
        text = "○ " + text[2:] if text.startswith("- ") else text
        tree.append((_indent(line), text))


#: ` ✓ file > group > title 3ms`, ` × ...`, ` ↓ ...` (skipped or todo)
_VITEST = re.compile(r"^ ([✓×↓]) (.+?)(?: \d+(?:\.\d+)?ms)?(?: \[skipped\])?$")
_VITEST_FILE = re.compile(r"^ FAIL  (\S+) \[ .* \]$")
_VITEST_OUTCOME = {"✓": "passed", "×": "failed", "↓": "skipped"}


def vitest(log: str, results: Results) -> None:
    """One line per test with its full name (`file > describe > title`, named as junit_id
    names it); ` FAIL  file [ file ]` is a file that failed to load. The failures' details
    repeat names as ` FAIL  file > title`, never as results."""
    for line in lines(log):
        if match := _VITEST.match(line):
            results.add(junit_id(match[2]), _VITEST_OUTCOME[match[1]])
        elif match := _VITEST_FILE.match(line):
            results.add(match[1], "error", "failed to load")
