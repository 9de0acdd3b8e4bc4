"""The folder adapters (tasks/importing/exercises.py, and harbor.py's refusals; Harbor's
imports that run: tests/test_harbor.py) on the bundled sources of examples/sources/: which
tasks become instances, which are skipped with which issue, and that an imported instance's
reference really makes its checks' fail-to-pass transition (gold validation,
tasks/collect/label.py, on the local bubblewrap backend)."""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from testprism.flows.cli import import_app
from testprism.storage import Store
from testprism.tasks.collect.label import GOLD_POLICY, gold_plan, gold_verdict
from testprism.tasks.collect.verification import execute, stored_rows
from testprism.tasks.execution.batch import ExecutionOptions
from testprism.tasks.importing.exercises import import_exercises
from testprism.tasks.importing.harbor import import_harbor
from testprism.tasks.model.benchmark import Instance, load_benchmark
from testprism.tasks.model.state import apply_patch
from testprism.tasks.model.workdir import WorkPaths
from testprism.tasks.sandbox.base import SandboxBackend

SOURCES = Path(__file__).resolve().parents[1] / "examples" / "sources"
HARBOR = SOURCES / "harbor"
TRACK = SOURCES / "exercises"


def issues_of(report) -> dict[str, tuple[str, str]]:
    """row → (field, message) of every issue."""
    return {i.row: (i.field, i.message) for i in report.issues}


def assert_patches_apply(instance: Instance, tmp_path: Path) -> dict[str, str]:
    """Reference, then checks, applied to a copy of the program; returns the tree's files."""
    tree = tmp_path / f"applied-{instance.id}"
    shutil.copytree(instance.program, tree)
    assert apply_patch(tree, instance.reference, fuzz=0).applied
    assert apply_patch(tree, instance.checks_patch, fuzz=0).applied
    return {p.relative_to(tree).as_posix(): p.read_text() for p in sorted(tree.rglob("*")) if p.is_file()}


# -- exercises (nothing runs) -----------------------------------------------------------------


def test_exercise_track_imports_the_complete_exercises_and_names_the_missing_example(tmp_path):
    out = tmp_path / "bench"
    report = import_exercises(TRACK, out, source="pytrack")
    assert sorted(report.imported) == ["pytrack__leap", "pytrack__two-fer"]
    assert issues_of(report) == {"exercises/practice/reverse-string": (".meta/example.py", ".meta/example.py is missing")}
    bench = load_benchmark(out)
    assert sorted(bench.instances) == ["pytrack__leap", "pytrack__two-fer"]
    two_fer = bench.instances["pytrack__two-fer"]
    spec = two_fer.spec
    assert (spec.source, spec.language, spec.summary) == (
        "pytrack", "python", 'Create a sentence of the form "One for X, one for me.".')  # the config's blurb
    assert sorted(p.name for p in two_fer.program.iterdir()) == ["two_fer.py"]
    assert spec.checks.command == "python -m pytest -q -p no:cacheprovider two_fer_test.py --junitxml=$TESTPRISM_JUNIT"
    assert spec.checks.fail_to_pass == ("two_fer_test.py::TwoFerTest::test_no_name_given",
                                        "two_fer_test.py::TwoFerTest::test_a_name_given")
    assert spec.checks.pass_to_pass == ()
    files = assert_patches_apply(two_fer, tmp_path)
    assert files["two_fer.py"] == (TRACK / "exercises/practice/two-fer/.meta/example.py").read_text()
    assert "two_fer_test.py" in files
    leap = bench.instances["pytrack__leap"]  # no .meta/config.json: the default names
    assert leap.spec.summary == "Instructions"
    assert leap.spec.checks.fail_to_pass == ("leap_test.py::test_divisible_by_4_not_by_100",
                                             "leap_test.py::test_divisible_by_100_not_by_400")
    assert_patches_apply(leap, tmp_path)
    again = import_exercises(TRACK, out, source="pytrack")
    assert not again.imported and sorted(again.existing) == ["pytrack__leap", "pytrack__two-fer"]
    assert not (out / ".staging").exists()


def exercise(track: Path, slug: str, files: dict[str, str]) -> Path:
    folder = track / "exercises" / "practice" / slug
    for rel, text in {".docs/instructions.md": "# Instructions\n\nDo it.\n", **files}.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


