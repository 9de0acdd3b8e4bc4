"""The log parsers (tasks/execution/logs) on real runner output produced on this machine.

Every fixture under tests/data/runner_logs/ is a runner's own output on its small project
(projects/), written by make_logs.sh; versions.txt says which runner made it. pytest's is
also made again here, so a change in pytest's output shows as a failure, not as a stale
fixture. Unreadable logs (garbage, a parser that breaks, a log past a bound) must come back
as None (the run's `E`/parse_failed), never as results.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from testprism.tasks.execution import logs
from testprism.tasks.execution.junit import NAME_CHARS, select
from testprism.tasks.execution.logs import LOG_MAX_BYTES, PARSERS, parse_log
from testprism.tasks.execution.logs.results import MAX_TESTS
from testprism.tasks.model.benchmark import LOG_PARSERS, ChecksSpec

DATA = Path(__file__).parent / "data" / "runner_logs"

P, F, E, S = "passed", "failed", "error", "skipped"
T = "tests.test_sample"
PYTEST_COMMON = {
    f"{T}::test_passes": P, f"{T}::test_fails": F, f"{T}::test_errors_in_setup": E,
    f"{T}::test_expected_failure": P, f"{T}::test_unexpected_pass": F,
    f"{T}::test_params[a b]": P, f"{T}::test_params[x - y]": F, f"{T}::test_params[\\xfcn\\xef]": P,
    f"{T}::test_params[end]]": P, f"{T}::test_params[[nested]]": P,
    f"{T}.TestGroup::test_method": P, f"{T}.TestGroup::test_method_params[1]": P,
    f"{T}.TestGroup::test_method_params[2]": F, "tests/test_collect_error.py": E,
}
DJ = "testprism_sample.tests.SampleTests"
#: parser, fixture, every test it must report with its outcome (and nothing else)
EXPECTED: list[tuple[str, str, dict[str, str]]] = [
    ("pytest", "pytest.log", PYTEST_COMMON),
    ("pytest", "pytest_verbose.log", PYTEST_COMMON | {f"{T}::test_skipped": S}),
    ("django", "django.log", {
        f"test_errors ({DJ}.test_errors)": E, f"test_expected_failure ({DJ}.test_expected_failure)": P,
        f"test_failing_docstring ({DJ}.test_failing_docstring)": F, "Fails, and says so in its docstring.": F,
        f"test_fails ({DJ}.test_fails)": F, f"test_passes ({DJ}.test_passes)": P,
        f"test_prints ({DJ}.test_prints)": P, f"test_skipped ({DJ}.test_skipped)": S,
        f"test_subtests ({DJ}.test_subtests) (text='ünï')": F, f"test_subtests ({DJ}.test_subtests)": F,
        f"test_with_docstring ({DJ}.test_with_docstring)": P,
        "A docstring's first line is printed ... after the test's name.": P,
        "test_ünï (testprism_sample.tests.ÜnicodeTests.test_ünï)": P}),
    ("sympy", "sympy.log", {
        "test_passes": P, "test_fails": F, "test_errors": E, "test_skipped": S, "test_expected_failure": P,
        "test_unexpected_pass": F, "test_prints": P, "test_raises": P}),
    ("go_test", "go_test.log", {
        "example.com/sample::TestPasses": P, "example.com/sample::TestFails": F,
        "example.com/sample::TestSkipped": S, "example.com/sample::TestSubtests": F,
        "example.com/sample::TestSubtests/a_b": F, "example.com/sample::TestSubtests/ünï": P,
        "example.com/sample::TestSubtests/x/y": P, "example.com/sample::TestSubtests/ok": P,
        "example.com/sample::TestPrints": P, "example.com/sample::TestPanics": F,
        "example.com/sample/sub::TestAfterPanic": P, "example.com/sample/sub::TestPasses": P}),
    ("cargo", "cargo.log", {
        "tests::ignored": S, "tests::nested::ünicode_name": P, "tests::fails": F, "tests::panics_as_expected": P,
        "tests::prints_a_fake_result_line": P, "tests::passes": P, "integration_passes": P,
        "src/lib.rs - double (line 44)": P}),
    # SWE-bench's parse_log_maven form: a traced `mvn test -Dtest=` per test, BUILD SUCCESS or FAILURE
    ("maven", "maven.log", {
        "sample.SampleTest#passes": P, "sample.SampleTest#fails": F, "sample.SampleTest#errors": F,
        "sample.SampleTest#ünïcode": P}),
    ("jest", "jest.log", {
        "top level ✓ name": P, "math › adds": P, "math › fails › oddly named": F, "math › each a b": P,
        "math › each ünï": F, "math › skipped one": S, "math › todo one": S, "math › nested › throws": F,
        "broken.test.js": E}),
    ("mocha", "mocha.log", {
        "top level": P, "math adds": P, "math fails: oddly named": F, "math skipped one": S,
        "math pending without body": S, "math each a b": P, "math each ünï": F, "math nested throws": F,
        "math nested ✓ looks like a pass": P, 'math hooks "before all" hook for "never runs"': F}),
    ("vitest", "vitest.log", {
        "sample.test.js > math > adds": P, "sample.test.js > math > fails > oddly named": F,
        "sample.test.js > math > skipped one": S, "sample.test.js > math > todo one": S,
        "sample.test.js > math > each a b": P, "sample.test.js > math > each ünï": F,
        "sample.test.js > math > nested > throws": F, "sample.test.js > top level ✓ name": P,
        "broken.test.js": E}),
    ("phpunit", "phpunit.log", {
        "Sample > Passes": P, "Sample > Fails": F, "Sample > Errors": F, "Sample > Skipped": S,
        "Sample > Incomplete": S, 'Sample > With data with data set "a b"': P,
        'Sample > With data with data set "unicode"': F, 'Sample > With data with data set "plain"': P}),
    ("minitest", "minitest.log", {
        "Spec style#test_0001_passes in a describe": P, "SampleTest#test_passes": P, "SampleTest#test_fails": F,
        "SampleTest#test_with a space": P, "SampleTest#test_errors": E, "SampleTest#test_skipped": S,
        "SampleTest#test_ünï": P}),
]
RSPEC = {"Math adds": P, "Math fails: oddly named": F, "Math raises": F, "Math is skipped": S,
         "Math is pending": S, "Math each a b": P, "Math each ünï": F, "Math nested passes": P}
EXPECTED += [("rspec", "rspec.log", RSPEC), ("rspec_json", "rspec_json.log", RSPEC),
             ("go_test_json", "go_test_json.log", EXPECTED[4][2]),
             # Pro's own qutebrowser parser.py, run on pytest_verbose.log: it reads `-v` lines with
             # `[^\s]+::[^\s]+`, so it drops the collection error and the two ids with a space —
             # a peer's mis-read, kept as its output.json has it
             ("script", "script_output.json", {k: v for k, v in (PYTEST_COMMON | {f"{T}::test_skipped": S}).items()
                                               if " " not in k and not k.startswith("tests/")}),
             ]


def outcomes(parser: str, log: bytes) -> dict[str, str]:
    results = parse_log(parser, log)
    assert results is not None, f"{parser} read nothing"
    return {r.name: r.outcome for r in results}


@pytest.mark.parametrize(("parser", "fixture", "expected"), EXPECTED, ids=[f"{p}-{f}" for p, f, _ in EXPECTED])
def test_parser_reads_its_runners_real_log(parser: str, fixture: str, expected: dict[str, str]) -> None:
    assert outcomes(parser, (DATA / fixture).read_bytes()) == expected


def test_every_parser_has_a_real_log_and_a_version() -> None:
    """No parser ships untested; each fixture's runner version is on record; the names an
    instance may give (model's LOG_PARSERS) are exactly the parsers there are."""
    assert {p for p, _, _ in EXPECTED} == set(PARSERS) == set(LOG_PARSERS)
    versions = dict(line.split("\t", 1) for line in (DATA / "versions.txt").read_text().splitlines())
    assert {"pytest", "django", "sympy", "go", "cargo", "maven", "jest", "mocha", "vitest", "phpunit", "rspec",
            "minitest", "script"} <= set(versions)


def test_names_with_spaces_and_parameters_are_not_cut() -> None:
    """The mis-read peers shipped: splitting a summary line at its first space (or at ` - `)
    names `test_params[a b]` as `test_params[a`. Control: that split on the same real log
    does cut it; the parser's names match the benchmark's node ids whole."""
    log = (DATA / "pytest.log").read_text(encoding="utf-8")
    naive = {line.split()[1] for line in log.splitlines() if line.startswith(("PASSED ", "FAILED "))}
    assert "tests/test_sample.py::test_params[a" in naive  # control: the peers' reading is wrong here
    results = parse_log("pytest", log.encode())
    assert select(results, ("tests/test_sample.py::test_params[a b]", "tests/test_sample.py::test_params[x - y]",
                            "tests/test_sample.py::TestGroup::test_method_params[2]")) == {
        "tests/test_sample.py::test_params[a b]": P, "tests/test_sample.py::test_params[x - y]": F,
        "tests/test_sample.py::TestGroup::test_method_params[2]": F}


def test_pytest_log_made_now_reads_as_the_fixture(tmp_path: Path) -> None:
    """pytest run here, now, on the fixture's project: its log reads to the fixture's
    results (a change in pytest's output would show here first). Run from a copy, away from
    this repository's conftest."""
    project = tmp_path / "pytest"
    shutil.copytree(DATA / "projects" / "pytest", project)
    for fixture, flags in (("pytest.log", ["-rA"]), ("pytest_verbose.log", ["-rA", "-v"])):
        run = subprocess.run([sys.executable, "-m", "pytest", *flags, "-p", "no:cacheprovider",
                              "--continue-on-collection-errors", "tests"], cwd=project, capture_output=True,
                             env={**os.environ, "PYTEST_ADDOPTS": "", "NO_COLOR": "1"}, timeout=120, check=False)
        assert run.returncode == 1, run.stdout[-2000:]
        assert outcomes("pytest", run.stdout) == outcomes("pytest", (DATA / fixture).read_bytes())


@pytest.mark.parametrize("parser", sorted(PARSERS))
def test_garbage_is_unreadable_never_a_result(parser: str) -> None:
    """Random bytes (seeded, so a failure reproduces), an empty log, a log of another
    runner, a lone result-like line in garbage (`3) x`: a Mocha failure's mark): None
    (E/parse_failed)."""
    other = "cargo.log" if parser != "cargo" else "pytest.log"
    noise = [random.Random(seed).randbytes(64 * 1024) for seed in range(16)]
    for log in (*noise, b"", b"\x1b[31m\x00\xff" * 1000, (DATA / other).read_bytes(), noise[0] + b"\n3) x\n" + noise[1]):
        assert parse_log(parser, log) is None


def test_a_parser_that_breaks_is_unreadable(monkeypatch: pytest.MonkeyPatch) -> None:
    """A parser raising on what a suite printed gives None, not a crash of the run."""
    log = (DATA / "cargo.log").read_bytes()
    assert parse_log("cargo", log)  # control: the log is readable

    def breaks(text: str, results: logs.Results) -> None:
        results.add("tests::passes", "passed")
        raise RecursionError("deep")

    monkeypatch.setitem(PARSERS, "cargo", breaks)
    assert parse_log("cargo", log) is None


def test_output_json_that_is_not_pros_is_unreadable() -> None:
    """Pro's output.json read strictly: no `tests` list, nested past the recursion limit,
    a nameless test: None. Control: the real one reads."""
    assert parse_log("script", (DATA / "script_output.json").read_bytes())
    for bad in (b'{"tests": {}}', b"[" * 100_000 + b"]" * 100_000, b'{"tests": [{"status": "PASSED"}]}', b"null"):
        assert parse_log("script", bad) is None
    odd = parse_log("script", b'{"tests": [{"name": "a", "status": "XPASS"}]}')
    assert odd is not None and odd[0].outcome == E and "XPASS" in odd[0].message


def test_bounds_of_a_log() -> None:
    """Past LOG_MAX_BYTES or MAX_TESTS the log is unreadable; names are cut to NAME_CHARS.
    Controls: just within each bound the same lines read."""
    line = b"test tests::t%d ... ok\n"
    block = b"running 1 tests\n"
    within = block + b"".join(line % i for i in range(MAX_TESTS))
    assert len(parse_log("cargo", within)) == MAX_TESTS
    assert parse_log("cargo", within + line % MAX_TESTS) is None
    filler = b"running 1 tests\ntest a ... ok\n"
    padded = filler + b"x" * (LOG_MAX_BYTES - len(filler))
    assert parse_log("cargo", padded) is not None
    assert parse_log("cargo", padded + b"x") is None
    long = parse_log("cargo", b"running 1 tests\ntest " + b"n" * 3000 + b" ... ok\n")
    assert long is not None and len(long[0].name) == NAME_CHARS


def test_the_parser_field_names_a_known_parser() -> None:
    """`[checks] parser` takes a name of PARSERS; another is refused naming the field."""
    assert ChecksSpec(command="go test -v ./...", fail_to_pass=("TestX",), parser="go_test").parser == "go_test"
    assert ChecksSpec(command="pytest", fail_to_pass=("t",)).parser is None
    with pytest.raises(ValueError, match="(?s)parser.*not a log parser"):
        ChecksSpec(command="x", fail_to_pass=("t",), parser="nose")
