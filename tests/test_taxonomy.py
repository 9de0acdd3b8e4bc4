"""The failure taxonomy (tasks/score/taxonomy.py): each rule on hand-built runs, and the
hand-labelled fixture (tests/data/taxonomy_fixture.toml) reproduced on a replay of the
bundled benchmark's broken, weak and biased suites."""

from __future__ import annotations

import shutil
import tomllib
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest

from testprism.tasks.execution.run_settings import RunSettings
from testprism.storage import SCHEMAS, Store
from testprism.tasks.replay.settings import ReplaySettings
from testprism.tasks.score.metrics import instance_scores
from tests.benchfixture import BUGGY, REFERENCE, WEAK, diff, make_benchmark
from testprism.tasks.score.taxonomy import (
    KINDS,
    candidate_overlaps,
    failure_taxonomy,
    overlapping_reference_lines,
    taxonomy_shares,
)

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
FIXTURE = Path(__file__).with_name("data") / "taxonomy_fixture.toml"

# -- hand-built stores ------------------------------------------------------------------------

PANEL = [("buggy", None, None), ("reference", None, None), ("candidate", "v1", "valid"),
         ("candidate", "x1", "invalid"), ("candidate", "x2", "invalid")]
ALL_RIGHT = {"buggy": "F", "reference": "P", "v1": "P", "x1": "F", "x2": "F"}


def case(name: str, outcome: str, message: str = "") -> dict:
    return {"name": name, "outcome": outcome, "message": message}


def make_store(root: Path, cells: dict[str, dict[str, dict]]) -> Store:
    """`cells`: configuration → {state or candidate id → run overrides}; every run not
    named is the right verdict (ALL_RIGHT) on instance `pkg__i`."""
    store = Store(root)
    store.append("panels", pa.table({
        "instance_id": ["pkg__i"] * len(PANEL), "source": ["pkg"] * len(PANEL),
        "state": [s for s, _, _ in PANEL], "candidate_id": [c for _, c, _ in PANEL],
        "label": [lab for _, _, lab in PANEL], "state_hash": [f"h{i}" for i in range(len(PANEL))],
        "provenance": ["agent" if c else None for _, c, _ in PANEL]}))
    store.append("suites", pa.table({"configuration": list(cells), "instance_id": ["pkg__i"] * len(cells),
                                     "suite_hash": ["s"] * len(cells), "present": [True] * len(cells)}))
    rows = []
    for configuration, overrides in cells.items():
        for state, candidate, label in PANEL:
            key = candidate or state
            run = {"outcome": ALL_RIGHT[key], "tests": [], "exit_code": 0 if ALL_RIGHT[key] == "P" else 1,
                   "reason": None, "stdout_tail": ""}
            run.update(overrides.get(key, {}))
            if run is None or overrides.get(key) == "absent":
                continue
            rows.append({"run_key": f"{configuration}-{key}", "instance_id": "pkg__i", "source": "pkg",
                         "configuration": configuration, "state": state, "candidate_id": candidate, "label": label,
                         "started_at": datetime(2026, 1, 1, tzinfo=UTC), **run})
    store.append("runs", pa.Table.from_pylist(rows, schema=SCHEMAS["runs"]))
    return store


def coverage_rows(**per_configuration: tuple[float | None, list[str]]) -> pl.DataFrame:
    return pl.DataFrame(
        [{"configuration": c, "instance_id": "pkg__i", "delta_c": d, "missed_lines": m}
         for c, (d, m) in per_configuration.items()],
        schema={"configuration": pl.String, "instance_id": pl.String, "delta_c": pl.Float64,
                "missed_lines": pl.List(pl.String)})


OVERLAPS = pl.DataFrame({"instance_id": ["pkg__i", "pkg__i"], "candidate_id": ["x1", "x2"],
                         "overlap": [["m.py:3", "m.py:4"], ["m.py:9"]]})


def taxonomy_of(tmp_path, cells, coverage=None, overlaps=OVERLAPS) -> dict[str, dict]:
    store = make_store(tmp_path / "store", cells)
    table = failure_taxonomy(store, instance_scores(store), coverage, overlaps)
    return {r["configuration"]: r for r in table.iter_rows(named=True)}


