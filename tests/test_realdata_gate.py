"""Opt-in (`make test-realdata`): real SWE-bench Lite sympy rows at their exact base commits
(the source route's local-repository export), through the release gate, and real agents'
patches labelled by the rows' checks against their official verdicts (docs/realdata-results.md,
2026-12-07 "Release gate over the sympy rows").

Needs TESTPRISM_REALDATA (the rows and predictions, /work/shared/realdata) and a git directory
of sympy/sympy at `$TESTPRISM_REALROWS/repos/sympy__sympy` (a bare snapshot will do, e.g. a
symlink to the one the search tool's `fetch` leaves under /work/.mirror/sympy+sympy/repo).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from testprism.tasks.gate.verdict import GateVerdict
from testprism.tasks.importing.recipe import load_recipes
from testprism.tasks.importing.sources import ProgramSources
from testprism.tasks.importing.swebench import import_rows
from testprism.tasks.execution.run_settings import RunSettings
from tests.benchfixture import diff

REALDATA = os.environ.get("TESTPRISM_REALDATA")
REPOS = Path(os.environ.get("TESTPRISM_REALROWS", "/nonexistent"), "repos")
RECIPE = Path(__file__).resolve().parents[1] / "examples" / "recipes" / "sympy.toml"
#: rows that passed the gate on 2026-12-07 with short check runs (a few seconds each), one of
#: them of version 1.4, which the recipe covers since that gate; and every official patch of them
ROWS = ("sympy__sympy-15345", "sympy__sympy-21614", "sympy__sympy-24152")

pytestmark = [
    pytest.mark.realdata,
    pytest.mark.slow,
    pytest.mark.skipif(not REALDATA, reason="set TESTPRISM_REALDATA to the real-data folder to run"),
    pytest.mark.skipif(not (REPOS / "sympy__sympy").exists(),
                       reason="link a sympy/sympy git directory at $TESTPRISM_REALROWS/repos/sympy__sympy"),
    pytest.mark.requires("sandbox"),
    pytest.mark.timeout(3600),
]


def _jsonl(name: str) -> list[dict]:
    return [json.loads(line) for line in Path(REALDATA, name).read_text().splitlines() if line.strip()]


def test_real_rows_pass_the_gate_and_real_patches_keep_their_official_labels(tmp_path, work_root):
    from testprism.flows.check import check_flow
    from testprism.flows.collect import collect_flow

    rows = [r for r in _jsonl("swebench_lite_sympy_dev.jsonl") if r["instance_id"] in ROWS]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    bench = tmp_path / "bench"
    report = import_rows(tmp_path / "rows.jsonl", bench, load_recipes([RECIPE]), ProgramSources.from_options(REPOS, None))
    assert sorted(report.imported) == sorted(ROWS), report.issues

    gate = check_flow(benchmark=str(bench), store=str(tmp_path / "store"), run=RunSettings(work=str(work_root)))
    assert {v.instance_id: v.verdict for v in gate.verdicts} == dict.fromkeys(ROWS, GateVerdict.OK), gate.failed

    predictions = [p for p in _jsonl("predictions_resolved_dev.jsonl") if p["instance_id"] in ROWS]
    # Control: a patch that leaves the bug (a comment over the file the reference fixes) must be
    # labelled invalid, so the agreement below cannot come from labelling everything valid.
    row = rows[0]
    fixed = row["patch"].split("\n", 1)[0].split(" b/", 1)[1]
    text = (bench / "instances" / row["instance_id"] / "program" / fixed).read_text()
    predictions.append({"instance_id": row["instance_id"], "model_name_or_path": "control-comment-only",
                        "model_patch": diff(fixed, text, "# leaves the bug\n" + text), "official_resolved": False})
    (tmp_path / "predictions.jsonl").write_text("".join(json.dumps(p) + "\n" for p in predictions))
    summary = collect_flow(benchmark=str(bench), store=str(tmp_path / "store"),
                           predictions=[str(tmp_path / "predictions.jsonl")], run=RunSettings(work=str(work_root)))
    agree, compared = summary.agreement
    # none of these rows' patches is a copy of the reference: each is compared (an exact duplicate by its twin's label)
    assert (agree, compared) == (len(predictions), len(predictions)), summary.funnel
    assert summary.reused == 4 * len(ROWS)  # the gate's gold runs (buggy, reference, twice each), not run again
