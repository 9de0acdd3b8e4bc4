"""The scripted generators' suite runner (examples/generators/): a stdlib-only python3 script
that writes its own JUnit report, one case per check, and exits non-zero on a failure."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from testprism.tasks.execution.junit import parse_junit
from testprism.tasks.model.bundled import BUNDLED
from tests.conftest import script_module

GENERATORS = BUNDLED / "generators"


def generator(name: str):
    return script_module(GENERATORS / f"{name}.py", name)


def run(program: Path, script: str) -> tuple[int, tuple]:
    (program / "tmp").mkdir(parents=True, exist_ok=True)
    (program / "tmp" / "check_generated.py").write_text(script)
    (program / "tmp" / "run_tests.sh").write_text(generator("from_reference").RUN_TESTS)
    junit = program.parent / "junit.xml"
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "TESTPRISM_JUNIT": str(junit)}
    done = subprocess.run(["bash", "tmp/run_tests.sh"], cwd=program, env=env, capture_output=True, timeout=60)
    return done.returncode, parse_junit(junit.read_bytes())


def test_both_generators_append_the_same_runner():
    reference, instruction = generator("from_reference"), generator("from_instruction")
    assert reference.RUNNER == instruction.RUNNER and reference.RUN_TESTS == instruction.RUN_TESTS


def test_checks_report_failures_errors_and_passes(tmp_path):
    program = tmp_path / "p"
    (program / "src").mkdir(parents=True)
    (program / "src" / "a.go").write_text("func A() int {\n\treturn 2 // \x1b fixed\n}\n")
    changes = {"src/a.go": (["return 2 // \x1b fixed"], ["return 1"]), "src/gone.go": (["x"], [])}
    status, cases = run(program, generator("from_reference").script(changes))
    assert status == 1
    assert [(c.name, c.outcome) for c in cases] == [
        ("tmp.check_generated::check_0_program_matches_the_reference_fix", "passed"),
        ("tmp.check_generated::check_1_program_matches_the_reference_fix", "error")]
    assert "FileNotFoundError" in cases[1].message
    (program / "src" / "a.go").write_text("return 1\n")
    status, cases = run(program, generator("from_reference").script(changes))
    assert status == 1 and cases[0].outcome == "failed" and "src/a.go: missing" in cases[0].message


def test_an_instruction_without_python_examples_gives_a_check_that_passes(tmp_path):
    status, cases = run(tmp_path / "p", generator("from_instruction").script([], []))
    assert status == 0 and [c.outcome for c in cases] == ["passed"]
    status, cases = run(tmp_path / "q", generator("from_reference").script({}))  # no check at all
    assert status == 0 and cases == ()


def test_examples_import_the_program_from_its_root(tmp_path):
    program = tmp_path / "p"
    (program / "calc").mkdir(parents=True)
    (program / "calc" / "__init__.py").write_text("def add(a, b):\n    return a - b\n")
    script = generator("from_instruction").script(["from calc import add"], ["add(2, 2) == 4"])
    status, cases = run(program, script)
    assert status == 1 and cases[0].outcome == "failed" and "add(2, 2) == 4" in cases[0].message
