"""`testprism export` (tasks/report/export.py): the SWT-bench and SWE-bench report layouts,
read back by small checks written from those harnesses' documented formats (their
make_run_report summaries and per-instance report.json entries: field names and types),
and the leaderboard tables."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from testprism.flows.cli import app
from testprism.storage import SCHEMAS, Store
from tests.test_report import hand_made_store, score

TRANSITIONS = ("FAIL_TO_PASS", "PASS_TO_PASS", "FAIL_TO_FAIL", "PASS_TO_FAIL")


def case(name: str, outcome: str) -> dict:
    return {"name": name, "outcome": outcome, "message": ""}


def small_store(root: Path) -> Store:
    """One configuration, `gen`, on four instances, each with one valid and one invalid
    candidate: i1 right everywhere (test_a fails on buggy, passes on reference); i2 passes
    on buggy too (no F→P); i3's buggy run did not settle (E); i4's suite is absent."""
    store = Store(root)
    panels, suites, runs = [], [], []
    buggy_tests = {"i1": [case("t::test_a", "failed"), case("t::test_b", "passed")],
                   "i2": [case("t::test_a", "passed")], "i3": []}
    for iid in ("i1", "i2", "i3", "i4"):
        states = [("buggy", None, None), ("reference", None, None), ("candidate", "v", "valid"),
                  ("candidate", "x", "invalid")]
        for kind, cid, label in states:
            panels.append({"instance_id": iid, "source": "s", "state": kind, "candidate_id": cid, "label": label,
                           "state_hash": f"{iid}-{cid or kind}"})
        suites.append({"configuration": "gen", "instance_id": iid, "suite_hash": "h", "present": iid != "i4"})
        if iid == "i4":
            continue
        for kind, cid, label in states:
            outcome = {"buggy": "F", "reference": "P", "valid": "P", "invalid": "F"}[label or kind]
            tests = [case(t["name"], "passed") for t in buggy_tests[iid]] if outcome == "P" else buggy_tests[iid]
            reason = None
            if iid == "i2" and kind == "buggy":
                outcome = "P"
            if iid == "i3" and kind == "buggy":
                outcome, reason, tests = "E", "sandbox_error", []
            runs.append({
                "run_key": f"{iid}-{cid or kind}", "instance_id": iid, "source": "s", "configuration": "gen",
                "state": kind, "candidate_id": cid, "label": label, "outcome": outcome, "reason": reason,
                "exit_code": 0 if outcome == "P" else 1, "duration_s": 0.1, "attempts": 1, "stdout_tail": "",
                "started_at": datetime(2026, 1, 1, tzinfo=UTC), "suite_hash": "h", "state_hash": "h",
                "environment_hash": "h", "policy_hash": "h", "backend": "local", "isolation": "bubblewrap",
                "tests": tests or [case("t::test_a", "passed")] if kind != "buggy" else tests,
            })
    for name, rows in (("panels", panels), ("suites", suites), ("runs", runs)):
        store.append(name, pa.Table.from_pylist(rows, schema=SCHEMAS[name]))
    score(store)
    return store


# -- the checks, written from each harness's format ----------------------------------------------------


def _ids(value: object) -> list[str]:
    assert isinstance(value, list) and all(isinstance(i, str) for i in value) and value == sorted(value)
    return value


# SWT-bench's grading, as its src/grading.py has it (logic-star-ai/swt-bench at 330a649):
# get_eval_report classes each test by its status before and after (None: missing or neither
# PASSED nor FAILED), get_resolution_success decides `resolved` and `added_f2p`; and
# src/log_parsers.py parse_log_reproduction_script makes a script's exit status one test.


def swt_eval_report(pre: dict[str, str], post: dict[str, str]) -> dict[str, list[str]]:
    """get_eval_report: x→P with F→P, x→F with F→F, P→x with P→F, F→x and x→x UNMATCHED."""
    found: dict[tuple, list[str]] = {}
    for test in sorted(pre.keys() | post.keys()):
        key = tuple(side.get(test) if side.get(test) in ("PASSED", "FAILED") else None for side in (pre, post))
        found.setdefault(key, []).append(test)
    at = lambda *keys: sorted(t for k in keys for t in found.get(k, []))  # noqa: E731
    return {"FAIL_TO_PASS": at((None, "PASSED"), ("FAILED", "PASSED")), "PASS_TO_PASS": at(("PASSED", "PASSED")),
            "FAIL_TO_FAIL": at(("FAILED", "FAILED"), (None, "FAILED")),
            "PASS_TO_FAIL": at(("PASSED", "FAILED"), ("PASSED", None)),
            "UNMATCHED": at(("FAILED", None), (None, None))}


def swt_resolution(pred: dict[str, list[str]], base: dict[str, list[str]]) -> tuple[bool, int]:
    """get_resolution_success: (resolved, added_f2p)."""
    base_f2p, pred_f2p = set(base["FAIL_TO_PASS"]), set(pred["FAIL_TO_PASS"])
    added = pred_f2p.issuperset(base_f2p) and len(pred_f2p.difference(base_f2p)) > 0
    not_added_x2f = (len(set(pred["PASS_TO_FAIL"]).difference(base["PASS_TO_FAIL"])) == 0
                     and len(set(pred["FAIL_TO_FAIL"]).difference(base["FAIL_TO_FAIL"])) == 0)
    return added and not_added_x2f, len(pred_f2p.difference(base_f2p))


def swt_reproduction_script(exit_code: int) -> dict[str, str]:
    """parse_log_reproduction_script: one `reproduction_script` test, PASSED on exit 0."""
    return {"reproduction_script": "PASSED" if exit_code == 0 else "FAILED"}


def read_swt_bench(folder: Path, model: str, run_id: str) -> dict[str, dict]:
    """SWT-bench's run report (`<model>.<run_id>.json`, make_run_report) and every instance's
    `<model>/<instance>/report.json` (grading.py get_pred_report), checked field by field;
    the instances' entries returned."""
    summary = json.loads((folder / f"{model}.{run_id}.json").read_text())
    for key in ("total_instances", "completed_instances", "resolved_instances", "unresolved_instances",
                "error_instances", "unstopped_instances"):
        assert isinstance(summary[key], int), key
    for key in ("Mean coverage", "Mean coverage delta"):
        assert isinstance(summary[key], (int, float)), key
    lists = {key: _ids(summary[key]) for key in ("completed_ids", "resolved_ids", "unresolved_ids", "error_ids",
                                                 "unstopped_containers", "unremoved_images")}
    assert summary["completed_instances"] == len(lists["completed_ids"])
    assert summary["resolved_instances"] == len(lists["resolved_ids"])
    assert summary["unresolved_instances"] == len(lists["unresolved_ids"])
    assert summary["error_instances"] == len(lists["error_ids"])
    assert set(lists["resolved_ids"]) | set(lists["unresolved_ids"]) == set(lists["completed_ids"])
    entries = {}
    for report in sorted((folder / model).glob("*/report.json")):
        data = json.loads(report.read_text())
        assert list(data) == [report.parent.name]  # keyed by the instance, as the harness writes it
        entry = data[report.parent.name]
        for key in ("patch_is_None", "patch_exists", "patch_successfully_applied", "resolved"):
            assert isinstance(entry[key], bool), key
        for key in ("coverage_pred", "coverage_gold", "coverage_base", "coverage_delta_pred", "coverage_delta_gold"):
            assert entry[key] is None or isinstance(entry[key], float), key
        if entry["patch_successfully_applied"]:
            assert isinstance(entry["added_f2p"], int)
            for tests in ("tests_base", "tests_pred"):
                assert set(entry[tests]) == {*TRANSITIONS, "UNMATCHED"}
                assert all(isinstance(name, str) for names in entry[tests].values() for name in names)
            assert (entry["resolved"], entry["added_f2p"]) == swt_resolution(entry["tests_pred"], entry["tests_base"])
        assert entry["resolved"] == (report.parent.name in lists["resolved_ids"])
        entries[report.parent.name] = entry
    assert set(entries) == set(lists["completed_ids"]) | set(lists["error_ids"])
    return entries


