"""RSpec (`--format documentation`, `--format json`) and Minitest (`--verbose`).

Names are an example's full description (`Math nested passes`, RSpec's `full_description`)
and Minitest's `Class#test_name`.
"""

from __future__ import annotations

import re

from testprism.tasks.execution.logs.results import Results, lines
from testprism.tasks.model import bounded_json

_FAILED_MARK = re.compile(r" \(FAILED - \d+\)$")
#: what follows the listing, at the margin
_TOTALS = re.compile(r"^\d+ examples?, \d+ failures?", re.MULTILINE)
_AFTER = re.compile(r"^(?:Pending:|Failures:|Failed examples:|Finished in )")


def rspec(log: str, results: Results) -> None:
    """`--format documentation`: groups and examples are indented two spaces a level, and a
    line is a group exactly when the next line is indented deeper. The listing ends at the
    first line back at the margin (`Pending:`, `Failures:`, `Finished in`). Since any
    indented text looks like such a listing, a log without RSpec's totals line (`8 examples,
    4 failures`) is not one (ValueError: unreadable)."""
    if not _TOTALS.search(log):
        raise ValueError("no RSpec totals line")
    listing: list[tuple[int, str]] = []
    for text in lines(log):
        if not text:
            continue
        if listing and _AFTER.match(text):
            break
        indent = len(text) - len(text.lstrip(" "))
        if indent % 2 == 0:
            listing.append((indent // 2, text.strip()))
    groups: list[str] = []
    for index, (level, text) in enumerate(listing):
        del groups[level:]
        deeper = index + 1 < len(listing) and listing[index + 1][0] > level
        if deeper:
            groups.append(text)
            continue
        outcome = "passed"
        # an example's marks: `(FAILED - 2)`, `(PENDING: reason)`, none for a pass
        if mark := _FAILED_MARK.search(text):
            text, outcome = text[:mark.start()], "failed"
        elif text.endswith(")") and (pending := text.find(" (PENDING: ")) >= 0:
            text, outcome = text[:pending], "skipped"
        results.add(" ".join([*groups, text]), outcome)


_RSPEC_JSON = {"passed": "passed", "failed": "failed", "pending": "skipped"}


def rspec_json(log: str, results: Results) -> None:
    """`--format json`: the report is one JSON object, on a line of its own among whatever
    else the run printed, read within the JSON bounds (tasks/model/bounded_json.py)."""
    for line in log.splitlines():
        start = line.find('{"version"')
        if start < 0:
            continue
        report = bounded_json.loads(line[start:])
        for example in report.get("examples", ()):
            name, status = example.get("full_description"), example.get("status")
            if isinstance(name, str) and status in _RSPEC_JSON:
                results.add(name, _RSPEC_JSON[status])


#: `Class#test_name = 0.00 s = .` (`.` pass, F failure, E error, S skip)
_MINITEST = re.compile(r"^([^#]+#.+?) = \d+\.\d+ s = ([.FES])$")


def minitest(log: str, results: Results) -> None:
    """`--verbose`: one line per test; the name may hold spaces."""
    for line in lines(log):
        if match := _MINITEST.match(line):
            results.add(match[1], {".": "passed", "F": "failed", "E": "error", "S": "skipped"}[match[2]])
