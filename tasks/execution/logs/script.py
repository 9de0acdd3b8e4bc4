"""SWE-bench Pro's per-instance `parser.py`: what it leaves, read here.

Pro ships, for each instance, a Python script that reads the run's stdout and stderr and
writes `output.json` (`{"tests": [{"name": ..., "status": "PASSED|FAILED|SKIPPED|ERROR"}]}`).
The script is the benchmark's code, as untrusted as a suite: it runs in the sandbox, after
the checks' command, never on the host (the run's wiring: docs/benchmark-format.md, "Test
logs"). What comes back to the harness is `output.json`'s bytes, parsed here within the
same bounds as a log and the JSON bounds of tasks/model/bounded_json.py. Pro's grading
counts a test as passing only when its status is PASSED; a status outside Pro's four words
is read as an error (not passed), its word kept.
"""

from __future__ import annotations

from testprism.tasks.execution.junit import junit_id
from testprism.tasks.execution.logs.results import Results
from testprism.tasks.model import bounded_json

_PRO = {"PASSED": "passed", "FAILED": "failed", "SKIPPED": "skipped", "ERROR": "error"}


def script(log: str, results: Results) -> None:
    """`output.json` as Pro's parser.py writes it; anything else is unreadable (ValueError)."""
    report = bounded_json.loads(log)
    tests = report.get("tests") if isinstance(report, dict) else None
    if not isinstance(tests, list):
        raise ValueError("output.json has no list `tests`")
    results.report_read = True  # an empty list is Pro's report of no test run (a build failure)
    for test in tests:
        if not isinstance(test, dict) or not isinstance(test.get("name"), str):
            raise ValueError("a test of output.json has no string `name`")
        status = test.get("status")
        outcome = _PRO.get(status) if isinstance(status, str) else None
        # a pytest node id in Pro's lists and here is one name (junit_id), as for `pytest`
        results.add(junit_id(test["name"]), outcome or "error", "" if outcome else f"status {status!r}")