def read_swe_bench(folder: Path, model: str, run_id: str) -> dict[str, dict]:
    """SWE-bench's run report (`<model>.<run_id>.json`, reporting.py make_run_report, schema
    version 2) and every instance's report.json (grading.py get_eval_report), checked."""
    summary = json.loads((folder / f"{model}.{run_id}.json").read_text())
    assert summary["schema_version"] == 2
    counts = {key: summary[f"{key}_instances"] for key in ("total", "submitted", "completed", "resolved",
                                                           "unresolved", "empty_patch", "error")}
    assert all(isinstance(n, int) for n in counts.values())
    lists = {key: _ids(summary[f"{key}_ids"]) for key in ("completed", "incomplete", "empty_patch", "submitted",
                                                          "resolved", "unresolved", "error")}
    for key in ("completed", "resolved", "unresolved", "empty_patch", "error"):
        assert counts[key] == len(lists[key]), key
    assert set(lists["resolved"]) | set(lists["unresolved"]) == set(lists["completed"])
    entries = {}
    for report in sorted((folder / model).glob("*/report.json")):
        data = json.loads(report.read_text())
        assert list(data) == [report.parent.name]
        entry = data[report.parent.name]
        for key in ("patch_is_None", "patch_exists", "patch_successfully_applied", "resolved"):
            assert isinstance(entry[key], bool), key
        if entry["patch_successfully_applied"]:
            assert set(entry["tests_status"]) == set(TRANSITIONS)
            for section in entry["tests_status"].values():
                assert set(section) == {"success", "failure"}
                assert all(isinstance(name, str) for names in section.values() for name in names)
        assert entry["resolved"] == (report.parent.name in lists["resolved"])
        assert entry["patch_is_None"] == (report.parent.name in lists["empty_patch"])
        entries[report.parent.name] = entry
    assert set(entries) == set(lists["submitted"])
    return entries


