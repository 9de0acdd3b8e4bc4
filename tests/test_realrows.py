"""Opt-in: real Multi-SWE-bench rows, gathered outside the repository by bench/realrows/fetch.py
(docs/real-benchmarks.md), replayed so that a regression on real data shows.

Runs only when TESTPRISM_REALROWS names that folder (`make test-realdata`): `rows/*.jsonl`
(rows in the published shape), `repos/<owner>__<name>` (git directories of their
repositories), optionally `recipes/` (recipes of fetched repositories kept out of the
repository, such as gson's, whose Maven seed is built from gson's own poms; read with
examples/recipes/) and, optionally, `gate.txt`: the ids of the rows whose checks reproduced here
(buggy fails, reference passes), one a line, which are verified again in the sandbox.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from testprism.tasks.importing.recipe import load_recipes
from testprism.tasks.importing.sources import ProgramSources
from testprism.tasks.importing.swebench import import_rows
from testprism.tasks.importing.verifier import Verifier
from testprism.tasks.model.benchmark import load_benchmark
from testprism.tasks.sandbox.base import Limits
from testprism.tasks.sandbox.local import LocalBackend

REALROWS = os.environ.get("TESTPRISM_REALROWS")
RECIPES = Path(__file__).resolve().parents[1] / "examples" / "recipes"
ROWS = sorted(Path(REALROWS, "rows").glob("*.jsonl")) if REALROWS else []


def recipes():
    """The bundled recipes, and those kept beside the rows (their own files, not their folder:
    a recipe's context folder is no recipe)."""
    kept = sorted(Path(REALROWS, "recipes").glob("*.toml")) if REALROWS else []
    return load_recipes([RECIPES, *kept])

pytestmark = [
    pytest.mark.realdata,
    pytest.mark.skipif(not REALROWS, reason="set TESTPRISM_REALROWS to the folder bench/realrows/fetch.py wrote"),
]


@pytest.mark.parametrize("rows", ROWS, ids=[p.name for p in ROWS])
def test_every_real_row_imports_as_published(tmp_path, rows):
    report = import_rows(rows, tmp_path / "bench", recipes(),
                         ProgramSources.from_options(Path(REALROWS, "repos"), None), source="multi-swe-bench")
    assert not report.failed, "\n".join(map(str, report.failed))
    instances = load_benchmark(tmp_path / "bench").instances
    assert sorted(instances) == sorted(report.imported) and instances


def gate_ids() -> list[str]:
    gate = Path(REALROWS, "gate.txt") if REALROWS else None
    return [line.strip() for line in gate.read_text().splitlines() if line.strip()] if gate and gate.exists() else []


@pytest.mark.slow
@pytest.mark.timeout(7200)
@pytest.mark.requires("sandbox", "toolchains")
@pytest.mark.skipif(not gate_ids(), reason="no gate.txt: no real row has reproduced here yet")
def test_rows_that_passed_the_gate_still_pass_it(tmp_path, work):
    # Every row of every file imported with --verify: the ones gate.txt names must be accepted.
    wanted = set(gate_ids())
    accepted: set[str] = set()
    backend = LocalBackend(work)
    try:
        for rows in ROWS:
            report = import_rows(rows, tmp_path / "bench", recipes(),
                                 ProgramSources.from_options(Path(REALROWS, "repos"), None), source="multi-swe-bench",
                                 verifier=Verifier(backend, work, Limits(timeout_s=3600.0)))
            accepted |= set(report.imported)
    finally:
        backend.close()
    assert wanted <= accepted, f"no longer reproduce: {sorted(wanted - accepted)}"