def test_execution_logic_error_from_error_cases_messages_and_collection_failures(tmp_path):
    found = taxonomy_of(tmp_path, {
        "fixture": {"reference": {"outcome": "F", "exit_code": 1, "tests": [
            case("t::test_a", "error", "file t.py, line 4\nE       fixture 'sample' not found"),
            case("t::test_b", "passed")]}},
        "name": {"reference": {"outcome": "F", "exit_code": 1, "tests": [
            case("t::test_c", "failed", "AssertionError: assert 2 == 3"),
            case("t::test_d", "failed", "NameError: name 'helper' is not defined")]}},
        "go": {"reference": {"outcome": "F", "exit_code": 2, "tests": [
            case("TestX", "failed", "tmp_test [build failed]\n./x_test.go:9:2: undefined: sort")]}},
        "js": {"reference": {"outcome": "F", "exit_code": 1, "tests": [
            case("splits", "failed", "ReferenceError: parseQeury is not defined")]}},
        "collection": {"reference": {"outcome": "F", "exit_code": 2, "tests": [],
                                     "stdout_tail": "ERROR collecting tmp/test_x.py"}},
        "assertion": {"reference": {"outcome": "F", "exit_code": 1, "tests": [
            case("t::test_e", "failed", "AssertionError: assert [1] == [2]")]}},
        "timeout": {"reference": {"outcome": "E", "exit_code": None, "reason": "timeout"}},
    })
    for name in ("fixture", "name", "go", "js", "collection"):
        assert found[name]["kind"] == "execution_logic_error", name
        assert found[name]["state"] == "reference"
    assert "t::test_a" in found["fixture"]["evidence"] and "fixture 'sample'" in found["fixture"]["evidence"]
    assert found["name"]["evidence"].startswith("t::test_d: NameError")
    assert found["collection"]["evidence_basis"] == "output" and "exit 2" in found["collection"]["evidence"]
    assert found["fixture"]["evidence_basis"] == "junit"
    # an assertion on the reference judges it wrongly; a timeout decides nothing
    assert found["assertion"]["kind"] == "faulty_check" and "assert [1] == [2]" in found["assertion"]["evidence"]
    assert found["timeout"]["kind"] == "unresolved" and found["timeout"]["evidence_basis"] == "run_reason"


def test_coverage_gap_and_faulty_check_from_coverage(tmp_path):
    passes = {"outcome": "P", "exit_code": 0}
    found = taxonomy_of(tmp_path, {
        "buggy-unrun": {"buggy": passes},
        "buggy-run": {"buggy": passes},
        "gap": {"x1": passes, "x2": passes},  # x1 overlaps m.py:4, which was never executed
        "executed": {"x1": passes},  # only m.py:9 was missed: x1's lines ran
        "no-coverage": {"x1": passes},
    }, coverage_rows(**{"buggy-unrun": (0.0, ["m.py:3", "m.py:4", "m.py:9"]), "buggy-run": (0.5, ["m.py:9"]),
                        "gap": (0.5, ["m.py:4"]), "executed": (0.5, ["m.py:9"]), "no-coverage": (None, [])}))
    assert found["buggy-unrun"]["kind"] == "coverage_gap" and found["buggy-unrun"]["state"] == "buggy"
    assert found["buggy-unrun"]["evidence_basis"] == "reference_delta_c"
    assert found["buggy-run"]["kind"] == "faulty_check"
    assert found["gap"]["kind"] == "coverage_gap" and found["gap"]["candidate_id"] == "x1"
    assert found["gap"]["evidence_basis"] == "reference_coverage" and "m.py:4" in found["gap"]["evidence"]
    assert found["executed"]["kind"] == "faulty_check" and found["executed"]["candidate_id"] == "x1"
    assert found["executed"]["evidence_basis"] == "reference_coverage"
    assert found["no-coverage"]["kind"] == "unclassified" and found["no-coverage"]["evidence_basis"] == "no_coverage"


