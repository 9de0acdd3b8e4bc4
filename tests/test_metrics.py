"""Metric semantics on hand-computed stores (README.md, Metrics), including TestPrism's
worked example and empty pools."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl
import pyarrow as pa
import pytest

from testprism.storage import SCHEMAS, Store
from testprism.tasks.score.metrics import instance_scores
from testprism.tasks.score.statistics import distinguishability_table, leaderboard_from_instance_scores


def build_store(tmp_path, instances: dict[str, dict], outcomes: dict[tuple[str, str, str], str],
                mutants: frozenset[str] = frozenset()) -> Store:
    """instances: id → {"valid": [...], "invalid": [...]}; outcomes: (configuration,
    instance, state name) → P/F/E, state name `buggy`, `reference` or a candidate id.
    Runs not listed are absent from the store. Candidates named in `mutants` have
    provenance `mutant`, the others `agent`."""
    store = Store(tmp_path / "store")
    panels, suites, runs = [], [], []
    configurations = sorted({c for c, _, _ in outcomes})
    for iid, pools in instances.items():
        states = [("buggy", None, None), ("reference", None, None)]
        states += [("candidate", c, "valid") for c in pools.get("valid", [])]
        states += [("candidate", c, "invalid") for c in pools.get("invalid", [])]
        for kind, cid, label in states:
            panels.append({"instance_id": iid, "source": "s", "state": kind, "candidate_id": cid, "label": label,
                           "state_hash": f"{iid}-{cid or kind}",
                           "provenance": cid and ("mutant" if cid in mutants else "agent")})
            for conf in configurations:
                outcome = outcomes.get((conf, iid, cid or kind))
                if outcome is None:
                    continue
                runs.append({
                    "run_key": f"{conf}-{iid}-{cid or kind}", "instance_id": iid, "source": "s", "configuration": conf,
                    "state": kind, "candidate_id": cid, "label": label, "outcome": outcome,
                    "reason": "timeout" if outcome == "E" else None, "exit_code": 0, "duration_s": 0.1, "attempts": 1,
                    "stdout_tail": "", "started_at": datetime(2026, 1, 1, tzinfo=UTC), "suite_hash": "h",
                    "state_hash": "h", "environment_hash": "h", "policy_hash": "h", "backend": "local",
                    "isolation": "none", "tests": [],
                })
        for conf in configurations:
            suites.append({"configuration": conf, "instance_id": iid, "suite_hash": "h", "present": True})
    for name, rows in (("panels", panels), ("suites", suites), ("runs", runs)):
        store.append(name, pa.Table.from_pylist(rows, schema=SCHEMAS[name]))
    return store


def board_of(store: Store) -> dict[str, dict]:
    board = leaderboard_from_instance_scores(instance_scores(store))
    return {r["configuration"]: r for r in board.iter_rows(named=True)}


def test_testprism_worked_example_gives_jsf_one_third(tmp_path):
    # Three instances: all right; one valid rejected; reference not rejected on buggy.
    pools = {i: {"valid": ["v1", "v2"], "invalid": ["x1"]} for i in ("i1", "i2", "i3")}
    out = {}
    for i in pools:
        out |= {("c", i, "buggy"): "F", ("c", i, "reference"): "P", ("c", i, "v1"): "P", ("c", i, "v2"): "P",
                ("c", i, "x1"): "F"}
    out[("c", "i2", "v2")] = "F"
    out[("c", "i3", "buggy")] = "P"
    row = board_of(build_store(tmp_path, pools, out))["c"]
    assert row["jvr"] == pytest.approx(1 / 3)
    assert row["grr"] == pytest.approx(2 / 3)
    assert row["car"] == pytest.approx((1 + 0.5 + 1) / 3)
    assert row["ct_car"] == pytest.approx(2 / 3)
    assert row["wdr"] == pytest.approx(1.0)


def test_every_metric_on_a_hand_computed_fixture_with_empty_pools(tmp_path):
    pools = {
        "a": {"valid": ["v1", "v2"], "invalid": ["x1", "x2"]},
        "b": {"valid": [], "invalid": ["x1"]},  # no valid pool: not in CAR's denominator
        "c": {"valid": ["v1"], "invalid": []},  # no invalid pool: not in WDR's denominator
    }
    out = {
        ("k", "a", "buggy"): "F", ("k", "a", "reference"): "P", ("k", "a", "v1"): "P", ("k", "a", "v2"): "E",
        ("k", "a", "x1"): "F", ("k", "a", "x2"): "P",
        ("k", "b", "buggy"): "F", ("k", "b", "reference"): "P", ("k", "b", "x1"): "F",
        ("k", "c", "buggy"): "E", ("k", "c", "reference"): "P",  # c's v1 run is missing: counts as E
    }
    row = board_of(build_store(tmp_path, pools, out))["k"]
    car = (0.5 + 0.0) / 2  # a: v1 accepted, v2 unresolved; c: v1 missing
    wdr = (0.5 + 1.0) / 2  # a: x1 rejected, x2 accepted; b: x1 rejected
    assert row["n_instances"] == 3
    assert row["grr"] == pytest.approx(2 / 3)  # c's buggy run is E: F_c = 0
    assert row["car"] == pytest.approx(car)
    assert row["wdr"] == pytest.approx(wdr)
    assert row["f1"] == pytest.approx(2 * car * wdr / (car + wdr))
    assert row["ct_car"] == pytest.approx(0.0)
    assert row["ct_wdr"] == pytest.approx(0.5)
    assert row["ct_f1"] == pytest.approx(0.0)
    assert row["jvr"] == pytest.approx(1 / 3)  # only b: F_b = 1, no valid to accept, x1 rejected


def test_reference_is_not_part_of_car_and_error_never_leaves_denominator(tmp_path):
    pools = {"a": {"valid": ["v1"], "invalid": ["x1"]}}
    out = {("k", "a", "buggy"): "F", ("k", "a", "reference"): "F", ("k", "a", "v1"): "P", ("k", "a", "x1"): "E"}
    row = board_of(build_store(tmp_path, pools, out))["k"]
    assert row["car"] == 1.0  # the rejected reference does not lower CAR
    assert row["grr"] == 0.0
    assert row["wdr"] == 0.0  # E is not a rejection, and stays in the denominator


def test_configuration_without_any_pool_has_null_ratios(tmp_path):
    pools = {"a": {"valid": [], "invalid": []}}
    out = {("k", "a", "buggy"): "F", ("k", "a", "reference"): "P"}
    row = board_of(build_store(tmp_path, pools, out))["k"]
    assert row["car"] is None and row["wdr"] is None and row["f1"] is None
    assert row["jvr"] == 1.0


def test_newest_row_wins_when_a_run_was_redone(tmp_path):
    pools = {"a": {"valid": ["v1"], "invalid": []}}
    store = build_store(tmp_path, pools, {("k", "a", "buggy"): "F", ("k", "a", "reference"): "P", ("k", "a", "v1"): "E"})
    redo = store.scan("runs").filter(pl.col("candidate_id") == "v1").collect().with_columns(
        outcome=pl.lit("P"), reason=pl.lit(None, pl.String), started_at=pl.col("started_at") + pl.duration(hours=1))
    store.append("runs", redo.to_arrow())
    assert board_of(store)["k"]["car"] == 1.0


def test_distinguishability_counts_separated_pairs_from_the_runs(tmp_path):
    # i1: 2 valid, 3 invalid. The suite accepts v1 (v2 is E), rejects x1 and x2, accepts
    # x3: 1 × 2 of the 2 × 3 pairs are separated. i2 has no invalid candidate: no pair.
    # i3: v1's run is missing, so none of its pairs is separated (missing counts as E).
    pools = {
        "i1": {"valid": ["v1", "v2"], "invalid": ["x1", "x2", "x3"]},
        "i2": {"valid": ["v1"], "invalid": []},
        "i3": {"valid": ["v1"], "invalid": ["x1"]},
    }
    out = {
        ("k", "i1", "buggy"): "F", ("k", "i1", "reference"): "P", ("k", "i1", "v1"): "P", ("k", "i1", "v2"): "E",
        ("k", "i1", "x1"): "F", ("k", "i1", "x2"): "F", ("k", "i1", "x3"): "P",
        ("k", "i2", "buggy"): "F", ("k", "i2", "reference"): "P", ("k", "i2", "v1"): "P",
        ("k", "i3", "buggy"): "F", ("k", "i3", "reference"): "P", ("k", "i3", "x1"): "F",
    }
    scores = instance_scores(build_store(tmp_path, pools, out))
    d = dict(zip(scores["instance_id"], scores["d"], strict=True))
    assert d["i1"] == pytest.approx(2 / 6)
    assert d["i2"] is None
    assert d["i3"] == 0.0
    row = distinguishability_table(scores, replicates=200).row(0, named=True)
    assert row["n_with_pairs"] == 2
    assert row["distinguishability"] == pytest.approx((2 / 6 + 0.0) / 2)
