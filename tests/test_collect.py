"""Collect: ingest and normalise candidates, set duplicates aside, validate the reference,
label candidates by the official checks in the sandbox, choose diverse panels."""

from __future__ import annotations

import json
import logging
import shutil
import tomllib
from collections import Counter
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from testprism.tasks.execution.run_settings import RunSettings
from testprism.storage import Store
from testprism.tasks.model.benchmark import Instance, load_benchmark
from testprism.tasks.collect.candidate import (
    CandidatePatch,
    PatchError,
    changed_tokens,
    cosine_matrix,
    ingest,
    normalise_patch,
    patch_key,
    reference_keys,
    set_aside_duplicates,
    set_aside_near_duplicates,
)
from testprism.tasks.collect.label import GOLD_POLICY, GOLD_REPEATS, LABEL_POLICY, gold_plan, gold_verdict, label_of
from testprism.tasks.collect.settings import CollectSettings
from testprism.tasks.collect.verification import candidate_states, check_ids, execute, plan, stored_keys, stored_rows
from testprism.tasks.collect.panel import (
    PanelRule,
    ast_distance,
    choose_panel,
    jaccard,
    patch_tree,
    select_invalid,
    select_valid,
)
from testprism.tasks.execution.batch import ExecutionOptions
from testprism.tasks.model.outcome import Reason
from testprism.tasks.model.toml_writer import dumps as dump_toml
from testprism.tasks.model.state import apply_patch
from tests.benchfixture import BUGGY, REFERENCE, VALID, diff, make_benchmark

INSTANCE = "mini__median-even"
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

#: a correct alternative written differently from the fixture's `stdlib` candidate
SORTED_PAIR = '''\
def median(values):
    """Median of a non-empty sequence."""
    ordered = sorted(values)
    half, odd = divmod(len(ordered), 2)
    return ordered[half] if odd else sum(ordered[half - 1:half + 1]) / 2
'''
#: breaks the checks' JUnit report (garbage, then exit 0 before pytest writes one)
JUNIT_GARBAGE = '''\
import os

with open(os.environ["TESTPRISM_JUNIT"], "w") as report:
    report.write("<testsuite><testcase name=")
os._exit(0)
''' + REFERENCE
STALE = "--- a/stats.py\n+++ b/stats.py\n@@ -1,1 +1,1 @@\n-nothing like this line\n+x = 1\n"


def candidate(cid: str, patch: str, label: str | None = None, failed: tuple[str, ...] = (), instance: str = INSTANCE) -> CandidatePatch:
    norm = normalise_patch(patch)
    return CandidatePatch(instance, cid, f"test:{cid}", None, None, norm, patch_key(norm), label=label, failed_checks=failed)


# -- normalisation and duplicates ------------------------------------------------------------


def test_whitespace_and_header_variants_normalise_to_one_key():
    plain = diff("stats.py", BUGGY, REFERENCE)
    noisy = ("diff --git a/stats.py b/stats.py\nindex 3b18e51..8a1b2c3 100644\n"
             + plain.replace("@@ -1,4 +1,7 @@", "@@ -1,4 +9,7 @@ def median(values):")
             .replace("    mid = len(ordered) // 2\n", "    mid = len(ordered) // 2   \t\n")
             .rstrip("\n"))
    assert noisy != plain
    assert normalise_patch(noisy) == normalise_patch(plain)
    assert normalise_patch(plain).endswith("\n") and "@@ -1,4 +1,7 @@\n" in normalise_patch(plain)


def test_normalised_patches_apply_including_new_empty_files(tmp_path):
    (tmp_path / "stats.py").write_text(BUGGY)
    patch = diff("stats.py", BUGGY, REFERENCE) + "diff --git a/pkg/__init__.py b/pkg/__init__.py\nnew file mode 100644\nindex 0000000..e69de29\n"
    result = apply_patch(tmp_path, normalise_patch(patch).encode())
    assert result.applied, result.message
    assert (tmp_path / "stats.py").read_text() == REFERENCE
    assert (tmp_path / "pkg" / "__init__.py").read_text() == ""


@pytest.mark.parametrize(("text", "message"), [
    ("", "empty"),
    ("I fixed it by editing stats.py\n", "not a unified diff"),
    ("--- a/../etc/passwd\n+++ b/../etc/passwd\n@@ -1 +1 @@\n-a\n+b\n", "escapes the program"),
    ("--- a/stats.py\n+++ b/stats.py\n@@ -1,3 +1,3 @@\n-a\n+b\n", "not a unified diff"),
])
def test_normalise_refuses_what_is_not_an_applicable_diff(text, message):
    with pytest.raises(PatchError, match=message):
        normalise_patch(text)


