"""crossval's merged suite hands every part's per-test results to the harness: the parts'
JUnit reports merged into the one at $TESTPRISM_JUNIT (issue 31, item 3), replayed for real
in the sandbox. Before, each part wrote its report to /tmp/junit-<agent>.xml, which no
backend reads back, so every merged suite was judged by its exit status alone."""

from __future__ import annotations

import shutil
from types import SimpleNamespace

import polars as pl
import pytest
from typer.testing import CliRunner

from testprism.flows.cli import app
from testprism.storage import Store
from testprism.tasks.generate.crossval import write_merged
from tests.synthbench import make_synthetic

pytestmark = [pytest.mark.requires("sandbox")]

#: the parts: one reports in JUnit (with an XML declaration), one by its exit status only,
#: one leaves a report that is not one (it must not spoil the others')
PARTS = {
    "reports": """if grep -q '^fixed' impl.txt; then r=""; else r='<failure message="not fixed"/>'; fi
printf '<?xml version="1.0" encoding="utf-8"?>\\n<testsuites><testsuite name="t">'\\
'<testcase classname="check" name="fixed">%s</testcase></testsuite></testsuites>\\n' "$r" > "$TESTPRISM_JUNIT"
test -z "$r"
""",
    "exits": "grep -q '^fixed' impl.txt\n",
    "junk": 'echo "collected 0 items" > "$TESTPRISM_JUNIT"\n',
}


def test_the_merged_suite_reports_every_parts_cases_at_testprism_junit(tmp_path, work_root):
    bench = make_synthetic(tmp_path / "bench", 1, valid=1, invalid=1)
    shutil.rmtree(bench / "suites")
    peers = []
    for name, script in PARTS.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "run_tests.sh").write_text(script)
        peers.append(SimpleNamespace(name=name, suite=SimpleNamespace(folder=tmp_path / name, files=("run_tests.sh",))))
    assert write_merged(peers, set(PARTS), bench / "suites" / "testhelix" / "synth__0000") == 3
    store = tmp_path / "store"
    result = CliRunner().invoke(app, ["replay", str(bench), "--store", str(store), "--work", str(work_root)])
    assert result.exit_code == 0, result.output

    runs = Store(store).scan("runs").collect()
    found = {r["candidate_id"] or r["state"]: (r["outcome"], [(t["name"], t["outcome"], t["message"]) for t in r["tests"]])
             for r in runs.filter(pl.col("configuration") == "testhelix").iter_rows(named=True)}
    passed = ("P", [("check::fixed", "passed", "")])
    failed = ("F", [("check::fixed", "failed", "not fixed")])
    # synthetic candidates: c0 valid ("fixed-0"), c1 invalid ("broken-1")
    assert found == {"reference": passed, "c0": passed, "buggy": failed, "c1": failed}