def own_rows(*rows: tuple[str, str, int | None, list[str], list[str], str | None]) -> pl.DataFrame:
    """`scores/candidate_coverage` rows: (configuration, candidate, changed lines, executed
    lines, missed lines, reason)."""
    return pl.DataFrame(
        [{"configuration": c, "instance_id": "pkg__i", "candidate_id": x, "changed_lines": n, "executed_lines": e,
          "missed_lines": u, "reason": r, "coverage_key": f"k-{c}-{x}"} for c, x, n, e, u, r in rows],
        schema={"configuration": pl.String, "instance_id": pl.String, "candidate_id": pl.String,
                "changed_lines": pl.Int32, "executed_lines": pl.List(pl.String),
                "missed_lines": pl.List(pl.String), "reason": pl.String, "coverage_key": pl.String})


def test_candidate_coverage_decides_before_the_reference_approximation(tmp_path):
    passes = {"outcome": "P", "exit_code": 0}
    store = make_store(tmp_path / "store", {"unreached": {"x1": passes}, "reached": {"x1": passes},
                                            "unmeasured": {"x1": passes}, "absent": {"x1": passes}})
    # the reference approximation says the opposite of the candidate's own state in both cases
    coverage = coverage_rows(unreached=(1.0, []), reached=(0.5, ["m.py:4"]), unmeasured=(0.5, ["m.py:4"]),
                             absent=(0.5, ["m.py:4"]))
    own = own_rows(("unreached", "x1", 3, ["m.py:3"], ["m.py:8", "m.py:9"], None),
                   ("reached", "x1", 2, ["m.py:3", "m.py:8"], [], None),
                   ("unmeasured", "x1", None, [], [], "coverage_failed"))
    found = {r["configuration"]: r for r in
             failure_taxonomy(store, instance_scores(store), coverage, OVERLAPS, own).iter_rows(named=True)}
    assert found["unreached"]["kind"] == "coverage_gap" and found["unreached"]["evidence_basis"] == "candidate_coverage"
    assert "m.py:8, m.py:9" in found["unreached"]["evidence"]
    assert found["reached"]["kind"] == "faulty_check" and found["reached"]["evidence_basis"] == "candidate_coverage"
    assert "m.py:3, m.py:8" in found["reached"]["evidence"]
    # not measured on its own state: the approximation decides, and says why it had to
    assert found["unmeasured"]["kind"] == "coverage_gap" and found["unmeasured"]["evidence_basis"] == "reference_coverage"
    assert "(its own state: coverage_failed)" in found["unmeasured"]["evidence"]
    assert found["absent"]["evidence_basis"] == "reference_coverage" and "its own state" not in found["absent"]["evidence"]


def test_no_overlap_and_no_diff_are_unclassified_not_guessed(tmp_path):
    passes = {"outcome": "P", "exit_code": 0}
    overlaps = pl.DataFrame({"instance_id": ["pkg__i"], "candidate_id": ["x1"], "overlap": [[]]},
                            schema=OVERLAPS.schema)
    store = make_store(tmp_path / "store", {"c": {"x1": passes}})
    coverage = coverage_rows(c=(0.0, ["m.py:3"]))
    (row,) = failure_taxonomy(store, instance_scores(store), coverage, overlaps).iter_rows(named=True)
    assert row["kind"] == "unclassified" and "overlap no reference hunk" in row["evidence"]
    (row,) = failure_taxonomy(store, instance_scores(store), coverage, None).iter_rows(named=True)
    assert row["kind"] == "unclassified" and row["evidence_basis"] == "no_diff"


def test_valid_rejected_keeps_the_failing_assertion_and_rules_apply_in_order(tmp_path):
    found = taxonomy_of(tmp_path, {
        "biased": {"v1": {"outcome": "F", "exit_code": 1, "tests": [
            case("t::test_ok", "passed"), case("t::test_helper", "failed", "AttributeError: module 'pkg.m' has no "
                                                                          "attribute '_helper'")]}},
        # a gap (x1) and a biased rejection (v1) on the same instance: the gap is rule 2, first
        "both": {"v1": {"outcome": "F", "exit_code": 1, "tests": [case("t::test_v", "failed", "assert 1 == 2")]},
                 "x1": {"outcome": "P", "exit_code": 0}},
        "missing": {"x2": {"outcome": "E", "reason": "sandbox_error", "exit_code": None}},
        "clean": {},
    }, coverage_rows(biased=(1.0, []), both=(0.5, ["m.py:3"]), missing=(1.0, []), clean=(1.0, [])))
    assert found["biased"]["kind"] == "faulty_check" and found["biased"]["finding"] == "valid_rejected"
    assert found["biased"]["evidence"].startswith("t::test_helper: AttributeError: module 'pkg.m'")
    assert found["both"]["kind"] == "coverage_gap" and found["both"]["candidate_id"] == "x1"
    assert found["missing"]["kind"] == "unresolved"
    assert "clean" not in found  # S_i = 1: not in the taxonomy


