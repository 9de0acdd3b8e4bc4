"""PHPUnit's `--testdox` output (`--log-junit` goes through tasks/execution/junit.py).

Names are `Class > Prettified name`, as SWE-bench Multilingual's lists give them.
"""

from __future__ import annotations

import re

from testprism.tasks.execution.logs.results import Results, lines

#: ✔ passed, ✘ failed or errored (testdox does not tell them apart), ↩ skipped, ∅ incomplete
#: (not run to its end: skipped), ☢ risky (it ran and passed, but asserted nothing)
_TESTDOX = {"✔": "passed", "✘": "failed", "↩": "skipped", "∅": "skipped", "☢": "passed"}
_RESULT = re.compile(r"^ ([✔✘↩∅☢]) (.+)$")
#: a class's heading: `Sample` (PHPUnit 9), `Sample (Tests\Sample)` (PHPUnit 10+)
_CLASS = re.compile(r"^(\S.*?)(?: \([\w\\]+\))?$")


def phpunit(log: str, results: Results) -> None:
    """Results up to `Time: ...`, after which PHPUnit repeats the non-successful ones; a
    failure's details (`   │ ...`) are passed over."""
    heading = ""
    for line in lines(log):
        if line.startswith("Time: "):
            break
        if match := _RESULT.match(line):
            if heading:
                results.add(f"{heading} > {match[2].strip()}", _TESTDOX[match[1]])
        elif line and not line.startswith(" ") and not line.startswith("PHPUnit ") \
                and (match := _CLASS.match(line)):
            heading = match[1]