def test_ingest_reports_bad_rows_and_keeps_the_others(tmp_path):
    bench = load_benchmark(make_benchmark(tmp_path / "bench", {}))
    good = diff("stats.py", BUGGY, SORTED_PAIR)
    preds = tmp_path / "preds.jsonl"
    rows = [
        {"instance_id": INSTANCE, "model_name_or_path": "org/agent-a", "model_patch": good, "official_resolved": True},
        {"instance_id": "nobody__nothing-1", "model_name_or_path": "agent-a", "model_patch": good},
        {"instance_id": INSTANCE, "model_name_or_path": "agent-b", "model_patch": ""},
        {"instance_id": INSTANCE, "model_name_or_path": "agent-c", "model_patch": "looks fine to me"},
        {"instance_id": INSTANCE, "model_patch": good},
    ]
    preds.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    listed = tmp_path / "preds.json"
    listed.write_text(json.dumps([{"instance_id": INSTANCE, "model_name_or_path": "agent-a", "model_patch": good}]))
    folder = tmp_path / "diffs"
    (folder / INSTANCE).mkdir(parents=True)
    (folder / INSTANCE / "pair.diff").write_text(good)
    (folder / "README.txt").write_text("patches from a hackathon\n")

    found = ingest(bench, [preds, listed, tmp_path / "missing.jsonl"], [folder])

    errors = {(e.origin, e.field, e.kind) for e in found.errors}
    assert errors == {
        (f"{preds}:2", "instance_id", Reason.UNKNOWN_INSTANCE),
        (f"{preds}:3", "model_patch", Reason.EMPTY_PATCH),
        (f"{preds}:4", "model_patch", Reason.NOT_A_DIFF),
        (f"{preds}:5", "model_name_or_path", Reason.BAD_ROW),
        (str(tmp_path / "missing.jsonl"), "(file)", Reason.UNREADABLE_FILE),
        (str(folder / "README.txt"), "(path)", Reason.UNREADABLE_FILE),
    }
    by_origin = {c.origin: c for c in found.candidates}
    assert set(by_origin) == {
        str(bench.instances[INSTANCE].folder / "candidates" / "stdlib.diff"),
        str(bench.instances[INSTANCE].folder / "candidates" / "sorts-in-place.diff"),
        f"{preds}:1", f"{listed}:1", str(folder / INSTANCE / "pair.diff"),
    }
    first, second = by_origin[f"{preds}:1"], by_origin[f"{listed}:1"]
    assert (first.model, first.official_label, second.official_label) == ("org/agent-a", "valid", None)
    # one model, two rows: readable ids made unique by the origin
    assert first.candidate_id.startswith("agent-a-") and second.candidate_id.startswith("agent-a-")
    assert len({c.candidate_id for c in found.candidates}) == len(found.candidates)
    assert by_origin[str(folder / INSTANCE / "pair.diff")].candidate_id == "pair"
    assert by_origin[str(bench.instances[INSTANCE].folder / "candidates" / "stdlib.diff")].official_label == "valid"


def test_rows_of_instances_not_in_the_benchmark_are_logged_once(tmp_path, caplog):
    """A prediction file covering more instances than the benchmark: one warning for all of
    them (not an error per row); the other bad rows keep their error each."""
    bench = load_benchmark(make_benchmark(tmp_path / "bench", {}))
    good = diff("stats.py", BUGGY, SORTED_PAIR)
    preds = tmp_path / "preds.jsonl"
    rows = [{"instance_id": iid, "model_name_or_path": f"agent-{n}", "model_patch": good}
            for n, iid in enumerate(["other__x-1", "other__x-1", "other__y-2", INSTANCE])]
    rows.append({"instance_id": INSTANCE, "model_name_or_path": "agent-e", "model_patch": ""})
    preds.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with caplog.at_level(logging.INFO, logger="testprism.tasks.collect.candidate"):
        found = ingest(bench, [preds], [])
    assert sum(e.kind is Reason.UNKNOWN_INSTANCE for e in found.errors) == 3  # the funnel keeps each row
    lines = [(r.levelname, r.getMessage()) for r in caplog.records if r.name.endswith("collect.candidate")]
    assert lines == [
        ("WARNING", f"3 candidates left out (unknown_instance): their instances are not in {bench.root}: "
                    "other__x-1 ×2, other__y-2 ×1"),
        ("ERROR", f"candidate rejected: {preds}:5: field model_patch: the patch is empty"),
    ]