# -- the exports ----------------------------------------------------------------------------------------


def test_swt_bench_export_reads_back_as_swt_bench_reports(tmp_path):
    small_store(tmp_path / "store")
    result = CliRunner().invoke(app, ["export", str(tmp_path / "store"), "--format", "swt-bench",
                                      "--out", str(tmp_path / "swt")])
    assert result.exit_code == 0, result.output
    entries = read_swt_bench(tmp_path / "swt", "gen", "testprism")
    assert {iid for iid, e in entries.items() if e["resolved"]} == {"i1"}  # F→P: fails on buggy, passes on reference
    assert entries["i1"]["tests_pred"]["FAIL_TO_PASS"] == ["t::test_a"]
    assert entries["i1"]["tests_pred"]["PASS_TO_PASS"] == ["t::test_b"] and entries["i1"]["added_f2p"] == 1
    assert not entries["i2"]["resolved"] and entries["i2"]["patch_successfully_applied"]
    assert not entries["i3"]["patch_successfully_applied"]  # its buggy run did not settle: an error
    assert entries["i4"]["patch_is_None"] and not entries["i4"]["patch_exists"]
    summary = json.loads((tmp_path / "swt" / "gen.testprism.json").read_text())
    assert summary["error_ids"] == ["i3", "i4"] and summary["total_instances"] == 4


def runs_store(root: Path, runs: dict[str, dict[str, tuple[str, list[dict]]]]) -> Store:
    """One configuration, `gen`: per instance, each state's (outcome, tests) on a panel of
    buggy, reference, one valid (`v`) and one invalid (`x`) candidate; scored."""
    store = Store(root)
    panels, suites, rows = [], [], []
    for iid, states in runs.items():
        suites.append({"configuration": "gen", "instance_id": iid, "suite_hash": "h", "present": True})
        for state, (outcome, tests) in states.items():
            kind, cid, label = ("candidate", state, "valid" if state == "v" else "invalid") if state in "vx" else (
                state, None, None)
            panels.append({"instance_id": iid, "source": "s", "state": kind, "candidate_id": cid, "label": label,
                           "state_hash": f"{iid}-{state}"})
            rows.append({
                "run_key": f"{iid}-{state}", "instance_id": iid, "source": "s", "configuration": "gen",
                "state": kind, "candidate_id": cid, "label": label, "outcome": outcome, "reason": None,
                "exit_code": 0 if outcome == "P" else 1, "duration_s": 0.1, "attempts": 1, "stdout_tail": "",
                "started_at": datetime(2026, 1, 1, tzinfo=UTC), "suite_hash": "h", "state_hash": "h",
                "environment_hash": "h", "policy_hash": "h", "backend": "local", "isolation": "bubblewrap",
                "tests": tests})
    for name, table in (("panels", panels), ("suites", suites), ("runs", rows)):
        store.append(name, pa.Table.from_pylist(table, schema=SCHEMAS[name]))
    score(store)
    return store


