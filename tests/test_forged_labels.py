"""Labels no candidate can forge (issue 39): a candidate that keeps the bug but lies about
its checks is never labelled valid, under both backends, and each lie wins where the
defence is off (the control).

Every forger here keeps the median bug of tests/benchfixture.py; its honest twin (the same
bug, no lie) is the control of the label, and the reference the control of the checks.
- `conftest-hook`: adds a `conftest.py` whose hook rewrites every failing report as passed
  (the ten-line conftest.py reported to score 500/500 on SWE-bench Verified). Defence: the
  test infrastructure it changed is put back before the checks (tasks/execution/infrastructure.py).
- `exit-rewrite`: the program, imported by the checks, registers an exit handler that
  rewrites the JUnit report with every check passing. Defence: the report streams out
  through a pipe the harness holds (tasks/sandbox/report_pipe.py), so the rewrite arrives
  as a second document; and report, log and exit status are held against each other.
- `shadow-runner`: adds a `pytest.py` at the program's root, which `python -m pytest` imports
  before the environment's pytest: it writes a report of passes and exits 0, running nothing.
  Defence: a module that shadows the runner is test infrastructure, removed before the checks.
- `printed-passes`, on an instance whose checks are read from pytest's `-rA` log: the
  program prints pytest's `PASSED <id>` line for every check and exits before any test
  runs. Defence: a log with per-test lines but no closing summary of its runner, or whose
  summary counts failures, is `results_disagree` (tasks/execution/crosscheck.py).
A verifier's forged reward file is tests/test_harbor.py's.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from testprism.tasks.collect.label import LABEL_POLICY, label_of
from testprism.tasks.collect.candidate import normalise_patch
from testprism.tasks.collect.verification import candidate_states, execute, plan, stored_rows
from testprism.tasks.execution import infrastructure, verdict
from testprism.tasks.execution.batch import ExecutionOptions
from testprism.tasks.model.benchmark import load_benchmark
from testprism.storage import Store
from tests.benchfixture import BUGGY, diff, make_benchmark
from tests.reportfixture import reports_as_files

INSTANCE = "mini__median-even"

CONFTEST_HOOK = '''\
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        report.outcome = "passed"
'''

EXIT_REWRITE = BUGGY + '''

import atexit as _atexit
import os as _os


def _forge():
    cases = "".join(f'<testcase classname="tests.test_official" name="{n}"/>'
                    for n in ("test_even_length", "test_odd_length", "test_input_untouched"))
    with open(_os.environ["TESTPRISM_JUNIT"], "w") as fh:
        fh.write(f"<testsuite>{cases}</testsuite>")


_atexit.register(_forge)
'''

PRINTED_PASSES = BUGGY + '''

import gc as _gc
import os as _os
import sys as _sys

for _capture in [o for o in _gc.get_objects() if type(o).__name__ == "CaptureManager"]:
    _capture.suspend_global_capture(in_=True)
for _name in ("test_even_length", "test_odd_length", "test_input_untouched"):
    print(f"PASSED tests/test_official.py::{_name}")
_sys.stdout.flush()
_os._exit(0)
'''

SHADOW_RUNNER = '''\
import os
import sys

cases = "".join(f'<testcase classname="tests.test_official" name="{n}"/>'
                for n in ("test_even_length", "test_odd_length", "test_input_untouched"))
with open(os.environ["TESTPRISM_JUNIT"], "w") as fh:
    fh.write(f"<testsuite>{cases}</testsuite>")
sys.exit(0)
'''

HONEST_TWIN = BUGGY.replace("non-empty sequence", "non-empty sequence (unchanged)")

FORGERS = {
    "conftest-hook": diff("conftest.py", "", CONFTEST_HOOK),
    "exit-rewrite": diff("stats.py", BUGGY, EXIT_REWRITE),
    "printed-passes": diff("stats.py", BUGGY, PRINTED_PASSES),
    "shadow-runner": diff("pytest.py", "", SHADOW_RUNNER),
    "honest-twin": diff("stats.py", BUGGY, HONEST_TWIN),
}

LOG_CHECKS = "python -m pytest -rA -p no:cacheprovider tests/test_official.py"


@pytest.fixture(scope="module")
def forged_bench(tmp_path_factory) -> Path:
    """The mini benchmark with the forgers as candidates, and a twin instance whose checks
    are read from pytest's log by the `pytest` parser (no JUnit)."""
    root = make_benchmark(tmp_path_factory.mktemp("forged"), {},
                          extra_candidates={cid: ("invalid", patch) for cid, patch in FORGERS.items()})
    source = root / "instances" / INSTANCE
    twin = root / "instances" / "mini__median-logged"
    twin.mkdir()
    for item in source.iterdir():
        target = twin / item.name
        if item.is_dir():
            import shutil
            shutil.copytree(item, target)
        else:
            target.write_bytes(item.read_bytes())
    toml = (twin / "instance.toml").read_text().replace(f'id = "{INSTANCE}"', 'id = "mini__median-logged"')
    toml = toml.replace('command = "python -m pytest -q -p no:cacheprovider tests/test_official.py '
                        '--junitxml=$TESTPRISM_JUNIT"', f'command = "{LOG_CHECKS}"\nparser = "pytest"')
    (twin / "instance.toml").write_text(toml)
    return root