def test_exact_duplicates_and_copies_of_the_reference_are_set_aside(tmp_path):
    bench = load_benchmark(make_benchmark(tmp_path / "bench", {}))
    pool = [
        candidate("first", diff("stats.py", BUGGY, VALID)),
        candidate("same-up-to-whitespace", diff("stats.py", BUGGY, VALID).replace("statistics.median(values)\n",
                                                                                   "statistics.median(values)  \n")),
        candidate("gold-copy", diff("stats.py", BUGGY, REFERENCE)),
    ]
    out = {c.candidate_id: c for c in set_aside_duplicates(pool, reference_keys(bench))}
    assert out["first"].reason is None
    assert (out["same-up-to-whitespace"].reason, out["same-up-to-whitespace"].duplicate_of) == (Reason.DUPLICATE, "first")
    assert out["gold-copy"].reason is Reason.SAME_AS_REFERENCE


def test_near_duplicates_only_within_one_label_and_one_failure():
    reformatted = SORTED_PAIR.replace("sum(ordered[half - 1:half + 1]) / 2", "sum( ordered[half-1 : half+1] )/2")
    one_token = SORTED_PAIR.replace("ordered[half] if odd", "ordered[half + 1] if odd")
    pool = [
        candidate("pair", diff("stats.py", BUGGY, SORTED_PAIR), "valid"),
        candidate("pair-reformatted", diff("stats.py", BUGGY, reformatted), "valid"),
        candidate("pair-off-by-one", diff("stats.py", BUGGY, one_token), "invalid", ("t::odd",)),
        candidate("pair-off-by-one-again", diff("stats.py", BUGGY, one_token + "\n"), "invalid", ("t::odd",)),
        candidate("pair-other-failure", diff("stats.py", BUGGY, one_token + "\n\n"), "invalid", ("t::even",)),
        # the same change with its lines again as dead code after the return: cosine 1, twice the size
        candidate("pair-and-more", diff("stats.py", BUGGY, SORTED_PAIR + SORTED_PAIR.split("ordered = sorted(values)\n")[1]), "valid"),
    ]
    out = {c.candidate_id: (c.reason, c.duplicate_of) for c in set_aside_near_duplicates(pool)}
    assert out == {
        "pair": (None, None),
        "pair-reformatted": (Reason.NEAR_DUPLICATE, "pair"),
        "pair-off-by-one": (None, None),  # one token from `pair`, but the other label
        "pair-off-by-one-again": (Reason.NEAR_DUPLICATE, "pair-off-by-one"),
        "pair-other-failure": (None, None),  # the same tokens, a different failure
        "pair-and-more": (None, None),  # alike in direction only: cosine ignores length
    }


def test_cosine_of_empty_vectors():
    sims = cosine_matrix([Counter(), Counter(), Counter(a=1)])
    assert sims[0, 1] == 1.0 and sims[0, 2] == 0.0 and sims[2, 2] == pytest.approx(1.0)
    addition = normalise_patch(diff("extra.py", "", "x = [1]\n"))
    assert changed_tokens(addition, "-") == Counter()
    assert changed_tokens(addition, "+") == Counter({"x": 1, "=": 1, "[": 1, "1": 1, "]": 1})


# -- panels ----------------------------------------------------------------------------------

RULE = PanelRule()


def tree_of(before: str, after: str, path: str = "mod.py"):
    return patch_tree(normalise_patch(diff(path, before, after)), {path: after}.get)


BASE = '''\
def helper():
    return 1


def clamp(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return x
    return x
'''
BODY = '''\
    if x < lo:
        return lo
    if x > hi:
        return x
    return x
'''
FIX = BASE.replace("        return x\n    return x", "        return hi\n    return x")
RENAMED = FIX.replace("x", "value")
MINMAX = BASE.replace(BODY, "    return max(lo, min(x, hi))\n")
SORTED = BASE.replace(BODY, "    return sorted((lo, x, hi))[1]\n")
LOOP = BASE.replace(BODY, '''\
    for bound, past in ((lo, x < lo), (hi, x > hi)):
        if past:
            return bound
    return x
''')


