"""Maven logs read as SWE-bench reads them (`parse_log_maven`): Surefire prints no line for a
test that passed, so each test runs in an `mvn test -Dtest=Class#method` (or `mvnd`) of its
own under the shell's trace (`set -x`), and the BUILD SUCCESS or FAILURE that follows a
traced command is that test's outcome. Names are the `-Dtest` values (`pkg.Class#method`),
as the instance's checks give them.
"""

from __future__ import annotations

import re

from testprism.tasks.execution.logs.results import Results, lines

#: a traced Maven command (`+ mvn …`, `++ mvnd …`) running one test: its `-Dtest` value
_TRACED = re.compile(r"^\++ (?:\S*/)?mvnd? .*?-Dtest=(?:'([^']+)'|\"([^\"]+)\"|(\S+))")
#: the end of a Maven build: `[INFO] BUILD SUCCESS`, `[INFO] BUILD FAILURE`
_BUILD = re.compile(r"^(?:\[\w+\] )?BUILD (SUCCESS|FAILURE)$")


def maven(log: str, results: Results) -> None:
    """The outcome of each traced one-test Maven command. A command without its BUILD line
    (killed, or the trace of another command came first) reports nothing for its test."""
    current: str | None = None
    for line in lines(log):
        if match := _TRACED.match(line):
            current = next(group for group in match.groups() if group is not None)
        elif current is not None and (match := _BUILD.match(line)):
            results.add(current, "passed" if match[1] == "SUCCESS" else "failed")
            current = None