def defences_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CONTROL: no test infrastructure put back, the report read as a file after the
    run, no cross-check of report, log and exit status."""
    monkeypatch.setattr(infrastructure, "to_restore", lambda program, tree, touched: [])
    rules_off = replace(infrastructure.rules(), key="off")  # other keys: nothing reused from the defended runs
    monkeypatch.setattr(infrastructure, "rules", lambda: rules_off)
    monkeypatch.setattr(verdict, "disagreement", lambda *args, **kwargs: None)
    reports_as_files(monkeypatch)


def labels(bench_root: Path, instance_id: str, backend: str, store: Path, work_root: Path) -> dict:
    instance = load_benchmark(bench_root).instances[instance_id]
    options = ExecutionOptions(backend=backend, work_root=work_root, store_root=store, concurrency=2,
                               policy=LABEL_POLICY)
    patches = {c.id: normalise_patch(c.patch.decode()) for c in instance.candidates
               if c.id in FORGERS or c.id == "stdlib"}
    specs = plan(instance, list(candidate_states(instance, patches).values()), options)
    execute(specs, options)
    rows = stored_rows(Store(store), [s.key for s in specs])
    return {s.state.candidate_id: label_of(instance, rows[s.key]) for s in specs}


JUNIT_FORGERS = ("conftest-hook", "exit-rewrite", "shadow-runner")


@pytest.mark.parametrize("backend", ["local", "docker"])
def test_forged_labels_are_invalid_and_win_without_the_defence(backend, request, forged_bench, tmp_path, work_root,
                                                               monkeypatch):
    request.getfixturevalue("require")("docker" if backend == "docker" else "sandbox")
    defended = labels(forged_bench, INSTANCE, backend, tmp_path / "on", work_root)
    logged = labels(forged_bench, "mini__median-logged", backend, tmp_path / "on", work_root)
    assert defended["stdlib"].label == logged["stdlib"].label == "valid"  # a real fix passes both checks
    for cid in (*JUNIT_FORGERS, "honest-twin"):
        assert defended[cid].label == "invalid", (cid, defended[cid])
    assert logged["printed-passes"].label == logged["honest-twin"].label == "invalid", logged
    # the conftest hook was put back, and says so
    assert defended["conftest-hook"].restored == ("conftest.py",)
    assert "tests/test_official.py::test_even_length" in defended["conftest-hook"].failed_checks

    defences_off(monkeypatch)
    undefended = labels(forged_bench, INSTANCE, backend, tmp_path / "off", work_root)
    logged_off = labels(forged_bench, "mini__median-logged", backend, tmp_path / "off", work_root)
    for cid in JUNIT_FORGERS:
        assert undefended[cid].label == "valid", (cid, undefended[cid])
    assert logged_off["printed-passes"].label == "valid", logged_off["printed-passes"]
    assert undefended["honest-twin"].label == logged_off["honest-twin"].label == "invalid"
