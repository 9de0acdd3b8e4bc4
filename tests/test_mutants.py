"""Mutants for thin pools (tasks/collect/mutants.py, docs/collect.md "Mutants for thin pools"):
each operator's change (libcst for Python, one tree-sitter engine for Go, JavaScript, TypeScript
and Java), the region it is confined to, equivalent
mutants set aside, provenance through the store (old parts included), and the leaderboard
with and without mutants."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from testprism.storage import SCHEMA_VERSION, SCHEMAS, Store
from testprism.tasks.collect.candidate import CandidatePatch, candidate_row
from testprism.tasks.collect.settings import CollectSettings
from testprism.tasks.collect.mutants import (MUTANT, Operator, generate, mutations, set_aside_equivalent, thin_instances,
                                             tree_mutations)
from testprism.tasks.model import syntax
from testprism.tasks.model.benchmark import load_benchmark
from testprism.tasks.model.outcome import Reason
from testprism.tasks.model.workdir import WorkPaths
from testprism.storage.readers import latest_runs
from testprism.tasks.score.scores import leaderboard_by_provenance
from testprism.tasks.score.statistics import leaderboard_from_instance_scores
from testprism.tasks.score.metrics import instance_scores
from testprism.tasks.execution.run_settings import RunSettings
from tests.benchfixture import BUGGY, REFERENCE, diff, make_benchmark
from tests.test_metrics import build_store

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

SOURCE = '''\
def clip(xs, hi):
    """Values of xs, at most hi."""
    out = []
    for x in xs:
        if x > hi:
            x = hi
        out.append(x * 1)
    return out


def untouched(a):
    return a < 1
'''


def changes(operator: Operator) -> list[tuple[int, str, str, str]]:
    """(line, before, after, the mutated line) of every mutant of `operator` in clip()."""
    found = [m for m in mutations("m.py", SOURCE, lambda line: line <= 8) if m.mutation.operator is operator]
    return [(m.mutation.line, m.mutation.before, m.mutation.after, m.source.splitlines()[m.mutation.line - 1].strip())
            for m in found]


def test_each_operator_makes_its_change_and_keeps_the_layout():
    assert changes(Operator.RELATIONAL) == [(5, ">", "<", "if x < hi:")]
    assert changes(Operator.BOUNDARY) == [(5, ">", ">=", "if x >= hi:")]
    assert changes(Operator.ARITHMETIC) == [(7, "*", "/", "out.append(x / 1)")]
    assert changes(Operator.NEGATE_CONDITION) == [(5, "x > hi", "not (x > hi)", "if not (x > hi):")]
    assert [c[3] for c in changes(Operator.REMOVE_STATEMENT)] == ["pass", "pass", "pass"]  # out = [], x = hi, append
    assert changes(Operator.RETURN_CONSTANT) == [(8, "out", "None", "return None")]
    for mutant in mutations("m.py", SOURCE, lambda line: True):
        before, after = SOURCE.splitlines(), mutant.source.splitlines()
        assert len(before) == len(after)
        assert sum(a != b for a, b in zip(before, after, strict=True)) == 1  # one line changed, the rest byte for byte


def test_mutants_stay_inside_the_region_and_in_file_order():
    found = mutations("m.py", SOURCE, lambda line: line <= 8)
    assert all(m.mutation.line <= 8 for m in found)  # untouched() is outside the region
    assert [(m.mutation.line, m.mutation.column) for m in found] == sorted((m.mutation.line, m.mutation.column)
                                                                          for m in found)
    assert {m.mutation.describe() for m in found} >= {"boundary at m.py:5:14: `>` → `>=`"}
    assert mutations("m.py", "def broken(:\n", lambda line: True) == []  # unparseable: none, no crash


def test_boolean_returns_swap_and_negations_unwrap():
    source = "def f(x):\n    if not x:\n        return True\n    return x\n"
    found = {(m.mutation.operator, m.mutation.after) for m in mutations("f.py", source, lambda line: True)}
    assert (Operator.RETURN_CONSTANT, "False") in found and (Operator.NEGATE_CONDITION, "x") in found


#: one function per tree-sitter language and, per operator, the mutants expected of it
TREE_SOURCES = {
    "go": ("package p\n\nfunc clip(x, hi int) (int, error) {\n\tif x > hi {\n\t\tx -= 1\n\t\tlog(x)\n\t}\n"
           "\treturn x * 2, nil\n}\n\nfunc pos(x int) bool { return x > 0 }\n"),
    "javascript": "function clip(x, hi) {\n  if (x > hi) {\n    x -= 1;\n    log(x);\n  }\n  return x === hi;\n}\n",
    "typescript": ("function clip(x: number, hi: number): boolean {\n  if (x > hi) {\n    x -= 1;\n    log(x);\n  }\n"
                   "  return x === hi;\n}\n"),
    "java": ("class C {\n  int clip(int x, int hi) {\n    if (x > hi) {\n      x -= 1;\n      log(x);\n    }\n"
             "    return x * 2;\n  }\n  String name() { return \"c\"; }\n}\n"),
}
TREE_EXPECTED = {
    "go": [("relational", ">", "<"), ("boundary", ">", ">="), ("negate_condition", "x > hi", "!(x > hi)"),
           ("arithmetic", "-=", "+="), ("arithmetic", "*", "/"), ("remove_statement", "x -= 1", ""),
           ("remove_statement", "log(x)", ""), ("return_constant", "x * 2", "0"),  # `nil` is its own zero
           ("relational", ">", "<"), ("boundary", ">", ">="), ("return_constant", "x > 0", "false")],
    "javascript": [("relational", ">", "<"), ("boundary", ">", ">="), ("negate_condition", "(x > hi)", "(!(x > hi))"),
                   ("arithmetic", "-=", "+="), ("remove_statement", "x -= 1;", ";"), ("remove_statement", "log(x);", ";"),
                   ("relational", "===", "!=="), ("return_constant", "x === hi", "null")],
    "java": [("relational", ">", "<"), ("boundary", ">", ">="), ("negate_condition", "(x > hi)", "(!(x > hi))"),
             ("arithmetic", "-=", "+="), ("remove_statement", "x -= 1;", ";"), ("remove_statement", "log(x);", ";"),
             ("arithmetic", "*", "/"), ("return_constant", "x * 2", "0"), ("return_constant", '"c"', "null")],
}
TREE_EXPECTED["typescript"] = TREE_EXPECTED["javascript"]
# the languages added after the engine: their records' tables, on the same function
TREE_SOURCES |= {
    "rust": "fn clip(mut x: i64, hi: i64) -> i64 {\n    if x > hi {\n        x -= 1;\n        log(x);\n    }\n    return x * 2;\n}\n",
    "c": "int clip(int x, int hi) {\n    if (x > hi) {\n        x -= 1;\n        log(x);\n    }\n    return x * 2;\n}\n",
    "php": ("<?php\nfunction clip($x, $hi) {\n    if ($x > $hi) {\n        $x -= 1;\n        log($x);\n    }\n"
            "    return $x === $hi;\n}\n"),
    "ruby": "def clip(x, hi)\n  if x > hi\n    x -= 1\n    log(x)\n  end\n  return x * 2\nend\n",
}
TREE_SOURCES["cpp"] = TREE_SOURCES["c"]
_C_LIKE = [("relational", ">", "<"), ("boundary", ">", ">="), ("arithmetic", "-=", "+="), ("arithmetic", "*", "/"),
           ("remove_statement", "x -= 1;", ";"), ("remove_statement", "log(x);", ";"), ("return_constant", "x * 2", "0")]
TREE_EXPECTED |= {
    # a Rust block's `if` and `return` are expression statements too, kept (MutationSyntax.kept)
    "rust": _C_LIKE + [("negate_condition", "x > hi", "!(x > hi)")],
    "c": _C_LIKE + [("negate_condition", "(x > hi)", "(!(x > hi))")],
    "php": [("relational", ">", "<"), ("boundary", ">", ">="), ("negate_condition", "($x > $hi)", "(!($x > $hi))"),
            ("arithmetic", "-=", "+="), ("remove_statement", "$x -= 1;", ";"), ("remove_statement", "log($x);", ";"),
            ("relational", "===", "!=="), ("return_constant", "$x === $hi", "null")],
    "ruby": [("relational", ">", "<"), ("boundary", ">", ">="), ("negate_condition", "x > hi", "!(x > hi)"),
             ("arithmetic", "-=", "+="), ("arithmetic", "*", "/"), ("remove_statement", "x -= 1", "nil"),
             ("remove_statement", "log(x)", "nil"), ("return_constant", "x * 2", "nil")],
}
TREE_EXPECTED["cpp"] = TREE_EXPECTED["c"]


@pytest.mark.parametrize("language", sorted(TREE_SOURCES))
def test_tree_sitter_operators_make_their_change_and_keep_the_layout(language):
    """One engine, the record's tables: each mutant replaces one node's bytes and still parses."""
    record = syntax.named(language)
    source = TREE_SOURCES[language]
    found = tree_mutations(record, "f", source, lambda line: True)
    got = [(str(m.mutation.operator), m.mutation.before, m.mutation.after) for m in found]
    assert sorted(got) == sorted(TREE_EXPECTED[language])
    for mutant in found:
        before, after = source.splitlines(), mutant.source.splitlines()
        assert sum(a != b for a, b in zip(before, after, strict=True)) == 1  # one line changed, the rest byte for byte
        assert not syntax.parse(record, mutant.source).has_error
    assert all(m.mutation.line <= 3 for m in tree_mutations(record, "f", source, lambda line: line <= 3))


def test_go_and_javascript_instances_get_mutants_of_the_changed_function(tmp_path):
    bench = load_benchmark(EXAMPLES)
    for iid, path in (("gokit__csv-doubled-quotes", "csvline/csvline.go"), ("urlkit__query-repeated-keys", "src/query.js")):
        got = generate(bench.instances[iid], WorkPaths(tmp_path), 5)
        assert len(got.candidates) == 5 and got.note == ""
        assert all(c.provenance == MUTANT and f"at {path}:" in c.origin and f"+++ b/{path}" in c.patch
                   for c in got.candidates)


def cand(cid: str, label: str | None, provenance: str = "agent", reason: Reason | None = None) -> CandidatePatch:
    return CandidatePatch("i", cid, f"origin of {cid}", None, None, "patch", f"key-{cid}", reason=reason, label=label,
                          provenance=provenance)


def test_an_equivalent_mutant_is_set_aside_and_thin_pools_are_found():
    pool = [cand("a", "valid"), cand("b", "invalid"), cand("m1", "valid", MUTANT), cand("m2", "invalid", MUTANT)]
    out = {c.candidate_id: c for c in set_aside_equivalent(pool)}
    assert out["m1"].reason is Reason.EQUIVALENT_MUTANT and out["m1"].label == "valid"  # what the checks said, kept
    assert out["a"].reason is None and out["m2"].in_pool  # a valid agent patch is no mutant
    bench = load_benchmark(EXAMPLES)
    instance = bench.instances["calkit__merge-touching"]
    assert thin_instances([cand("b", "invalid")], [instance], 5) == [instance]


def test_provenance_survives_the_store_and_older_parts_read_as_agent(tmp_path):
    root = tmp_path / "store"
    root.mkdir()
    (root / "testprism-store.json").write_text(json.dumps({"schema_version": 2}))
    store = Store(root)  # a schema-2 store opens: 3 and 4 only added columns
    assert json.loads((root / "testprism-store.json").read_text())["schema_version"] == SCHEMA_VERSION
    row = candidate_row(cand("m1", "invalid", MUTANT), "run-2", "hash", True)
    store.append("candidates", pa.Table.from_pylist([row], schema=SCHEMAS["candidates"]))
    old = {k: v for k, v in candidate_row(cand("a", "valid"), "run-1", "hash", True).items() if k != "provenance"}
    old_schema = pa.schema([f for f in SCHEMAS["candidates"] if f.name != "provenance"])
    pq.write_table(pa.Table.from_pylist([old], schema=old_schema), root / "candidates" / "part-old.parquet")
    read = {r["candidate_id"]: r for r in store.scan("candidates").collect().iter_rows(named=True)}
    assert read["m1"]["provenance"] == "mutant" and read["a"]["provenance"] == "agent"
    assert read["a"]["label"] == "valid"  # nothing of the older row is lost


def test_leaderboard_with_and_without_mutants(tmp_path):
    pools = {"i1": {"valid": ["v"], "invalid": ["x", "m1", "m2"]}, "i2": {"valid": ["v"], "invalid": ["m3"]}}
    outcomes = {}
    for conf, rejects in (("strong", {"x", "m1", "m2", "m3"}), ("mutant-killer", {"m1", "m2", "m3"})):
        for iid, pool in pools.items():
            outcomes |= {(conf, iid, "buggy"): "F", (conf, iid, "reference"): "P", (conf, iid, "v"): "P"}
            outcomes |= {(conf, iid, c): "F" if c in rejects else "P" for c in pool["invalid"]}
    store = build_store(tmp_path, pools, outcomes, mutants=frozenset({"m1", "m2", "m3"}))
    board = leaderboard_from_instance_scores(instance_scores(store))
    boards = leaderboard_by_provenance(store, latest_runs(store), board, replicates=200, seed=1)
    got = {(r["panel"], r["configuration"]): r for r in boards.iter_rows(named=True)}
    assert got[("with_mutants", "mutant-killer")]["wdr"] == pytest.approx((2 / 3 + 1) / 2)
    # without mutants i2 has no invalid candidate: outside WDR, inside GRR and JVR
    assert got[("without_mutants", "mutant-killer")]["wdr"] == 0.0
    assert got[("without_mutants", "mutant-killer")]["jvr"] == 0.5 and got[("with_mutants", "mutant-killer")]["jvr"] == 0.5
    assert got[("without_mutants", "strong")]["wdr"] == 1.0 and got[("without_mutants", "strong")]["n_instances"] == 2
    assert got[("without_mutants", "strong")]["jvr_lo"] is not None  # its own bootstrap
    # the default leaderboard is the panels as released, mutants included
    assert board.filter(pl.col("configuration") == "mutant-killer")["wdr"].item() == pytest.approx(5 / 6)


def test_no_mutants_leave_the_provenance_table_empty(tmp_path):
    store = build_store(tmp_path, {"i1": {"valid": ["v"], "invalid": ["x"]}},
                        {("c", "i1", "buggy"): "F", ("c", "i1", "reference"): "P"})
    board = leaderboard_from_instance_scores(instance_scores(store))
    assert leaderboard_by_provenance(store, latest_runs(store), board, 100, 1).is_empty()


#: the fixture's reference plus a copy whose removal no check can see: an equivalent mutant
REFERENCE_WITH_COPY = REFERENCE.replace("    ordered = sorted(values)\n", "    values = list(values)\n    ordered = sorted(values)\n")


@pytest.mark.slow
@pytest.mark.requires("sandbox")
def test_collect_labels_mutants_of_a_thin_pool(tmp_path, work_root):
    from testprism.flows.collect import collect_flow
    from testprism.tasks.collect.panel import PanelMode

    root = make_benchmark(tmp_path / "bench", {})  # one invalid candidate: a thin pool
    (root / "instances" / "mini__median-even" / "reference.diff").write_text(diff("stats.py", BUGGY, REFERENCE_WITH_COPY))
    store, out = tmp_path / "store", tmp_path / "panel"
    collect_flow(benchmark=str(root), store=str(store), out=str(out), run=RunSettings(work=str(work_root)),
                 settings=CollectSettings(panel=PanelMode.POOL, mutant_limit=40))

    rows = {r["candidate_id"]: r for r in Store(store).scan("candidates").collect().iter_rows(named=True)}
    mutant_rows = {cid: r for cid, r in rows.items() if r["provenance"] == MUTANT}
    assert rows["stdlib"]["provenance"] == "agent" and len(mutant_rows) >= 8
    removed_copy = mutant_rows["mutant-remove-statement-stats-3-5"]
    assert removed_copy["label"] == "valid" and removed_copy["reason"] == "equivalent_mutant"
    assert removed_copy["origin"] == "mutant: remove_statement at stats.py:3:5: `values = list(values)` → `pass`"
    killed = [r for r in mutant_rows.values() if r["reason"] in (None, "near_duplicate")]
    assert killed and all(r["label"] == "invalid" and r["failed_checks"] for r in killed)
    funnel = Store(store).scan("funnel").filter(pl.col("stage") == "mutation").collect().row(0, named=True)
    assert funnel["retained"] == len(killed)  # near duplicates are set aside at the next stage, like any candidate
    killed = [r for r in killed if r["reason"] is None]
    assert {"item": "mini__median-even/mutant-remove-statement-stats-3-5", "reason": "equivalent_mutant",
            "detail": removed_copy["origin"]} in funnel["exclusions"]

    declared = tomllib.loads((out / "instances" / "mini__median-even" / "instance.toml").read_text())["candidates"]
    assert {c["id"] for c in declared if c.get("provenance") == MUTANT} == {r["candidate_id"] for r in killed}
    panel = load_benchmark(out).instances["mini__median-even"]
    assert {c.id for c in panel.candidates if c.provenance == MUTANT} == {r["candidate_id"] for r in killed}


@pytest.mark.slow
@pytest.mark.polyglot  # 140 s in CI (four Go trees built from a cold cache): opt-in
@pytest.mark.requires("sandbox", "toolchains")
def test_collect_labels_go_and_javascript_mutants_by_their_checks(tmp_path, work_root):
    """Tree-sitter mutants of a thin Go and a thin JavaScript pool go through the checks
    under `local` like any candidate (the Go ones built once per state): killed ones are
    invalid with the checks that failed, survivors are set aside as equivalent."""
    from testprism.flows.collect import collect_flow
    from testprism.tasks.collect.panel import PanelMode
    from tests.langfixture import make_language_benchmark

    root = make_language_benchmark(tmp_path / "bench")  # one invalid candidate each: thin pools
    go_toml = root / "instances" / "go__clamp" / "instance.toml"  # no candidate of its own: fewer Go builds
    go_toml.write_text(go_toml.read_text().split("\n[[candidates]]")[0] + "\n")
    store = tmp_path / "store"
    collect_flow(benchmark=str(root), store=str(store), out=str(tmp_path / "panel"),
                 run=RunSettings(work=str(work_root)), settings=CollectSettings(panel=PanelMode.POOL, mutant_limit=2))
    rows = {(r["instance_id"], r["candidate_id"]): (r["label"], r["reason"], r["failed_checks"])
            for r in Store(store).scan("candidates").collect().iter_rows(named=True) if r["provenance"] == MUTANT}
    # the seeded sample: per language one mutant a check kills, one none can (`x <= lo` returns lo
    # anyway; no check clamps below the lower bound)
    assert rows == {
        ("go__clamp", "mutant-boundary-calc-5-7"): ("valid", "equivalent_mutant", []),
        ("go__clamp", "mutant-return-constant-calc-9-10"): ("invalid", None, ["TestClampHigh"]),
        ("js__clamp", "mutant-return-constant-clamp-5-22"): ("valid", "equivalent_mutant", []),
        ("js__clamp", "mutant-return-constant-clamp-6-22"): ("invalid", None, ["clamps above the upper bound"]),
    }


JAVA_AND_RUST = ("sizekit__format-shows-1024-kib", "fmtkit__truncate-multibyte")


@pytest.mark.slow
@pytest.mark.polyglot  # Maven and cargo build every mutant's state: opt-in with the other languages' replays
@pytest.mark.requires("sandbox", "toolchains")
def test_collect_labels_java_and_rust_mutants_by_their_checks(tmp_path, work_root):
    """The bundled Java and Rust instances with their candidates taken away (thin pools):
    tree-sitter mutants of the reference's changed function go through the official checks
    under `local` (JUnit 5 through Surefire, `cargo test`), each state built once like any
    candidate's: a mutant a check kills is invalid with the checks that failed (by their
    runner's ids: `Class#method`, `module::test`), one every check passes is set aside."""
    import shutil

    from testprism.flows.collect import collect_flow
    from testprism.tasks.collect.panel import PanelMode

    root = tmp_path / "bench"
    shutil.copytree(EXAMPLES / "environments", root / "environments")
    for instance_id in JAVA_AND_RUST:
        shutil.copytree(EXAMPLES / "instances" / instance_id, root / "instances" / instance_id)
        toml = root / "instances" / instance_id / "instance.toml"
        toml.write_text(toml.read_text().split("\n[[candidates]]")[0] + "\n")
    store = tmp_path / "store"
    collect_flow(benchmark=str(root), store=str(store), out=str(tmp_path / "panel"),
                 run=RunSettings(work=str(work_root)), settings=CollectSettings(panel=PanelMode.POOL, mutant_limit=2))
    rows = {(r["instance_id"], r["candidate_id"]): (r["label"], r["reason"], r["failed_checks"])
            for r in Store(store).scan("candidates").collect().iter_rows(named=True) if r["provenance"] == MUTANT}
    # the seeded sample, two a function: each killed by the checks (none equivalent here)
    assert set(rows) == {
        ("fmtkit__truncate-multibyte", "mutant-negate-condition-cell-10-8"),
        ("fmtkit__truncate-multibyte", "mutant-negate-condition-cell-13-8"),
        ("sizekit__format-shows-1024-kib", "mutant-arithmetic-ByteSize-30-19"),
        ("sizekit__format-shows-1024-kib", "mutant-remove-statement-ByteSize-31-13"),
    }
    bench = load_benchmark(root)
    for (instance_id, _), (label, reason, failed) in rows.items():
        checks = bench.instances[instance_id].spec.checks
        assert (label, reason) == ("invalid", None) and failed
        assert set(failed) <= set(checks.fail_to_pass) | set(checks.pass_to_pass)  # the runner's own test ids
    assert rows["sizekit__format-shows-1024-kib", "mutant-arithmetic-ByteSize-30-19"][2][0] == \
        "example.bytesize.ByteSizeOfficialTest#roundsUpIntoTheNextUnit"
    assert "cell::tests::multibyte_value_is_cut_between_characters" in \
        rows["fmtkit__truncate-multibyte", "mutant-negate-condition-cell-13-8"][2]
