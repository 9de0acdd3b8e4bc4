"""The outcome rule: failures are confirmed by a replay, disagreement is `unstable`,
infrastructure errors are retried and never become verdicts."""

from __future__ import annotations

from pathlib import Path

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


def test_broken_junit_from_a_candidate_is_unresolved_never_the_exit_status_s_verdict():
    """A report written but unreadable is E/report_unreadable whatever the exit status (it
    was F and P: a run could pass by breaking its own report); a run that wrote none is
    judged by its exit status."""
    for code in (0, 1):
        assert classify(ok(code, b"<testsuite><testcase")) == (Outcome.ERROR, Reason.REPORT_UNREADABLE)
        assert classify(ok(code, b"\xff\xfe not xml")) == (Outcome.ERROR, Reason.REPORT_UNREADABLE)
    assert classify(ok(0, None)) == (Outcome.PASS, None) and classify(ok(1, b"  ")) == (Outcome.FAIL, None)


def test_test_ids_match_exactly_or_by_parametrisation():
    from testprism.tasks.execution.junit import matches, select
    from testprism.tasks.model.outcome import TestResult

    case = TestResult("sympy.solvers.tests.test_diophantine::test_diophantine_general", "passed")
    assert not matches(case, "test_diophantine")  # a bare name is not a prefix
    assert matches(TestResult("m::test_x[a b]", "passed"), "test_x")  # parametrisations of it
    assert matches(TestResult("tests.m::test_x[assert x == 1]", "passed"), "tests/m.py::test_x[assert")  # cut id
    assert select((TestResult("m::test_y", "skipped"),), ("test_y",)) == {"test_y": "skipped"}


SYMPY_LOG = (Path(__file__).parent / "data" / "runner_logs" / "sympy.log").read_text()


def test_a_log_the_parser_cannot_read_is_parse_failed_never_a_verdict():
    """A run whose results its instance's log parser reads: garbage (or a crash of the
    parser) is E/parse_failed whatever the exit code; the control, sympy's real log, is
    read into per-test results and decides."""
    for code in (0, 1):
        garbage = ExecResult(exit_code=code, duration_s=0.1, output_tail="Segmentation fault\n\x00\x01 garbage")
        assert classify(garbage, ("test_a",), parser="sympy") == (Outcome.ERROR, Reason.PARSE_FAILED)
        assert classify(garbage, ("test_a",)) != (Outcome.ERROR, Reason.PARSE_FAILED)  # no parser: the exit decides
    real = ExecResult(exit_code=1, duration_s=0.1, output_tail=SYMPY_LOG)
    verdict = judge(scripted(real, real), Policy(), parser="sympy")
    assert verdict.reason is not Reason.PARSE_FAILED and len(verdict.tests) > 1


def test_a_checks_parser_is_part_of_the_checks_key():
    """The same checks read by another log parser are other results: their verifications are
    not reused across it; checks without a parser keep the key they had."""
    import dataclasses

    from testprism.tasks.collect.verification import checks_hash
    from testprism.tasks.model.benchmark import load_benchmark
    from testprism.tasks.model.hashing import digest

    instance = next(iter(load_benchmark(Path(__file__).parents[1] / "examples").instances.values()))
    checks = instance.spec.checks
    assert checks.parser is None and checks.reward is None
    assert checks_hash(instance) == digest("checks", instance.checks_patch, checks.command, *checks.fail_to_pass, "|",
                                           *checks.pass_to_pass)
    keys = {checks_hash(dataclasses.replace(instance, spec=instance.spec.model_copy(update={
        "checks": checks.model_copy(update={"parser": parser})}))) for parser in (None, "pytest", "django")}
    assert len(keys) == 3