def test_shares_list_every_kind_per_configuration():
    taxonomy = pl.DataFrame({"configuration": ["a", "a", "a", "b"], "kind": ["coverage_gap", "coverage_gap",
                                                                             "faulty_check", "unresolved"]})
    shares = taxonomy_shares(taxonomy)
    assert shares.height == 2 * len(KINDS)
    a = {r["kind"]: (r["count"], r["share"]) for r in shares.filter(pl.col("configuration") == "a").iter_rows(named=True)}
    assert a["coverage_gap"] == (2, pytest.approx(2 / 3)) and a["faulty_check"] == (1, pytest.approx(1 / 3))
    assert a["execution_logic_error"] == (0, 0.0)


def test_overlap_takes_the_reference_hunks_a_candidate_touches():
    folder = EXAMPLES / "instances" / "textkit__snake-case-acronyms"
    reference = (folder / "reference.diff").read_bytes()
    doubles = overlapping_reference_lines(reference, (folder / "candidates" / "regex-doubles-underscore.diff").read_bytes())
    lookahead = overlapping_reference_lines(reference, (folder / "candidates" / "lookahead-index-error.diff").read_bytes())
    assert "textkit/case.py:8" in doubles and "textkit/case.py:33" in doubles  # both hunks
    assert lookahead == ["textkit/case.py:33"]  # the loop's hunk only
    table = candidate_overlaps(EXAMPLES, ["textkit__snake-case-acronyms"])
    assert table.height == 9 and table["overlap"].null_count() == 0


# -- the hand-labelled fixture, replayed ---------------------------------------------------------


def _fixture_benchmark(root: Path, fixture: dict) -> Path:
    """The fixture's instances, with the labelled suites only (fewer runs)."""
    for instance_id in fixture["instances"]:
        shutil.copytree(EXAMPLES / "instances" / instance_id, root / "instances" / instance_id)
    for label in fixture["label"]:
        shutil.copytree(EXAMPLES / "suites" / label["configuration"] / label["instance_id"],
                        root / "suites" / label["configuration"] / label["instance_id"])
    return root


@pytest.mark.slow
@pytest.mark.timeout(900)  # 55 runs and their confirmations, 5 coverage runs
@pytest.mark.requires("sandbox")
def test_the_taxonomy_reproduces_the_hand_labels_on_a_replay(tmp_path, work_root):
    from testprism.flows.replay import replay_flow
    from testprism.tasks.score.coverage.candidates import measure_candidate_coverage
    from testprism.tasks.score.coverage.probe import measure_coverage
    from testprism.tasks.score.scores import score_tables, write_scores

    fixture = tomllib.loads(FIXTURE.read_text())
    bench = _fixture_benchmark(tmp_path / "bench", fixture)
    store_root = tmp_path / "store"
    replay_flow(benchmark=str(bench), store=str(store_root), run=RunSettings(backend="local", work=str(work_root)), settings=ReplaySettings(concurrency=2))
    measure_coverage(bench, store_root, work_root, "local", concurrency=2)
    measure_candidate_coverage(bench, store_root, work_root, "local", concurrency=2)
    tables = score_tables(Store(store_root), replicates=100, seed=1, benchmark=bench)
    found = {(r["configuration"], r["instance_id"]): r for r in tables["failure_taxonomy"].iter_rows(named=True)}
    labels = fixture["label"]
    labelled = {(label["configuration"], label["instance_id"]) for label in labels}
    for key, row in found.items():  # every other S_i = 0 is a configuration without a suite there
        assert key in labelled or (row["kind"] == "unresolved" and "missing_suite" in row["evidence"]), row
    kinds = set()
    for label in labels:
        row = found[(label["configuration"], label["instance_id"])]
        where = f"{label['configuration']}/{label['instance_id']}: {row}"
        assert row["kind"] == label["kind"], where
        for field in ("state", "candidate_id", "finding"):
            if field in label:
                assert row[field] == label[field], where
        if "evidence" in label:
            assert label["evidence"] in row["evidence"], where
        kinds.add(row["kind"])
    assert {"execution_logic_error", "coverage_gap", "faulty_check"} <= kinds
    shares = tables["failure_taxonomy_shares"]
    assert shares.group_by("configuration").agg(pl.col("share").sum())["share"].to_list() == pytest.approx([1.0] * 3)
    from testprism.tasks.report.html import write_report

    write_scores(Store(store_root), tables)
    html = write_report(store_root, tmp_path / "report.html", benchmark_root=bench).read_text()
    assert "Failure taxonomy" in html and "fixture &#x27;encoded_sample&#x27; not found" in html