def test_ast_distance_ranks_rewrites_far_above_renames():
    fix, renamed, loop = tree_of(BASE, FIX), tree_of(BASE, RENAMED), tree_of(BASE, LOOP)
    assert ast_distance(fix, fix) == 0.0
    assert 0 < ast_distance(fix, renamed) < 0.35 < ast_distance(fix, loop) <= 1.0
    assert ast_distance(fix, loop) == ast_distance(loop, fix)
    # only the changed function counts: `helper` is in no tree
    assert "FunctionDef:helper" not in repr(fix) and "FunctionDef:clamp" in repr(fix)


def test_unparsable_and_non_python_files_fall_back_to_tokens():
    broken = tree_of(BASE, FIX + "\ndef oops(:\n")
    notes = tree_of("a\n", "a\nmerge touching ranges\n", "NOTES.txt")
    assert broken.children[0].children and all(n.name.startswith("tok:") for n in broken.children[0].children)
    assert [n.name for n in notes.children[0].children] == ["tok:merge", "tok:touching", "tok:ranges"]
    assert 0 < ast_distance(broken, tree_of(BASE, FIX)) <= 1.0


def test_valid_selection_meets_the_distance_or_reports_why():
    reference = tree_of(BASE, FIX)
    diverse = {"minmax": tree_of(BASE, MINMAX), "sorted": tree_of(BASE, SORTED), "loop": tree_of(BASE, LOOP),
               "renamed": tree_of(BASE, RENAMED), "renamed-again": tree_of(BASE, FIX.replace("x", "v"))}
    side = select_valid(reference, diverse, RULE)
    assert side.reason is None and side.score > RULE.min_valid_distance
    assert len(side.chosen) == 4 and {"minmax", "sorted", "loop"} <= set(side.chosen)

    clones = {f"clone-{i}": tree_of(BASE, FIX.replace("x", name)) for i, name in enumerate("abcde")}
    side = select_valid(reference, clones, RULE)
    assert side.reason is Reason.VALID_NOT_DIVERSE and side.score <= RULE.min_valid_distance
    assert select_valid(reference, dict(list(diverse.items())[:3]), RULE).reason is Reason.TOO_FEW_VALID


def test_invalid_selection_wants_different_failures():
    assert jaccard(frozenset("ab"), frozenset("bc")) == pytest.approx(1 / 3)
    assert jaccard(frozenset(), frozenset()) == 1.0
    pool = {"all": frozenset("abcde"), "a": frozenset("a"), "b": frozenset("b"), "c": frozenset("c"),
            "d": frozenset("d"), "de": frozenset("de"), "ef": frozenset("ef")}
    side = select_invalid(pool, RULE)
    assert side.reason is None and set(side.chosen) == {"a", "b", "c", "d", "ef"} and side.score == 0.0

    same = {f"i{i}": frozenset({"t::f2p"}) for i in range(7)}
    side = select_invalid(same, RULE)
    assert side.reason is Reason.INVALID_NOT_DIVERSE and len(side.chosen) == 1
    assert select_invalid(dict(list(pool.items())[:4]), RULE).reason is Reason.TOO_FEW_INVALID


def test_an_instance_whose_pools_cannot_meet_the_thresholds_is_reported():
    reference = tree_of(BASE, FIX)
    valid = {"minmax": tree_of(BASE, MINMAX), "sorted": tree_of(BASE, SORTED), "loop": tree_of(BASE, LOOP),
             "renamed": tree_of(BASE, RENAMED)}
    invalid = {f"i{i}": frozenset({"t::f2p", f"t::{i}"}) for i in range(6)}  # pairwise Jaccard 1/3
    choice = choose_panel("x", reference, valid, invalid, RULE)
    assert choice.reason is Reason.INVALID_NOT_DIVERSE and choice.chosen == ()
    assert "Jaccard" in choice.detail and choice.valid_mean_distance > RULE.min_valid_distance
    relaxed = choose_panel("x", reference, valid, invalid, replace(RULE, max_invalid_jaccard=0.5))
    assert relaxed.reason is None and len(relaxed.chosen) == 9


def test_dump_toml_round_trips():
    doc = {"id": "x", "summary": 'quote " and ñ\ttab', "program": {"path": "program"},
           "checks": {"command": "pytest -q", "fail_to_pass": ["a::b[1 2]"], "pass_to_pass": []},
           "candidates": [{"id": "c", "label": "valid", "patch": "candidates/c.diff", "note": "line\nbreak"}]}
    assert tomllib.loads(dump_toml(doc)) == doc


