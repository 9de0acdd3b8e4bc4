"""CTest's console log (`ctest`, `ctest --output-on-failure`, `-V`), as Multi-SWE-bench reads
its C and C++ repositories' (`^\\d+/\\d+ Test #\\d+: name ....   Passed`).

Names are CTest's test names (`test-unicode1_cpp11`), as those benchmarks list them and as
CTest's own JUnit report (`--output-junit`) names its cases' classname and name.
"""

from __future__ import annotations

import re

from testprism.tasks.execution.logs.results import Results, lines

#: `  3/12 Test  #3: name ........   Passed    0.02 sec`, `***Failed`, `***Timeout`,
#: `***Exception: SegFault`, `***Skipped`, `***Not Run (Disabled)`, `***Not Run` (no executable)
_RESULT = re.compile(r"^\s*\d+/\d+ +Test +#\d+: (\S.*?) ?\.* *"
                     r"(?:(Passed)|\*\*\*(Failed|Timeout|Exception|Skipped|Not Run(?: \(Disabled\))?))(?=\s|:|$)")
_OUTCOME = {"Failed": "failed", "Timeout": "error", "Exception": "error", "Skipped": "skipped",
            "Not Run (Disabled)": "skipped", "Not Run": "error"}


def ctest(log: str, results: Results) -> None:
    """One line per test once it ends. A test CTest could not run (its program was not built:
    `***Not Run`) is an error, never a pass; a disabled or skipped one is skipped."""
    for line in lines(log):
        if match := _RESULT.match(line):
            results.add(match[1], "passed" if match[2] else _OUTCOME[match[3]])
