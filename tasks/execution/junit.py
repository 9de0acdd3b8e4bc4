"""Per-test results from a suite's JUnit XML (junitparser).

A suite may break its own runner's reporting (the project under test can be the test
framework): an unreadable report is treated as no report, and the exit status decides.
"""

from __future__ import annotations

import logging
from xml.etree.ElementTree import ParseError

from junitparser import Error, Failure, JUnitXml, Skipped, TestCase
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
    results: list[TestResult] = []
    # Every <testcase> at any depth: node's runner puts top-level tests straight under
    # <testsuites> and nests a describe() block's as <testsuite> in <testsuite>; junitparser's
    # iteration sees only cases directly inside a first-level suite.
    for element in report._elem.iter("testcase"):
        case = TestCase.fromelem(element)
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
    names cases (`tests.test_x.TestC::test_y[p]`); bare names (sympy's `test_y`, Go's
    `TestX`, a JavaScript test's title) and other languages' `classname::name` ids (Go's
    `example.com/pkg::TestX`, Java's `org.x.FooTest::bar`) unchanged."""
    if "::" not in test_id or not test_id.split("::", 1)[0].endswith(".py"):
        return test_id
    path, *rest = test_id.split("::")
    module = path.removesuffix(".py").replace("/", ".")
    *classes, name = rest or [""]
    return ".".join([module, *classes]) + "::" + name


#: what may follow a test's name in a reported case that is a part of it: pytest's
#: parameters (`test_x[1]`), a Go subtest (`TestX/empty`), a JUnit 5 method's signature
#: (`bar()`, `bar(int)`)
PART_MARKS = ("[", "/", "(")


def matches(case: TestResult, test_id: str) -> bool:
    """Whether a reported case is the test `test_id` names: the same test, or a part of it
    (PART_MARKS: a parametrisation, a subtest, a method signature). A plain prefix only
    when the id was cut inside its parameters (SWE-bench cuts ids at the first space:
    `test_x[assert`), so `test_x` never matches `test_xy`. A bare name matches the case's
    own name (after its classname), since some projects' lists (sympy's, Go's) hold only
    those. The rules are the same for every language (docs/languages.md)."""
    wanted = junit_id(test_id)
    name = case.name if "::" in wanted else case.name.rsplit("::", 1)[-1]
    if "[" in wanted:
        return name.startswith(wanted)
    return name == wanted or any(name.startswith(wanted + mark) for mark in PART_MARKS)


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