def test_swt_bench_export_grades_an_exit_status_suite_as_swt_bench_s_reproduction_script(tmp_path):
    """A suite that reports by exit status alone (no test named on any run) is graded as
    SWT-bench grades a reproduction script: its exit status is one test. Each entry's tests
    and verdict are recomputed here from the runs' exit codes with SWT-bench's own functions.
    Control: the entry the export wrote before (resolved with `added_f2p` 0, the suite's f)
    is what SWT-bench's rule rejects."""
    runs = {"fixes": {"buggy": ("F", []), "reference": ("P", []), "v": ("P", []), "x": ("F", [])},
            "passes-on-buggy": {"buggy": ("P", []), "reference": ("P", []), "v": ("P", []), "x": ("P", [])},
            "fails-on-fix": {"buggy": ("F", []), "reference": ("F", []), "v": ("F", []), "x": ("F", [])}}
    store = runs_store(tmp_path / "store", runs)
    result = CliRunner().invoke(app, ["export", str(tmp_path / "store"), "--format", "swt-bench",
                                      "--out", str(tmp_path / "swt")])
    assert result.exit_code == 0, result.output
    entries = read_swt_bench(tmp_path / "swt", "gen", "testprism")  # resolved == get_resolution_success
    empty = swt_eval_report({}, {})
    for iid, states in runs.items():
        codes = [0 if states[side][0] == "P" else 1 for side in ("buggy", "reference")]
        pred = swt_eval_report(*(swt_reproduction_script(code) for code in codes))
        assert entries[iid]["tests_pred"] == pred and entries[iid]["tests_base"] == empty
        assert (entries[iid]["resolved"], entries[iid]["added_f2p"]) == swt_resolution(pred, empty)
    assert {iid for iid, e in entries.items() if e["resolved"]} == {"fixes"}
    assert entries["fixes"]["added_f2p"] == 1 and entries["passes-on-buggy"]["added_f2p"] == 0
    # control: the old entry, the suite's f as `resolved` beside no test at all
    f = {r["instance_id"]: r["f"] for r in store.read_table("instance_scores").iter_rows(named=True)}
    assert f["fixes"] == 1.0
    assert swt_resolution(empty, empty) == (False, 0) != (f["fixes"] == 1.0, 0)


def test_swt_bench_export_classes_a_test_missing_after_the_fix_as_swt_bench_does(tmp_path):
    """A test failing on the buggy program and missing on the fix is UNMATCHED in SWT-bench
    (get_eval_report's F→x), not FAIL_TO_FAIL, so it does not unresolve the suite. Control:
    a test missing before and failing after (x→F) is FAIL_TO_FAIL and does."""
    failed, passed = (lambda name: case(name, "failed")), (lambda name: case(name, "passed"))
    runs = {"gone-after": {"buggy": ("F", [failed("t::a"), failed("t::gone")]), "reference": ("P", [passed("t::a")]),
                           "v": ("P", [passed("t::a")]), "x": ("F", [failed("t::a")])},
            "new-failing": {"buggy": ("F", [failed("t::a")]),
                            "reference": ("P", [passed("t::a"), failed("t::new")]),
                            "v": ("P", [passed("t::a")]), "x": ("F", [failed("t::a")])}}
    runs_store(tmp_path / "store", runs)
    assert CliRunner().invoke(app, ["export", str(tmp_path / "store"), "--format", "swt-bench",
                                    "--out", str(tmp_path / "swt")]).exit_code == 0
    entries = read_swt_bench(tmp_path / "swt", "gen", "testprism")
    for iid, states in runs.items():
        status = [{t["name"]: t["outcome"].upper() for t in states[side][1]} for side in ("buggy", "reference")]
        assert entries[iid]["tests_pred"] == swt_eval_report(*status)
    assert entries["gone-after"]["tests_pred"]["UNMATCHED"] == ["t::gone"] and entries["gone-after"]["resolved"]
    assert entries["new-failing"]["tests_pred"]["FAIL_TO_FAIL"] == ["t::new"]
    assert not entries["new-failing"]["resolved"]


