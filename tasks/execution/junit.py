"""Per-test results from a suite's JUnit XML (junitparser).

A suite may break its own runner's reporting (the project under test can be the test
framework): an unreadable report is treated as no report, and the exit status decides.
"""

from __future__ import annotations

import logging
from xml.etree.ElementTree import ParseError

from junitparser import Error, Failure, JUnitXml, Skipped
from junitparser.junitparser import JUnitXmlError

from testprism.tasks.model.outcome import TestResult

log = logging.getLogger(__name__)

MESSAGE_CHARS = 500


def _case_name(case) -> str:
    classname = (case.classname or "").strip()
    return f"{classname}::{case.name}" if classname else str(case.name)


def parse_junit(xml: bytes) -> tuple[TestResult, ...] | None:
    """Test cases of a JUnit report, or None when it is missing, empty or unreadable."""
    if not xml or not xml.strip():
        return None
    try:
        report = JUnitXml.fromstring(xml)
    except (ParseError, JUnitXmlError, ValueError, TypeError) as exc:
        log.debug("unreadable JUnit report: %s", exc)
        return None
    suites = [report] if report._tag == "testsuite" else list(report)
    results: list[TestResult] = []
    for suite in suites:
        for case in suite:
            outcome, message = "passed", ""
            for entry in case.result:
                if isinstance(entry, (Failure, Error)):
                    outcome = "failed" if isinstance(entry, Failure) else "error"
                    message = (entry.message or entry.text or "")[:MESSAGE_CHARS]
                    break
                if isinstance(entry, Skipped):
                    outcome = "skipped"
            results.append(TestResult(_case_name(case), outcome, message))
    return tuple(results)


def junit_id(test_id: str) -> str:
    """A pytest node id (`tests/test_x.py::TestC::test_y[p]`) in the form `parse_junit`
    names cases (`tests.test_x.TestC::test_y[p]`); bare names (sympy's `test_y`) unchanged."""
    if "::" not in test_id:
        return test_id
    path, *rest = test_id.split("::")
    module = path.removesuffix(".py").replace("/", ".")
    *classes, name = rest or [""]
    return ".".join([module, *classes]) + "::" + name


def matches(case: TestResult, test_id: str) -> bool:
    """Whether a reported case is the test `test_id` names: the same test, or one of its
    parametrisations (`test_x[...]`). A plain prefix only when the id was cut inside its
    parameters (SWE-bench cuts ids at the first space: `test_x[assert`), so `test_x` never
    matches `test_xy`. A bare name matches the case's function name, since some projects'
    lists (sympy's) hold only those."""
    wanted = junit_id(test_id)
    name = case.name if "::" in wanted else case.name.rsplit("::", 1)[-1]
    if "[" in wanted:
        return name.startswith(wanted)
    return name == wanted or name.startswith(wanted + "[")


def select(results: tuple[TestResult, ...], test_ids: tuple[str, ...]) -> dict[str, str]:
    """The outcome of each wanted test: `passed` only if every matching case passed;
    `skipped` if one was skipped and none failed, `missing` when no case matches — a test
    that did not run cannot vouch for a state."""
    out: dict[str, str] = {}
    for test_id in test_ids:
        found = [c.outcome for c in results if matches(c, test_id)]
        if not found:
            out[test_id] = "missing"
        elif any(o in ("failed", "error") for o in found):
            out[test_id] = "failed"
        elif "skipped" in found:
            out[test_id] = "skipped"
        else:
            out[test_id] = "passed"
    return out
