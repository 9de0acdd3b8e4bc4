"""`go test -v` and `go test -json` logs.

Names are `package::TestX/sub` where the package is known, as gotestsum's JUnit names a case
(junit.matches lets a bare `TestX` match it too), so that two packages' `TestPasses` stay two
tests.
"""

from __future__ import annotations

import re

from testprism.tasks.execution.logs.results import Results, lines
from testprism.tasks.model import bounded_json

_GO = {"PASS": "passed", "FAIL": "failed", "SKIP": "skipped"}
#: `--- PASS: TestX/sub (0.00s)`, indented four spaces per subtest level; a test's own
#: `t.Log` lines are indented too but start with `file.go:N: `, never with `--- `
_RESULT = re.compile(r"^(?: {4})*--- (PASS|FAIL|SKIP): (.+) \(\d+(?:\.\d+)?s\)$")
#: the line that closes a package: `ok  \tpkg\t0.01s`, `FAIL\tpkg\t0.01s`, `ok  \tpkg\t(cached)`
_PACKAGE = re.compile(r"^(?:ok|FAIL|---)\s+(\S+)\t")


def go_test(log: str, results: Results) -> None:
    """`go test -v`: a package's tests print before the line that names the package, so
    results are held until it comes; tests of a package whose line never came (the binary
    was killed) keep their bare names."""
    pending: list[tuple[str, str]] = []
    for line in lines(log):
        if match := _RESULT.match(line):
            pending.append((match[2], _GO[match[1]]))
        elif (match := _PACKAGE.match(line)) and pending:
            for name, outcome in pending:
                results.add(f"{match[1]}::{name}", outcome)
            pending.clear()
    for name, outcome in pending:
        results.add(name, outcome)


def go_test_json(log: str, results: Results) -> None:
    """`go test -json` (test2json): one event a line; a test's last pass/fail/skip event
    decides it. Lines that are not JSON events (build errors, a tool's own output) are
    passed over; a line past the JSON bounds (tasks/model/bounded_json.py) makes the log
    unreadable."""
    for line in log.splitlines():
        if not line.startswith("{"):
            continue
        try:
            event = bounded_json.loads(line)
        except bounded_json.JSONTooLarge:
            raise
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        action, test, package = event.get("Action"), event.get("Test"), event.get("Package")
        if action in ("pass", "fail", "skip") and isinstance(test, str):
            name = f"{package}::{test}" if isinstance(package, str) and package else test
            results.add(name, {"pass": "passed", "fail": "failed", "skip": "skipped"}[action])
