"""Opt-in: real Multi-SWE-bench rows, gathered outside the repository by bench/realrows/fetch.py
(docs/real-benchmarks.md), replayed so that a regression on real data shows.

Runs only when TESTPRISM_REALROWS names that folder (`make test-realdata`): `rows/*.jsonl`
(rows in the published shape), `repos/<owner>__<name>` (git directories of their
repositories), optionally `recipes/` (recipes of fetched repositories kept out of the
repository, such as gson's, whose Maven seed is built from gson's own poms; read with
examples/recipes/) and, optionally, `gate.txt`: the ids of the rows whose checks reproduced here
(buggy fails, reference passes), one a line, which are verified again in the sandbox.

SWE-bench Pro rows (`fetch.py pro`) are kept apart, under `pro/`: `pro/rows/*.jsonl` (v2 layout),
`pro/run_scripts/<id>/` (run_script.sh, parser.py) and `pro/images.toml` (the images
bench/realrows/pro_images.py built here); those gate.txt names go through `testprism check`'s
flow on the image route, Pro's scripts run in the sandbox.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from testprism.tasks.importing.recipe import load_recipes
from testprism.tasks.importing.sources import ProgramSources
from testprism.tasks.importing.swebench import import_rows
from testprism.tasks.importing.verifier import Verifier
from testprism.tasks.model.benchmark import load_benchmark
from testprism.tasks.sandbox.base import Limits
from testprism.tasks.sandbox.local import LocalBackend
from testprism.tasks.execution.run_settings import RunSettings

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


PRO = Path(REALROWS, "pro") if REALROWS else None
PRO_ROWS = sorted((PRO / "rows").glob("*.jsonl")) if PRO else []


def pro_ids() -> set[str]:
    """The instance ids of the Pro rows kept under pro/rows/."""
    return {json.loads(line)["instance_id"] for rows in PRO_ROWS for line in rows.read_text().splitlines() if line.strip()}


@pytest.mark.slow
@pytest.mark.timeout(7200)
@pytest.mark.requires("sandbox", "toolchains")
@pytest.mark.skipif(not gate_ids(), reason="no gate.txt: no real row has reproduced here yet")
def test_rows_that_passed_the_gate_still_pass_it(tmp_path, work):
    # Every row of every file imported with --verify: the ones gate.txt names must be accepted.
    wanted = set(gate_ids()) - pro_ids()
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


@pytest.mark.slow
@pytest.mark.timeout(7200)
@pytest.mark.requires("sandbox", "docker")
@pytest.mark.skipif(not set(gate_ids()) & pro_ids(), reason="no SWE-bench Pro row of pro/rows/ is in gate.txt")
def test_pro_rows_that_passed_the_gate_still_pass_it(tmp_path, work_root):
    # Imported as published through the image route, their images from pro/images.toml, and
    # gated under local (the images' exported roots), Pro's run_script.sh and parser.py inside.
    from testprism.flows.check import check_flow
    from testprism.tasks.gate.verdict import GateVerdict
    from testprism.tasks.importing.image_names import ImageMap
    from testprism.tasks.importing.image_route import ImageRoute, import_image_rows
    from testprism.tasks.importing.image_specs import ImageSpecs

    assert PRO is not None
    wanted = set(gate_ids()) & pro_ids()
    route = ImageRoute(ImageSpecs.load(None), ImageMap.read(PRO / "images.toml"), PRO / "run_scripts")
    for rows in PRO_ROWS:
        report = import_image_rows(rows, tmp_path / "bench", route, source="swe-bench-pro")
        assert not report.failed, "\n".join(map(str, report.failed))
    for instance in set(pro_ids()) - wanted:
        shutil.rmtree(tmp_path / "bench" / "instances" / instance)  # gated again only where it passed here
    gate = check_flow(benchmark=str(tmp_path / "bench"), store=str(tmp_path / "store"), run=RunSettings(work=str(work_root)))
    verdicts = {v.instance_id: v.verdict for v in gate.verdicts if v.instance_id in wanted}
    assert verdicts == dict.fromkeys(wanted, GateVerdict.OK), gate.failed