# -- verification in the sandbox -------------------------------------------------------------


def quarantine_twin(bench_root: Path) -> None:
    """A second instance whose reference edits the docstring only: it does not fix the bug."""
    source = bench_root / "instances" / INSTANCE
    twin = bench_root / "instances" / "mini__median-wrong-fix"
    shutil.copytree(source, twin)
    toml = (twin / "instance.toml").read_text().replace(f'id = "{INSTANCE}"', 'id = "mini__median-wrong-fix"')
    (twin / "instance.toml").write_text(toml)
    (twin / "reference.diff").write_text(diff("stats.py", BUGGY, BUGGY.replace("non-empty", "non-empty, sorted")))


@pytest.fixture()
def labelled_bench(tmp_path):
    root = make_benchmark(tmp_path / "bench", {}, extra_candidates={
        "junit-garbage": ("invalid", diff("stats.py", BUGGY, JUNIT_GARBAGE)),
        "stale": ("invalid", STALE),
    })
    quarantine_twin(root)
    return root


def options_for(store: Path, work_root: Path) -> ExecutionOptions:
    return ExecutionOptions(backend="local", work_root=work_root, store_root=store, concurrency=2)


@pytest.mark.slow
@pytest.mark.requires("sandbox")
def test_gold_validation_quarantines_a_reference_that_does_not_fix(labelled_bench, tmp_path, work_root):
    bench = load_benchmark(labelled_bench)
    options = replace(options_for(tmp_path / "store", work_root), policy=GOLD_POLICY)
    specs = {iid: gold_plan(inst, options) for iid, inst in bench.instances.items()}
    assert execute([s for group in specs.values() for s in group], options) == 8
    rows = stored_rows(Store(tmp_path / "store"), [s.key for group in specs.values() for s in group])
    good = gold_verdict(bench.instances[INSTANCE], [rows[s.key] for s in specs[INSTANCE]])
    bad = gold_verdict(bench.instances["mini__median-wrong-fix"], [rows[s.key] for s in specs["mini__median-wrong-fix"]])
    assert good.validated, good.detail
    assert bad.reason is Reason.REFERENCE_FAILS and "test_even_length failed" in bad.detail


def label_all(instance: Instance, store: Path, work_root: Path) -> tuple[dict, int]:
    options = replace(options_for(store, work_root), policy=LABEL_POLICY)
    patches = {c.id: normalise_patch(c.patch.decode()) for c in instance.candidates}
    specs = plan(instance, list(candidate_states(instance, patches).values()), options)
    ran = execute([s for s in specs if s.key not in stored_keys(Store(store))], options)
    rows = stored_rows(Store(store), [s.key for s in specs])
    return {s.state.candidate_id: label_of(instance, rows[s.key]) for s in specs}, ran


@pytest.mark.slow
@pytest.mark.requires("sandbox")
def test_candidates_are_labelled_by_the_official_checks(labelled_bench, tmp_path, work_root):
    instance = load_benchmark(labelled_bench).instances[INSTANCE]
    labels, ran = label_all(instance, tmp_path / "store", work_root)
    every = check_ids(instance)
    assert (labels["stdlib"].label, labels["stdlib"].reason, labels["stdlib"].failed_checks) == ("valid", None, ())
    assert (labels["sorts-in-place"].label, labels["sorts-in-place"].failed_checks) == (
        "invalid", ("tests/test_official.py::test_input_untouched",))
    # a broken JUnit report is a failed run, every check missing: invalid, not a crash
    assert (labels["junit-garbage"].label, labels["junit-garbage"].reason, labels["junit-garbage"].failed_checks) == (
        "invalid", None, every)
    # a patch that applies under no method is unlabelled ("patch does not apply"), not invalid
    assert (labels["stale"].label, labels["stale"].reason) == (None, Reason.PATCH_FAILED)
    assert ran == 4
    # keyed by content: a second pass runs nothing
    again, ran_again = label_all(instance, tmp_path / "store", work_root)
    assert ran_again == 0 and again == labels