def test_exercises_that_cannot_be_instances_are_skipped_naming_the_file(tmp_path):
    track = tmp_path / "track"
    stub, test = "def f():\n    pass\n", "from same import f\n\ndef test_f():\n    assert f() == 1\n"
    exercise(track, "same", {"same.py": stub, "same_test.py": test, ".meta/example.py": stub})
    exercise(track, "no-tests", {"no_tests.py": stub, ".meta/example.py": "def f():\n    return 1\n"})
    exercise(track, "renamed", {"lib.py": stub, "check_test.py": test.replace("same", "lib"),
                                 "sol.py": "def f():\n    return 1\n",
                                 ".meta/config.json": '{"files": {"solution": ["lib.py"], "test": ["check_test.py"], '
                                                      '"example": ["sol.py"]}}'})
    exercise(track, "in-js", {".meta/config.json": '{"files": {"solution": ["in-js.js"]}}'})
    report = import_exercises(track, tmp_path / "bench", source="t")
    assert report.imported == ["t__renamed"]  # .meta/config.json is honoured
    assert issues_of(report) == {
        "exercises/practice/same": (".meta/example.py", "equals the stub: the reference would change nothing"),
        "exercises/practice/no-tests": ("files.test", "no_tests_test.py is missing"),
        "exercises/practice/in-js": ("files.solution", "in-js.js is not a Python file (.js): this adapter "
                                                       "reads Python tracks only"),
    }
    (track / "config.json").write_text('{"language": "JavaScript"}')
    field, message = issues_of(import_exercises(track, tmp_path / "other", source="t"))["exercises/practice/renamed"]
    assert (field, message) == ("language", "the track's language is JavaScript: this adapter reads Python tracks only")


def test_cli_imports_exercises_and_reports_the_skipped_one(tmp_path):
    out = tmp_path / "bench"
    result = CliRunner().invoke(import_app, ["exercises", str(TRACK), "--out", str(out), "--source", "pytrack"])
    assert result.exit_code == 0, result.output
    assert re.search(r"│\s+2\s+│\s+0\s+│\s+1\s+│\s+0\s+│", result.output)  # imported, present, rejected, caveats
    strict = CliRunner().invoke(import_app, ["exercises", str(TRACK), "--out", str(out), "--source", "pytrack",
                                             "--strict"])
    assert strict.exit_code == 1  # the skipped exercise is an issue; the others are already present


def test_harbor_tasks_that_need_no_sandbox_to_refuse(tmp_path):
    """Refused before solve.sh would run: the sandbox is never asked."""
    tasks = tmp_path / "tasks"
    shutil.copytree(HARBOR / "fix-greeting", tasks / "bad name!")
    shutil.copytree(HARBOR / "fix-greeting", tasks / "no-solution")
    (tasks / "no-solution" / "solution" / "solve.sh").unlink()
    report = import_harbor(tasks, tmp_path / "bench", source="h", backend=NoSandbox(WorkPaths(tmp_path / "work")))
    assert issues_of(report) == {
        "bad name!": ("(folder name)", "'bad name!' is not an instance id ([A-Za-z0-9_.-]+)"),
        "no-solution": ("solution/solve.sh", "missing: a Harbor task holds task.toml, instruction.md, "
                                             "environment/Dockerfile, tests/test.sh, solution/solve.sh"),
    }
    assert not report.imported


class NoSandbox(SandboxBackend):
    """A backend that must not be used."""

    name = "none"
    isolation = "none"

    def prepare(self, environment):
        raise AssertionError("the sandbox was asked for")

    def run(self, request):
        raise AssertionError("the sandbox was asked for")


# -- exercises: gold validation (the Harbor tasks': tests/test_harbor.py) ---------------------


@pytest.mark.slow
@pytest.mark.requires("sandbox")
def test_exercise_instances_make_their_fail_to_pass_transition(tmp_path, work_root):
    out = tmp_path / "bench"
    assert import_exercises(TRACK, out, source="pytrack").imported == ["pytrack__leap", "pytrack__two-fer"]
    bench = load_benchmark(out)
    options = replace(ExecutionOptions(backend="local", work_root=work_root, store_root=tmp_path / "store",
                                       concurrency=2), policy=GOLD_POLICY)
    specs = {iid: gold_plan(instance, options) for iid, instance in bench.instances.items()}
    execute([s for group in specs.values() for s in group], options)
    rows = stored_rows(Store(tmp_path / "store"), [s.key for group in specs.values() for s in group])
    for iid, group in specs.items():
        verdict = gold_verdict(bench.instances[iid], [rows[s.key] for s in group])
        assert verdict.validated, (iid, verdict.reason, verdict.detail)
