"""`cargo test` (libtest's human output).

`cargo test -- -Z unstable-options --format json` needs a nightly toolchain; this machine has
stable only, so that format has no parser here.
"""

from __future__ import annotations

import re

from testprism.tasks.execution.logs.results import Results, lines

#: `test tests::x ... ok`, `test tests::x - should panic ... ok`, `test tests::x ... ignored,
#: reason`, a doc test `test src/lib.rs - double (line 3) ... ok`; the name may hold spaces,
#: and `... ` is the last on the line
_RESULT = re.compile(r"^test (.+?)(?: - should panic)? \.\.\. (ok|FAILED|ignored(?:, .*)?)$")
_CARGO = {"ok": "passed", "FAILED": "failed", "ignored": "skipped"}
#: `running 6 tests`: the start of one test binary's results
_RUNNING = re.compile(r"^running \d+ tests?$")


def cargo(log: str, results: Results) -> None:
    """Result lines only between a binary's `running N tests` and its `test result:` line,
    so a test's own output (shown for failures, after the results) is never read as one."""
    inside = False
    for line in lines(log):
        if _RUNNING.match(line):
            inside = True
        elif line.startswith("test result: "):
            inside = False
        elif inside and (match := _RESULT.match(line)):
            results.add(match[1], _CARGO[match[2].split(",")[0]])