def test_the_collect_funnel_runs_without_prefect_or_a_sandbox(tmp_path, work_root):
    """tasks/collect/collection.py is plain functions: given how verifications run (here rows
    made up as the official checks would report them), the gate's say and the panel choice,
    it runs the whole funnel with no flow and no sandbox, gold policy before the labels'.
    The control: a gate that fails the instance leaves nothing to label and no panel."""
    from testprism.tasks.collect.collection import collect
    from testprism.tasks.execution.junit import junit_id

    bench = load_benchmark(make_benchmark(tmp_path / "bench", {}))
    instance = bench.instances["mini__median-even"]
    ids = check_ids(instance)
    failing = {"buggy": {"tests/test_official.py::test_even_length"},
               "candidate:sorts-in-place": {"tests/test_official.py::test_input_untouched"}}
    policies = []

    def verify(specs, options):
        policies.append(options.policy)
        rows = {s.key: {"state": s.state.name, "repeat": s.repeat, "reason": None, "stdout_tail": "", "restored": (),
                        "tests": [{"name": junit_id(i), "message": "",
                                   "outcome": "failed" if i in failing.get(s.state.name, ()) else "passed"} for i in ids]}
                for s in specs}
        return rows, len(rows)

    def run(gate):
        policies.clear()
        chosen = []
        options = options_for(tmp_path / "store", work_root)
        options = replace(options, policy=replace(options.policy, patch_fuzz=0))  # the run's fuzz, kept by both policies
        collection = collect(bench, [], [], CollectSettings(), options, "run-1",
                             verify=verify, gate=gate,
                             choose_panels=lambda validated, pool, mode, rule: chosen.extend(validated) or [])
        return collection, chosen

    collection, chosen = run(lambda verdicts: verdicts)
    assert [s.name for s in collection.funnel.stages] == ["ingest", "exact_dedup", "gold_validation", "verification",
                                                           "near_dedup", "panel_testprism"]
    assert {c.candidate_id: c.label for c in collection.pool} == {"stdlib": "valid", "sorts-in-place": "invalid"}
    assert chosen == [instance] and collection.executed == 2 * GOLD_REPEATS + 2 and collection.reused == 0
    assert [p.confirm_failures for p in policies] == [GOLD_POLICY.confirm_failures, LABEL_POLICY.confirm_failures]
    assert all(p.patch_fuzz == 0 for p in policies)

    failed = run(lambda verdicts: [replace(v, reason=Reason.FAILED_GATE) for v in verdicts])  # the CONTROL
    assert failed[1] == [] and {c.label for c in failed[0].pool} == {None}
    assert {c.reason for c in failed[0].pool} == {Reason.INSTANCE_QUARANTINED}


