"""Panel-size curves (tasks/score/curves.py): JVR and diversity at k under the three
schedules, on a hand-built store whose curves are worked out by hand."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

from testprism.storage import SCHEMAS, Store
from testprism.tasks.score.curves import (InstanceDistances, SideDistances, benchmark_valid_sides, invalid_side,
                                          panel_curves, panel_distances)
from testprism.tasks.score.metrics import instance_scores

VALID, INVALID = ("v1", "v2", "v3"), ("x1", "x2", "x3")
#: What each configuration gets wrong (everything else is right, buggy F, reference P):
#: A rejects i1's v3 and accepts i2's x3; B rejects i2's v2 and accepts i2's x1.
WRONG = {("A", "i1", "v3"), ("A", "i2", "x3"), ("B", "i2", "v2"), ("B", "i2", "x1")}
#: Failed checks of the invalid candidates (collect's `candidates`): Jaccard by hand below.
FAILED = {"i1": {"x1": ["a"], "x2": ["a", "b"], "x3": ["c"]}, "i2": {"x1": ["a"], "x2": ["b"], "x3": ["a", "b"]}}


def run_row(conf: str, iid: str, state: str, cid: str | None, label: str | None, outcome: str) -> dict:
    return {"run_key": f"{conf}-{iid}-{cid or state}", "instance_id": iid, "source": "s", "configuration": conf,
            "state": state, "candidate_id": cid, "label": label, "outcome": outcome, "reason": None, "exit_code": 0,
            "duration_s": 0.1, "attempts": 1, "stdout_tail": "", "started_at": datetime(2026, 1, 1, tzinfo=UTC),
            "suite_hash": "h", "state_hash": "h", "environment_hash": "h", "policy_hash": "h", "backend": "local",
            "isolation": "bubblewrap", "tests": []}


def curve_store(root: Path, collected: bool = True) -> Store:
    store = Store(root)
    panels, suites, runs = [], [], []
    for iid in ("i1", "i2"):
        states = [("buggy", None, None), ("reference", None, None)] + [("candidate", c, "valid") for c in VALID] \
            + [("candidate", c, "invalid") for c in INVALID]
        panels += [{"instance_id": iid, "source": "s", "state": st, "candidate_id": c, "label": lab,
                    "state_hash": f"{iid}-{c or st}"} for st, c, lab in states]
        for conf in ("A", "B"):
            suites.append({"configuration": conf, "instance_id": iid, "suite_hash": "h", "present": True})
            for st, c, lab in states:
                right = {"buggy": "F", "reference": "P", "valid": "P", "invalid": "F"}[lab or st]
                wrong = {"P": "F", "F": "P"}[right]
                runs.append(run_row(conf, iid, st, c, lab, wrong if (conf, iid, c) in WRONG else right))
    for name, rows in (("panels", panels), ("suites", suites), ("runs", runs)):
        store.append(name, pa.Table.from_pylist(rows, schema=SCHEMAS[name]))
    if collected:
        store.append("candidates", pa.Table.from_pylist([
            {"flow_run": "20260101T000000Z-a", "instance_id": iid, "candidate_id": cid, "origin": "x", "model": None,
             "official_label": None, "label": "invalid", "reason": None, "failed_checks": checks, "norm_key": cid,
             "duplicate_of": None, "state_hash": "h", "in_panel": True, "patch": ""}
            for iid, pool in FAILED.items() for cid, checks in pool.items()], schema=SCHEMAS["candidates"]))
    return store


def hand_distances(store: Store) -> dict[str, InstanceDistances]:
    """Valid AST distances given by hand (i1 starts at v1: order v1, v2, v3; i2 starts at v3:
    order v3, v1, v2); invalid ones from the stored failed checks (i1: x1, x3, x2; i2: x1, x2, x3)."""
    def side(d12: float, d13: float, d23: float, start: int) -> SideDistances:
        m = np.array([[0, d12, d13], [d12, 0, d23], [d13, d23, 0]], dtype=float)
        return SideDistances(VALID, m, m, start)

    invalid = panel_distances(store)
    valid = {"i1": side(0.9, 0.2, 0.5, 0), "i2": side(0.4, 0.8, 0.3, 2)}
    return {i: InstanceDistances(valid[i], invalid[i].invalid) for i in ("i1", "i2")}


def curve(table: pl.DataFrame, schedule: str, conf: str, column: str = "jvr") -> list[float | None]:
    return table.filter((pl.col("schedule") == schedule) & (pl.col("configuration") == conf)).sort("k")[column].to_list()


def test_curves_by_hand_under_each_schedule(tmp_path):
    store = curve_store(tmp_path / "store")
    table = panel_curves(store, distances=hand_distances(store), seeds=1000)
    assert set(table["schedule"]) == {"random", "diversity", "hardest"}
    assert set(table["n_instances"]) == {2} and table["k"].max() == 3
    # hardest-first: i1 v3 first (A wrong); i2 valid v2 first, invalid x1, x3 first (one configuration each)
    assert curve(table, "hardest", "A") == [0.5, 0.0, 0.0]
    assert curve(table, "hardest", "B") == [0.5, 0.5, 0.5]
    # diversity-first puts A's mistakes last, B's i2 x1 first
    assert curve(table, "diversity", "A") == [1.0, 1.0, 0.0]
    assert curve(table, "diversity", "B") == [0.5, 0.5, 0.5]
    # random: A misses i1 unless v3 is among the first k, i2 unless x3 is: (1 - k/3) each
    assert curve(table, "random", "A") == pytest.approx([2 / 3, 1 / 3, 0.0], abs=0.04)
    assert curve(table, "random", "B") == pytest.approx([(1 + 4 / 9) / 2, (1 + 1 / 9) / 2, 0.5], abs=0.04)
    # at k = the pool every schedule is the leaderboard's JVR
    board = instance_scores(store).group_by("configuration").agg(pl.col("s").mean())
    for conf, jvr in board.iter_rows():
        assert [curve(table, s, conf)[-1] for s in ("random", "diversity", "hardest")] == pytest.approx([jvr] * 3)


def test_random_with_few_seeds_lies_between_hardest_and_diversity_first(tmp_path):
    store = curve_store(tmp_path / "store")
    table = panel_curves(store, distances=hand_distances(store))  # the default 20 seeds
    assert table.equals(panel_curves(store, distances=hand_distances(store)))  # seeded
    hardest, random, diverse = (curve(table, s, "A") for s in ("hardest", "random", "diversity"))
    assert hardest[0] < random[0] < diverse[0] and hardest[1] < random[1] < diverse[1]
    assert random[0] > random[1] > random[2] == 0.0


def test_diversity_at_k(tmp_path):
    store = curve_store(tmp_path / "store")
    table = panel_curves(store, distances=hand_distances(store), seeds=50)
    # diversity-first: valid i1 v1,v2 (0.9) then all (1.6/3); i2 v3,v1 (0.8) then all (1.5/3)
    valid = curve(table, "diversity", "A", "valid_diversity")
    assert valid[0] is None and valid[1:] == pytest.approx([0.85, (1.6 / 3 + 0.5) / 2])
    # invalid Jaccard: i1 x1,x3 share nothing, then 1/6; i2 x1,x2 nothing, then 1/3
    invalid = curve(table, "diversity", "B", "invalid_diversity")
    assert invalid[0] is None and invalid[1:] == pytest.approx([0.0, 0.25])
    # the whole pool is the same set whatever the order; random's k=2 is the mean over pairs
    for schedule in ("random", "hardest"):
        assert curve(table, schedule, "A", "valid_diversity")[2] == pytest.approx((1.6 / 3 + 0.5) / 2)
        assert curve(table, schedule, "A", "invalid_diversity")[2] == pytest.approx(0.25)
    assert curve(table, "diversity", "A", "valid_diversity")[1] > curve(table, "random", "A", "valid_diversity")[1]


def test_unknown_distances_give_null_diversity_and_no_diversity_schedule(tmp_path):
    store = curve_store(tmp_path / "store", collected=False)
    table = panel_curves(store)
    assert set(table["schedule"]) == {"random", "hardest"}
    assert table["valid_diversity"].null_count() == table.height == table["invalid_diversity"].null_count()
    assert curve(table, "hardest", "A") == [0.5, 0.0, 0.0]
    # one instance known, the other not: still null (never a mean over the known ones alone)
    partial = panel_curves(store, distances={"i1": hand_distances(curve_store(tmp_path / "other"))["i1"]})
    assert partial["valid_diversity"].null_count() == partial.height


def tiny_benchmark(root: Path) -> Path:
    """One instance, i1: a program with two functions; the reference and v1 change `f`
    alike, v2 rewrites `g`, v3 does not apply."""
    folder = root / "instances" / "i1"
    (folder / "program").mkdir(parents=True)
    (folder / "program" / "m.py").write_text("def f(x):\n    return x\n\n\ndef g(y):\n    return y\n")
    (folder / "instruction.md").write_text("fix it\n")
    f_fix = "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n def f(x):\n-    return x\n+    return x + 1\n"
    g_fix = ("--- a/m.py\n+++ b/m.py\n@@ -3,4 +3,6 @@\n \n \n def g(y):\n-    return y\n"
             "+    if y is None:\n+        raise ValueError(y)\n+    return [y, y]\n")
    broken = "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n def f(x):\n-    return nothing_here\n+    return 2\n"
    (folder / "reference.diff").write_text(f_fix)
    (folder / "checks.diff").write_text("--- a/test_m.py\n+++ b/test_m.py\n@@ -0,0 +1 @@\n+pass\n")
    toml = 'id = "i1"\nsource = "s"\n[checks]\ncommand = "true"\nfail_to_pass = ["t"]\n'
    for cid, patch in (("v1", f_fix), ("v2", g_fix), ("v3", broken)):
        (folder / f"{cid}.diff").write_text(patch)
        toml += f'[[candidates]]\nid = "{cid}"\nlabel = "valid"\npatch = "{cid}.diff"\n'
    (folder / "instance.toml").write_text(toml)
    return root


def test_ast_distances_of_tiny_patches_from_the_benchmark(tmp_path):
    bench = tiny_benchmark(tmp_path / "bench")
    sides = benchmark_valid_sides(bench, {"i1": ("v1", "v2")})
    side = sides["i1"]
    assert side.ids == ("v1", "v2") and side.distance[0, 0] == 0.0
    assert 0.0 < side.distance[0, 1] == side.distance[1, 0] <= 1.0
    assert side.start == 1  # v1 is the reference's change: v2 is the farthest from it
    assert benchmark_valid_sides(bench, {"i1": ("v1", "v3")}) == {}  # v3 does not apply: unknown, not a guess
    assert benchmark_valid_sides(bench, {"i1": ("v1", "v9")}) == {}  # not in the benchmark


def test_invalid_sides_from_the_failed_checks_the_benchmark_records(tmp_path):
    """Without a collection in the store, the invalid side comes from the benchmark's
    `failed_checks`; a pool with one candidate unrecorded stays unknown, not guessed."""
    bench = tiny_benchmark(tmp_path / "bench")
    toml = bench / "instances" / "i2" / "instance.toml"
    shutil.copytree(bench / "instances" / "i1", toml.parent)
    text = toml.read_text().replace('id = "i1"', 'id = "i2"').replace(
        'fail_to_pass = ["t"]', 'fail_to_pass = ["a", "b"]\npass_to_pass = ["c"]')
    for cid, checks in FAILED["i1"].items():
        (toml.parent / f"{cid}.diff").write_bytes((toml.parent / "v1.diff").read_bytes())
        text += f'[[candidates]]\nid = "{cid}"\nlabel = "invalid"\npatch = "{cid}.diff"\nfailed_checks = {json.dumps(checks)}\n'
    toml.write_text(text)
    store = curve_store(tmp_path / "store", collected=False)
    recorded = panel_distances(store, bench)["i2"].invalid
    assert recorded is not None and recorded.ids == INVALID
    by_hand = invalid_side({cid: frozenset(c) for cid, c in FAILED["i1"].items()})
    assert np.array_equal(recorded.shown, by_hand.shown) and recorded.start == by_hand.start
    assert panel_distances(store, bench).get("i1", InstanceDistances()).invalid is None  # i1 records none
    toml.write_text(text.replace('failed_checks = ["c"]\n', ""))
    assert panel_distances(store, bench).get("i2", InstanceDistances()).invalid is None  # x3 unrecorded: the pool is unknown


def test_invalid_side_is_jaccard_of_failed_checks():
    side = invalid_side({"x1": frozenset("a"), "x2": frozenset("ab"), "x3": frozenset("c")})
    assert side.shown[0, 1] == 0.5 and side.shown[0, 2] == 0.0 and side.start == 0
    assert side.distance[0, 2] == 1.0 and side.distance[1, 1] == 0.0


def test_score_tables_write_the_curves(tmp_path):
    from testprism.tasks.score.scores import score_tables, write_scores

    store = curve_store(tmp_path / "store")
    tables = score_tables(store, replicates=50, seed=1)
    write_scores(store, tables)
    stored = store.read_table("panel_curves")
    assert stored.columns == ["configuration", "schedule", "k", "jvr", "valid_diversity", "invalid_diversity",
                              "n_instances"]
    # invalid failed checks are in the store, valid patches are not (no benchmark): no diversity-first
    assert set(stored["schedule"]) == {"random", "hardest"}
    assert stored["valid_diversity"].null_count() == stored.height
    assert curve(stored, "hardest", "B", "invalid_diversity")[2] == pytest.approx(0.25)


# -- the report ------------------------------------------------------------------------------------


def scored_curve_store(root: Path) -> Store:
    """The hand-built store scored, its curves computed with the hand distances (all three schedules)."""
    from testprism.tasks.score.scores import score_tables, write_scores

    store = curve_store(root)
    write_scores(store, score_tables(store, replicates=50, seed=1))
    store.write_table("panel_curves", panel_curves(store, distances=hand_distances(store), seeds=50).to_arrow())
    return store


def test_report_draws_one_curve_chart_per_schedule(tmp_path):
    from testprism.tasks.report.data import load_report_data
    from testprism.tasks.report.html import render_report

    html = render_report(load_report_data(scored_curve_store(tmp_path / "store").paths.root))
    section = html[html.index('<section id="curves">'):]
    section = section[:section.index("</section>")]
    assert [s for s in ("random", "diversity", "hardest") if f'data-schedule="{s}"' in section] == \
        ["random", "diversity", "hardest"]
    assert section.count("<svg") == 6  # JVR and diversity per schedule
    assert section.count('aria-label="JVR against panel size, Hardest first"') == 1
    assert "A: JVR 0.500 at k = 1" in section and "A: JVR 0.000 at k = 2" in section  # hardest-first, by hand


def test_report_without_a_diversity_schedule_says_why(tmp_path):
    from testprism.tasks.report.data import load_report_data
    from testprism.tasks.report.html import render_report
    from testprism.tasks.score.scores import score_tables, write_scores

    store = curve_store(tmp_path / "store", collected=False)
    write_scores(store, score_tables(store, replicates=50, seed=1))
    html = render_report(load_report_data(store.paths.root))
    section = html[html.index('<section id="curves">'):html.index('<section id="comparisons">')]
    assert section.count("<svg") == 2 and "Not computed" in section and section.count("Diversity unknown") == 2


def test_curves_render_in_chromium(tmp_path, chromium_path):
    from testprism.tasks.report.html import write_report
    from tests.test_report import Chromium, problems

    store = scored_curve_store(tmp_path / "store")
    page = write_report(store.paths.root, tmp_path / "report.html")
    browser = Chromium(chromium_path, tmp_path / "profile")
    try:
        session, events = browser.load(page.as_uri())
        assert problems(events, page) == []
        dom = browser.evaluate(session, """[...document.querySelectorAll('#curves figure.curve')].map(f => ({
            schedule: f.dataset.schedule,
            svgs: f.querySelectorAll('svg').length,
            lines: f.querySelector('svg').querySelectorAll('polyline').length,
            width: Math.round(f.querySelector('svg').getBoundingClientRect().width),
        }))""")
    finally:
        browser.close()
    assert dom == [{"schedule": s, "svgs": 2, "lines": 2, "width": 460} for s in ("random", "diversity", "hardest")]