def test_swe_bench_export_reads_back_and_resolved_is_the_joint_success(tmp_path):
    store = hand_made_store(tmp_path / "store")
    result = CliRunner().invoke(app, ["export", str(tmp_path / "store"), "--format", "swe-bench",
                                      "--out", str(tmp_path / "swe")])
    assert result.exit_code == 0, result.output
    scores = store.read_table("instance_scores")
    for model in ("strong", "biased", "weak"):
        entries = read_swe_bench(tmp_path / "swe", model, "testprism")
        joint = {r["instance_id"] for r in scores.filter(configuration=model).iter_rows(named=True) if r["s"] == 1}
        assert {iid for iid, e in entries.items() if e["resolved"]} == joint
    # the leaderboard's JVR is the harness's resolved share
    board = {r["configuration"]: r["jvr"] for r in store.read_table("leaderboard").iter_rows(named=True)}
    for model, jvr in board.items():
        summary = json.loads((tmp_path / "swe" / f"{model}.testprism.json").read_text())
        assert summary["resolved_instances"] / summary["total_instances"] == pytest.approx(jvr)


def test_swe_bench_export_of_an_absent_suite_is_an_empty_patch(tmp_path):
    small_store(tmp_path / "store")
    assert CliRunner().invoke(app, ["export", str(tmp_path / "store"), "--format", "swe-bench",
                                    "--out", str(tmp_path / "swe")]).exit_code == 0
    summary = json.loads((tmp_path / "swe" / "gen.testprism.json").read_text())
    assert summary["empty_patch_ids"] == ["i4"] and summary["error_ids"] == ["i3"]
    read_swe_bench(tmp_path / "swe", "gen", "testprism")


def test_a_rerun_replaces_a_configuration_s_reports_whole(tmp_path):
    small_store(tmp_path / "store")
    stale = tmp_path / "swt" / "gen" / "gone"
    stale.mkdir(parents=True)
    assert CliRunner().invoke(app, ["export", str(tmp_path / "store"), "--format", "swt-bench",
                                    "--out", str(tmp_path / "swt")]).exit_code == 0
    assert not stale.exists()
    read_swt_bench(tmp_path / "swt", "gen", "testprism")


def test_tables_carry_every_configuration_with_intervals(tmp_path):
    store = hand_made_store(tmp_path / "store")
    board = store.read_table("leaderboard")
    runner = CliRunner()
    text = {fmt: runner.invoke(app, ["export", str(tmp_path / "store"), "--format", fmt]) for fmt in
            ("csv", "json", "markdown", "latex")}
    assert all(r.exit_code == 0 for r in text.values()), {f: r.output for f, r in text.items()}
    rows = list(csv.DictReader(io.StringIO(text["csv"].stdout)))
    assert [r["configuration"] for r in rows] == ["strong", "biased", "weak"]  # best JVR first
    assert set(rows[0]) == set(board.columns)
    records = json.loads(text["json"].stdout)
    assert {r["configuration"]: r["jvr_lo"] for r in records} == dict(zip(board["configuration"], board["jvr_lo"]))
    markdown = text["markdown"].stdout.splitlines()
    assert markdown[0].startswith("| configuration | n |") and len(markdown) == 2 + 3
    biased = next(r for r in board.iter_rows(named=True) if r["configuration"] == "biased")
    assert f"{biased['car']:.3f} [{biased['car_lo']:.3f}, {biased['car_hi']:.3f}]" in text["markdown"].stdout
    latex = text["latex"].stdout
    assert latex.startswith("\\begin{tabular}") and latex.count("\\\\") == 1 + 3
    out = tmp_path / "board.tex"
    assert runner.invoke(app, ["export", str(tmp_path / "store"), "--format", "latex", "--out", str(out)]).exit_code == 0
    assert out.read_text() == latex


def test_latex_escapes_a_configuration_name(tmp_path):
    from testprism.tasks.report.export import leaderboard_latex

    board = hand_made_store(tmp_path / "store").read_table("leaderboard")
    board = board.with_columns(board["configuration"].str.replace("strong", "a_b&c%"))
    assert "a\\_b\\&c\\%" in leaderboard_latex(board)


def test_an_unscored_store_is_one_line_and_status_2(tmp_path):
    Store(tmp_path / "store")
    result = CliRunner().invoke(app, ["export", str(tmp_path / "store"), "--format", "csv"])
    assert result.exit_code == 2 and "testprism score" in result.output