@pytest.mark.slow
@pytest.mark.requires("sandbox")
def test_collect_flow_end_to_end(labelled_bench, tmp_path, work_root):
    from testprism.flows.collect import collect_flow
    from testprism.tasks.collect.panel import PanelMode

    preds = tmp_path / "preds.jsonl"
    rows = [
        {"instance_id": INSTANCE, "model_name_or_path": "agent-a", "model_patch": diff("stats.py", BUGGY, SORTED_PAIR),
         "official_resolved": True},
        {"instance_id": INSTANCE, "model_name_or_path": "agent-b", "model_patch": "index abc..def\n" + diff("stats.py", BUGGY, VALID)},
        {"instance_id": INSTANCE, "model_name_or_path": "agent-c", "model_patch": diff("stats.py", BUGGY, REFERENCE)},
        {"instance_id": "mini__median-wrong-fix", "model_name_or_path": "agent-a", "model_patch": diff("stats.py", BUGGY, VALID)},
        {"instance_id": "nobody__x-1", "model_name_or_path": "agent-a", "model_patch": diff("stats.py", BUGGY, VALID)},
    ]
    preds.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    store, out = tmp_path / "store", tmp_path / "panel-bench"
    args = dict(benchmark=str(labelled_bench), store=str(store), predictions=[str(preds)],
                settings=CollectSettings(panel=PanelMode.POOL), out=str(out), run=RunSettings(work=work_root))

    first = collect_flow(**args)

    # gold: 4 runs per instance, but both instances' buggy states are the same content (2
    # shared runs); labels: the 4 declared candidates and agent-a's
    assert first.panels == 1 and first.executed == 6 + 5 and first.reused == 0
    # the fixture's labels and agent-a's official_resolved; "stale" applies under no method: unlabelled,
    # so it is not compared
    assert first.agreement == (4, 4)
    candidates = {r["candidate_id"]: r for r in Store(store).scan("candidates").filter(pl.col("instance_id") == INSTANCE)
                  .collect().iter_rows(named=True)}
    assert candidates["agent-b"]["reason"] == "duplicate" and candidates["agent-b"]["duplicate_of"] == "stdlib"
    assert candidates["agent-b"]["label"] == "valid"
    assert candidates["agent-c"]["reason"] == "same_as_reference" and candidates["agent-c"]["label"] is None
    assert {cid for cid, r in candidates.items() if r["in_panel"]} == {"stdlib", "agent-a", "sorts-in-place", "junit-garbage"}
    funnel = Store(store).scan("funnel").collect().sort("step")
    assert funnel["stage"].to_list() == ["ingest", "exact_dedup", "gold_validation", "verification", "near_dedup", "panel_pool"]
    gold = funnel.filter(pl.col("stage") == "gold_validation").row(0, named=True)
    assert (gold["retained"], gold["excluded"], gold["rate"]) == (1, 1, 0.5)
    assert gold["exclusions"][0]["item"] == "mini__median-wrong-fix"
    assert gold["exclusions"][0]["reason"] == "reference_fails_checks"
    verification = funnel.filter(pl.col("stage") == "verification").row(0, named=True)
    # the wrong-fix twin's 4 declared candidates (its agent-a row duplicates its stdlib one)
    assert Counter(e["reason"] for e in verification["exclusions"]) == {"instance_quarantined": 4, "patch_failed": 1}

    panel = load_benchmark(out).instances[INSTANCE]
    assert {(c.id, c.label) for c in panel.candidates} == {
        ("stdlib", "valid"), ("agent-a", "valid"), ("sorts-in-place", "invalid"), ("junit-garbage", "invalid")}
    assert list(load_benchmark(out).instances) == [INSTANCE]
    # an invalid candidate's failed checks go with it into the panel benchmark (the curves' invalid diversity)
    assert {c.id: c.failed_checks for c in panel.candidates if c.label == "invalid"} == {
        cid: frozenset(candidates[cid]["failed_checks"]) or None for cid in ("sorts-in-place", "junit-garbage")}

    # one vocabulary: every reason collect stored is a word of tasks/model/outcome.py, of its dataset's set
    from testprism.tasks.model.outcome import (
        CANDIDATE_REASONS, INGEST_REASONS, PANEL_REASONS, QUARANTINE_REASONS, VERIFICATION_REASONS)
    stored = {name: set(Store(store).scan(name).select("reason").collect()["reason"].drop_nulls())
              for name in ("candidates", "verifications")}
    assert stored["candidates"] >= {"duplicate", "same_as_reference", "instance_quarantined", "patch_failed"}
    assert stored["candidates"] <= CANDIDATE_REASONS and stored["verifications"] <= VERIFICATION_REASONS
    exclusions = {e["reason"] for row in funnel.iter_rows(named=True) for e in row["exclusions"]}
    assert "unknown_instance" in exclusions
    assert exclusions <= CANDIDATE_REASONS | QUARANTINE_REASONS | INGEST_REASONS | PANEL_REASONS

    second = collect_flow(**args)
    assert second.executed == 0 and second.reused == 11 and second.panels == 1


@pytest.mark.slow
@pytest.mark.requires("sandbox")
@pytest.mark.parametrize("instance_id", ["algokit__bisect-past-end", "calkit__merge-touching"])
def test_labels_agree_with_the_bundled_benchmark(instance_id, tmp_path, work_root):
    if not (EXAMPLES / "instances" / instance_id).is_dir():
        pytest.fail(f"the bundled benchmark lost {instance_id}: pick another instance for this check")
    instance = load_benchmark(EXAMPLES).instances[instance_id]
    options = replace(options_for(tmp_path / "store", work_root), policy=GOLD_POLICY)
    gold = gold_plan(instance, options)
    execute(gold, options)
    verdict = gold_verdict(instance, list(stored_rows(Store(tmp_path / "store"), [s.key for s in gold]).values()))
    assert verdict.validated, verdict.detail
    labels, _ = label_all(instance, tmp_path / "store", work_root)
    assert {cid: label.label for cid, label in labels.items()} == {c.id: c.label for c in instance.candidates}
    assert all(label.reason is None for label in labels.values())
    # the failed checks the benchmark records (the panel-size curves' invalid diversity) are the checks' own
    assert {cid: frozenset(label.failed_checks) for cid, label in labels.items() if label.label == "invalid"} == {
        c.id: c.failed_checks for c in instance.candidates if c.label == "invalid"}