# -- coverage on the accepted invalid candidates' own states -----------------------------------

ODD_WRONG = REFERENCE.replace("        return ordered[mid]\n", "        return ordered[0]\n")
#: runs both branches, never checks that the input is left alone
BOTH_BRANCHES = WEAK + '''

def test_odd_length():
    assert median([3, 1, 2]) == 2
'''


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.requires("sandbox")
def test_candidate_state_coverage_tells_a_gap_from_a_faulty_check(tmp_path, work_root, monkeypatch):
    """`weak` (even input only) accepts `odd-branch-wrong`, whose one differing line lies in
    the odd branch it never runs: a coverage gap. `both-branches` rejects that one but
    accepts `sorts-in-place`, every line of whose difference it runs (it just never looks
    at the caller's list): a faulty check."""
    from testprism.flows.replay import replay_flow
    from testprism.tasks.score.coverage import probe
    from testprism.tasks.score.coverage.candidates import measure_candidate_coverage
    from testprism.tasks.score.scores import score_tables

    bench = make_benchmark(tmp_path / "bench", {"weak": {"test_median.py": WEAK},
                                                "both-branches": {"test_median.py": BOTH_BRANCHES}},
                           {"odd-branch-wrong": ("invalid", diff("stats.py", BUGGY, ODD_WRONG))})
    store_root = tmp_path / "store"
    replay_flow(benchmark=str(bench), store=str(store_root), run=RunSettings(backend="local", work=str(work_root)), settings=ReplaySettings(concurrency=2))
    probe.measure_coverage(bench, store_root, work_root, "local", concurrency=2)
    own = measure_candidate_coverage(bench, store_root, work_root, "local", concurrency=2)
    rows = {(r["configuration"], r["candidate_id"]): r for r in own.iter_rows(named=True)}
    # exactly the accepted invalid candidates were measured
    assert set(rows) == {("weak", "odd-branch-wrong"), ("weak", "sorts-in-place"), ("both-branches", "sorts-in-place")}
    assert all(r["reason"] is None for r in rows.values())
    gap = rows[("weak", "odd-branch-wrong")]
    assert gap["changed_lines"] == 1 and gap["missed_lines"] == ["stats.py:6"]
    # the candidate's numbering: sorts-in-place's lines 3-7; weak never runs the odd branch's return
    assert rows[("weak", "sorts-in-place")]["missed_lines"] == ["stats.py:6"]
    both = rows[("both-branches", "sorts-in-place")]
    assert both["missed_lines"] == [] and both["covered_lines"] == both["changed_lines"] == 5

    found = {r["configuration"]: r for r in
             score_tables(Store(store_root), replicates=10, seed=1, benchmark=bench)["failure_taxonomy"].iter_rows(named=True)}
    assert found["weak"]["kind"] == "coverage_gap" and found["weak"]["candidate_id"] == "odd-branch-wrong"
    assert found["weak"]["evidence_basis"] == "candidate_coverage" and "stats.py:6" in found["weak"]["evidence"]
    assert found["both-branches"]["kind"] == "faulty_check" and found["both-branches"]["candidate_id"] == "sorts-in-place"
    assert found["both-branches"]["evidence_basis"] == "candidate_coverage"

    # a re-score runs nothing: the stored rows are kept under their keys
    monkeypatch.setattr(probe, "measure_one", lambda *a, **k: pytest.fail("measured again"))
    assert measure_candidate_coverage(bench, store_root, work_root, "local").equals(own)
