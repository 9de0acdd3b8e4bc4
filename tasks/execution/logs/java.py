"""Maven logs, in the two forms the benchmarks read them.

`maven`, as SWE-bench reads them (`parse_log_maven`): Surefire prints no line for a test that
passed, so each test runs in an `mvn test -Dtest=Class#method` (or `mvnd`, or the project's own
wrapper `./mvnw`) of its own under the shell's trace (`set -x`), and the BUILD SUCCESS or
FAILURE that follows a traced command is that test's outcome. Names are the `-Dtest` values
(`pkg.Class#method`, or a class `pkg.Class`), as the instance's checks give them.

`surefire`, as Multi-SWE-bench reads them (its Java repositories' `parse_log`): one `mvn test`
over everything, and Surefire's line per test class, `Tests run: 5, Failures: 1, Errors: 0,
Skipped: 0, Time elapsed: 0.1 s <<< FAILURE! -- in org.x.FooTest`, is that class's outcome.
Names are the classes (`org.x.FooTest`), as Multi-SWE-bench's and SWE-bench-java's lists give
them; junit.py `matches` reads such an id as the whole class.
"""

from __future__ import annotations

import re

from testprism.tasks.execution.logs.results import Results, lines

#: a traced Maven command (`+ mvn …`, `++ mvnd …`, `+ ./mvnw …`) running one test: its `-Dtest` value
_TRACED = re.compile(r"^\++ (?:\S*/)?mvn[dw]? .*?-Dtest=(?:'([^']+)'|\"([^\"]+)\"|(\S+))")
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


#: Surefire's header of a class it is about to run (`[INFO] Running org.x.FooTest`)
_RUNNING = re.compile(r"^(?:\[\w+\] )?Running ([\w$.]+)$")
#: Surefire's line for a class it ran: `… Time elapsed: 0.1 s -- in org.x.FooTest` (3.x),
#: `… s - in org.x.FooTest` (2.19-2.22), `… Time elapsed: 0.1 sec` after `Running X` (older),
#: each with `<<< FAILURE!` before the class when one of its tests failed
_CLASS_RUN = re.compile(r"^(?:\[\w+\] )?Tests run: (\d+), Failures: (\d+), Errors: (\d+), Skipped: (\d+), "
                        r"Time elapsed: [\d.,]+ s(?:ec)?\b(?:.*? in ([\w$.]+))?")


def surefire(log: str, results: Results) -> None:
    """Each class's outcome from its `Tests run:` line: failed when a test failed or errored,
    skipped when every test was, passed otherwise; a class whose line names no class is the
    one its `Running` header named. The module's totals (`Tests run:` without `Time elapsed`)
    are not a class. A class that ran no test reports nothing."""
    running: str | None = None
    for line in lines(log):
        if match := _RUNNING.match(line):
            running = match[1]
        elif match := _CLASS_RUN.match(line):
            name = match[5] or running
            run, failures, errors, skipped = (int(match[i]) for i in range(1, 5))
            running = None
            if name is None or run == 0:
                continue
            if failures or errors:
                results.add(name, "failed" if failures else "error")
            else:
                results.add(name, "skipped" if skipped == run else "passed")
