"""Jest (`--verbose`), Mocha (the `spec` reporter) and Vitest (`--reporter=verbose`).

Names are as each runner prints a test's full title: Jest's `math › nested › throws`, Mocha's
titles joined by spaces (its `fullTitle()`: `math nested throws`), Vitest's
`sample.test.js > math > nested > throws`. A test file that failed to load is one `error`
named by its file, so that its tests are missing, never passed.
"""

from __future__ import annotations

import re

from testprism.tasks.execution.logs.results import Results, lines

_DURATION = re.compile(r" \(\d+(?:\.\d+)? ?m?s\)$")


def _tree(log_lines: list[tuple[int, str]], results: Results, marks: dict[str, str], join: str) -> None:
    """A tree of titles indented two spaces a level: a line with one of `marks`' first
    characters is a test under the groups above it, any other a group."""
    groups: list[str] = []
    for level, text in log_lines:
        del groups[max(level - 1, 0):]
        outcome = marks.get(text[0])
        if outcome is None:
            groups.append(text)
            continue
        title = _DURATION.sub("", text[1:].strip())
        results.add(join.join([*groups, title]), outcome)


def _indent(line: str) -> int:
    return (len(line) - len(line.lstrip(" "))) // 2


#: ✓ passed, ✕ failed, ○ skipped (`○ skipped title`), ✎ todo (`✎ todo title`)
_JEST = {"✓": "passed", "✕": "failed", "○": "skipped", "✎": "skipped"}
_JEST_FILE = re.compile(r"^(PASS|FAIL) (\S+)")


def jest(log: str, results: Results) -> None:
    """Each file's tree follows its `PASS|FAIL path` line and ends at its first failure's
    details (`  ● `); `● Test suite failed to run` makes the file an error."""
    tree: list[tuple[int, str]] = []
    current, inside = "", False
    for line in lines(log):
        if match := _JEST_FILE.match(line):
            _tree(tree, results, _JEST, " › ")
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
    _tree(tree, results, _JEST, " › ")


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
    """One line per test with its full name; ` FAIL  file [ file ]` is a file that failed to
    load. The failures' details repeat names as ` FAIL  file > title`, never as results."""
    for line in lines(log):
        if match := _VITEST.match(line):
            results.add(match[2], _VITEST_OUTCOME[match[1]])
        elif match := _VITEST_FILE.match(line):
            results.add(match[1], "error", "failed to load")
