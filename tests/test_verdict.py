"""The outcome rule: failures are confirmed by a replay, disagreement is `unstable`,
infrastructure errors are retried and never become verdicts."""

from __future__ import annotations

from testprism.tasks.model.outcome import Outcome, Reason
from testprism.tasks.sandbox.base import ExecResult, SandboxError
from testprism.tasks.execution.verdict import Policy, classify, judge

JUNIT_FAIL = b"""<testsuites><testsuite name="s"><testcase classname="tmp.test_a" name="test_x">
<failure message="assert 1 == 2">trace</failure></testcase>
<testcase classname="tmp.test_a" name="test_y"/></testsuite></testsuites>"""


def scripted(*results):
    queue = list(results)

    def attempt():
        item = queue.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    return attempt


def ok(code=0, xml=None):
    return ExecResult(exit_code=code, duration_s=0.1, output_tail="", junit_xml=xml)


def test_failure_then_pass_is_unstable():
    verdict = judge(scripted(ok(1), ok(0)), Policy())
    assert (verdict.outcome, verdict.reason, verdict.attempts) == (Outcome.ERROR, Reason.UNSTABLE, 2)


def test_confirmed_failure_keeps_its_failing_tests():
    verdict = judge(scripted(ok(1, JUNIT_FAIL), ok(1, JUNIT_FAIL)), Policy())
    assert verdict.outcome is Outcome.FAIL and verdict.attempts == 2
    failed = [t for t in verdict.tests if t.outcome == "failed"]
    assert failed[0].name == "tmp.test_a::test_x" and failed[0].message == "assert 1 == 2"


def test_pass_is_not_replayed_and_exit_zero_with_failing_junit_is_a_failure():
    assert judge(scripted(ok(0)), Policy()).attempts == 1
    assert classify(ok(0, JUNIT_FAIL)) == (Outcome.FAIL, None)


def test_selected_tests_decide_alone():
    assert classify(ok(1, JUNIT_FAIL), selected=("tmp/test_a.py::test_y",)) == (Outcome.PASS, None)
    assert classify(ok(0, JUNIT_FAIL), selected=("tmp/test_a.py::test_x",)) == (Outcome.FAIL, None)
    assert classify(ok(0, JUNIT_FAIL), selected=("tmp/test_a.py::test_gone",)) == (Outcome.FAIL, None)


def test_infrastructure_errors_are_retried_then_recorded():
    boom = SandboxError("engine went away")
    assert judge(scripted(boom, ok(0)), Policy()).outcome is Outcome.PASS
    verdict = judge(scripted(boom, boom, boom), Policy(infra_retries=2))
    assert (verdict.outcome, verdict.reason, verdict.attempts) == (Outcome.ERROR, Reason.SANDBOX_ERROR, 3)


def test_broken_junit_from_a_candidate_is_a_failure_not_a_crash():
    assert classify(ok(1, b"<testsuite><testcase")) == (Outcome.FAIL, None)
    assert classify(ok(0, b"\xff\xfe not xml")) == (Outcome.PASS, None)


def test_test_ids_match_exactly_or_by_parametrisation():
    from testprism.tasks.execution.junit import matches, select
    from testprism.tasks.model.outcome import TestResult

    case = TestResult("sympy.solvers.tests.test_diophantine::test_diophantine_general", "passed")
    assert not matches(case, "test_diophantine")  # a bare name is not a prefix
    assert matches(TestResult("m::test_x[a b]", "passed"), "test_x")  # parametrisations of it
    assert matches(TestResult("tests.m::test_x[assert x == 1]", "passed"), "tests/m.py::test_x[assert")  # cut id
    assert select((TestResult("m::test_y", "skipped"),), ("test_y",)) == {"test_y": "skipped"}
