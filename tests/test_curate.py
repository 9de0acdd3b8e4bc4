"""Curation's selection (tasks/curate/): signals from diffs and syntax trees, bounds,
dedup, and the seeded repository-disjoint split with per-source quotas."""

from __future__ import annotations

import random
import shutil
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest

from testprism.storage import SCHEMAS, Store

from testprism.tasks.curate.selection import (
    CurateItem,
    SourceRule,
    SplitRule,
    deduplicate,
    proportional,
    repository_of,
    reproduced_by_all,
    screen,
    split,
    too_easy,
)
from testprism.tasks.curate import signals as signal_rules
from testprism.tasks.curate.signals import Signals, python_tests, signals_of, solution_lines
from testprism.tasks.model import patches
from testprism.tasks.model.benchmark import load_benchmark
from testprism.tasks.model.outcome import CURATE_REASONS, Reason

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

REFERENCE = """\
diff --git a/pkg/m.py b/pkg/m.py
--- a/pkg/m.py
+++ b/pkg/m.py
@@ -1,3 +1,6 @@
 def f(x):
-    return x
+    # the fix: clamp
+
+    return max(x, 0)
+    # trailing note
 
diff --git a/pkg/n.js b/pkg/n.js
--- a/pkg/n.js
+++ b/pkg/n.js
@@ -1,1 +1,2 @@
-let a = 1;
+// comment only
+let a = 2;
"""


def test_solution_size_counts_effective_lines_only():
    # m.py: `return x` removed, `return max(x, 0)` added; n.js: `let a = 1;` and `let a = 2;`
    assert solution_lines(REFERENCE) == 4


def test_python_tests_follow_pytests_collection_rule():
    source = '''
import unittest

def test_a(): pass
async def test_b(): pass
def helper(): pass

class TestThing:
    def test_c(self): pass
    def setup_method(self): pass
    class TestNested:
        def test_d(self): pass

class Case(unittest.TestCase):
    def test_e(self): pass

class NotATest:
    def test_ignored(self): pass
'''
    assert python_tests(source) == 5


@pytest.mark.parametrize("path, source, expected", [
    ("a_test.go", "func TestOne(t *testing.T) {}\nfunc helper() {}\nfunc TestTwo(t *testing.T) {}\n", 2),
    ("a.test.js", "describe('x', () => {\n  it('one', () => {});\n  test.each([1])('two', () => {});\n});\n", 2),
    ("lib.rs", "#[test]\nfn one() {}\n#[tokio::test]\nasync fn two() {}\n", 2),
    ("notes.txt", "test test test", 0),
    ("broken.py", "def test_(:\n", 0),
])
def test_tests_in_other_languages_by_their_documented_pattern(path, source, expected):
    assert signal_rules.tests_in(path, source) == expected


def test_signals_of_a_bundled_instance_read_its_official_tests_as_patched():
    instance = load_benchmark(EXAMPLES).instances["algokit__bisect-past-end"]
    signals = signals_of(instance)
    checks = instance.spec.checks
    # the official test file defines exactly the tests the instance lists
    assert signals.test_count == len(checks.fail_to_pass) + len(checks.pass_to_pass) == 7
    assert signals.files_modified == 1 and signals.solution_lines >= 1
    assert signals.test_density == signals.test_count


def test_official_tests_patched_in_memory_are_what_git_makes_of_them():
    bench = load_benchmark(EXAMPLES)
    for instance in bench.instances.values():
        touched = sorted(patches.touched_files(patches.parse(instance.checks_patch)))
        in_memory = signal_rules.official_test_files(instance.program, instance.checks_patch)
        assert in_memory and in_memory == signal_rules._with_git(instance.program, instance.checks_patch, touched)


def test_a_checks_patch_over_an_existing_test_file_in_memory_or_by_git(tmp_path):
    program = tmp_path / "program"
    (program / "tests").mkdir(parents=True)
    (program / "tests" / "test_a.py").write_text("import m\n\n\ndef test_old():\n    assert m.f()\n")
    patch = (b"--- a/tests/test_a.py\n+++ b/tests/test_a.py\n@@ -3,3 +3,6 @@\n \n def test_old():\n"
             b"     assert m.f()\n+\n+def test_new():\n+    assert not m.g()\n")
    exact = signal_rules.official_test_files(program, patch)
    assert signal_rules.tests_in("tests/test_a.py", exact["tests/test_a.py"]) == 2
    # the file gained a line above the hunk: the old side no longer matches where it says,
    # so git applies it (with its offset) and the result is the same two tests
    (program / "tests" / "test_a.py").write_text("import m\nimport os\n\n\ndef test_old():\n    assert m.f()\n")
    shifted = signal_rules.official_test_files(program, patch)
    assert shifted["tests/test_a.py"].count("def test_") == 2 and "import os" in shifted["tests/test_a.py"]


def item(instance_id: str, source: str = "s", repository: str | None = None, instruction: str | None = None,
         program: str = "p", signals: Signals = Signals(5, 5, 1)) -> CurateItem:
    return CurateItem(instance_id, source, repository or repository_of(instance_id),
                      instruction if instruction is not None else f"fix {instance_id}", program, signals)


def test_bounds_are_per_source_and_say_why():
    items = [item("a__1", "x", signals=Signals(1, 9, 1)), item("a__2", "x", signals=Signals(9, 1, 1)),
             item("a__3", "x", signals=Signals(9, 9, 9)), item("a__4", "y", signals=Signals(1, 1, 1))]
    kept, out = screen(items, {"x": SourceRule(min_solution_lines=2, min_tests=2, min_density=2.0)})
    assert [i.instance_id for i in kept] == ["a__4"]  # y has no bounds
    assert [(e.item, e.reason) for e in out] == [
        ("a__1", Reason.SOLUTION_TOO_SMALL), ("a__2", Reason.TOO_FEW_TESTS), ("a__3", Reason.TESTS_TOO_SPARSE)]
    assert {e.reason for e in out} <= CURATE_REASONS


def test_dedup_keeps_one_per_normalised_instruction_and_program_whatever_the_order():
    items = [item("b__2", instruction="Fix  the Bug\n"), item("b__1", instruction="fix the bug"),
             item("b__3", instruction="fix the bug", program="other"), item("b__4", instruction="another")]
    for order in (items, items[::-1]):
        kept, out = deduplicate(order)
        assert [i.instance_id for i in kept] == ["b__1", "b__3", "b__4"]
        assert [(e.item, e.reason) for e in out] == [("b__2", Reason.DUPLICATE)]


def test_proportional_shares_sum_to_the_total_and_respect_caps():
    assert proportional({"a": 50, "b": 30, "c": 20}, 10) == {"a": 5, "b": 3, "c": 2}
    assert sum(proportional({"a": 7, "b": 7, "c": 7}, 10).values()) == 10
    # a cap frees its share for the others; never more than a source has
    assert proportional({"a": 50, "b": 30, "c": 20}, 10, {"a": 2}) == {"a": 2, "b": 5, "c": 3}
    assert proportional({"a": 1, "b": 100}, 50) == {"a": 0, "b": 50}  # largest remainder: .495 < .5
    assert proportional({"a": 3, "b": 2}, 99) == {"a": 3, "b": 2}


def population(seed: int = 0) -> list[CurateItem]:
    """Three sources of different sizes, several instances per repository."""
    rng = random.Random(seed)
    out = []
    for source, repos in (("big", 30), ("mid", 15), ("small", 6)):
        for r in range(repos):
            for k in range(rng.randint(1, 5)):
                out.append(item(f"{source}{r}__x-{k}", source, repository=f"{source}/repo{r}"))
    return out


def test_a_source_in_one_repository_fills_its_quota_from_part_of_it():
    items = [item(f"one__{k}", "solo", repository="one/repo") for k in range(10)]
    items += [item(f"r{k}__x", "many", repository=f"many/r{k}") for k in range(10)]
    chosen = split(items, SplitRule(seed=1, test_size=4, train_size=20), {})
    assert Counter(i.source for i in chosen.test) == {"solo": 2, "many": 2}
    # the rest of the one repository is set aside, never trained on
    assert not any(i.source == "solo" for i in chosen.train)
    assert sum(i.source == "solo" for i in chosen.unused) == 8
    assert len(chosen.train) == 8  # every remaining `many` repository


def test_split_is_repository_disjoint_within_quotas_and_deterministic():
    items = population()
    rule = SplitRule(seed=42, test_size=30, train_size=60)
    rules = {"big": SourceRule(test_quota=12)}
    first = split(items, rule, rules)
    test_repos = {i.repository for i in first.test}
    assert not test_repos & {i.repository for i in first.train}
    counts = Counter(i.source for i in first.test)
    quota = proportional(dict(Counter(i.source for i in items)), 30, {"big": 12})
    assert all(counts[s] <= quota[s] for s in quota) and counts["big"] <= 12
    assert len(first.test) == 30  # whole repositories first, then part of one per open quota
    assert len(first.train) == 60
    # same inputs in another order, same rules: the same selection
    shuffled = items[:]
    random.Random(7).shuffle(shuffled)
    again = split(shuffled, rule, rules)
    assert [i.instance_id for i in again.test] == [i.instance_id for i in first.test]
    assert [i.instance_id for i in again.train] == [i.instance_id for i in first.train]
    # another seed, another sample
    other = split(items, SplitRule(seed=43, test_size=30, train_size=60), rules)
    assert {i.instance_id for i in other.test} != {i.instance_id for i in first.test}
    # every eligible item lands on exactly one side
    sides = [i.instance_id for i in first.test + first.train + first.unused]
    assert sorted(sides) == sorted(i.instance_id for i in items)


def runs_store(root: Path, outcomes: dict[tuple[str, str, str], str]) -> Store:
    """A store holding one run per (configuration, instance, state) with the given outcome."""
    store = Store(root)
    schema = SCHEMAS["runs"]
    rows = []
    for (conf, iid, state), outcome in outcomes.items():
        row = {name: None for name in schema.names}
        row.update(run_key=f"{conf}/{iid}/{state}", instance_id=iid, source="s", configuration=conf, state=state,
                   outcome=outcome, started_at=datetime.now(UTC), attempts=1, duration_s=0.1, tests=[])
        rows.append(row)
    store.append("runs", pa.Table.from_pylist(rows, schema=schema))
    return store


def test_difficulty_filter_drops_what_every_named_configuration_reproduces(tmp_path):
    outcomes = {}
    for conf in ("a", "b", "c"):
        outcomes[(conf, "easy", "buggy")], outcomes[(conf, "easy", "reference")] = "F", "P"
    # b does not reproduce `hard` (its suite passes on buggy); c has no run of `partial`
    outcomes |= {("a", "hard", "buggy"): "F", ("a", "hard", "reference"): "P",
                 ("b", "hard", "buggy"): "P", ("b", "hard", "reference"): "P",
                 ("a", "partial", "buggy"): "F", ("a", "partial", "reference"): "P",
                 ("b", "partial", "buggy"): "F", ("b", "partial", "reference"): "P"}
    store = runs_store(tmp_path / "store", outcomes)
    assert reproduced_by_all(store, ["a", "b"]) == {"easy", "partial"}
    assert reproduced_by_all(store, ["a", "b", "c"]) == {"easy"}
    assert reproduced_by_all(store, []) == set()
    kept, out = too_easy([item("easy"), item("hard"), item("partial")], store, ["a", "b", "c"])
    assert [i.instance_id for i in kept] == ["hard", "partial"]
    assert [(e.item, e.reason) for e in out] == [("easy", Reason.TOO_EASY)]


def curate_cli(*args: str):
    from typer.testing import CliRunner

    from testprism.flows.cli import app

    return CliRunner().invoke(app, ["curate", *args])


@pytest.mark.slow
@pytest.mark.requires("sandbox")
@pytest.mark.requires("docker")  # the Harbor source's solution scripts run in its Dockerfile's image
def test_curate_the_examples_by_their_example_config(tmp_path, work_root):
    store, out = tmp_path / "store", tmp_path / "bench"
    args = [str(EXAMPLES / "curate.toml"), "--store", str(store), "--out", str(out), "--work", str(work_root)]
    result = curate_cli(*args)
    assert result.exit_code == 0, result.output
    funnel = Store(store).scan("funnel").filter(pl.col("flow") == "curate").collect().sort("step")
    assert funnel["stage"].to_list() == ["sources", "bounds", "dedup", "difficulty", "split"]
    # 23 bundled instances (12 Python, 2 Go, 2 JavaScript and one each of Rust, Java, TypeScript,
    # C, C++, PHP and Ruby), 1 of 2 Harbor tasks, 2 of 3 exercises, 1 SWE-bench row; every
    # instance not in Python passes every bound
    assert funnel["retained"].to_list() == [27, 22, 22, 22, 9]
    assert sorted(e["item"] for e in funnel.row(0, named=True)["exclusions"]) == [
        "clone-at-build", "exercises/practice/reverse-string"]
    bounds = funnel.row(1, named=True)
    assert sorted((e["item"], e["reason"]) for e in bounds["exclusions"]) == [
        ("algokit__toposort-leaf-deps", "solution_too_small"),
        ("calkit__merge-touching", "too_few_tests"),
        ("textkit__snake-case-acronyms", "tests_too_sparse"),
        ("textkit__template-defaults-mutation", "solution_too_small"),
        ("textkit__wrap-exact-width", "tests_too_sparse"),
    ]
    test, train = load_benchmark(out), load_benchmark(tmp_path / "bench-train")
    assert len(test.instances) == 3 and len(train.instances) == 6
    repos = {repository_of(i) for i in test.instances}
    assert not repos & {repository_of(i) for i in train.instances}
    # the same config again: refused without --overwrite (nothing replaced), identical with it
    again = curate_cli(*args)
    assert again.exit_code == 2 and "--overwrite" in again.output
    assert curate_cli(*args, "--overwrite").exit_code == 0
    assert list(load_benchmark(out).instances) == list(test.instances)
    assert list(load_benchmark(tmp_path / "bench-train").instances) == list(train.instances)


@pytest.mark.parametrize(("text", "field"), [
    ('[[sources]]\nname = "x"\nkind = "zip"\npath = "."\n', "sources.0.kind"),
    ('[[sources]]\nname = "x"\nkind = "benchmark"\npath = "no-such-folder"\n', "sources.0.path"),
    ('[[sources]]\nname = "x"\nkind = "benchmark"\npath = "."\n[split]\ntest_size = -1\n', "split.test_size"),
    ('[[sources]]\nname = "x"\nkind = "benchmark"\npath = "."\n[judge]\nbase_url = "http://127.0.0.1:9"\n',
     "judge.model"),
    ("sources = [", "(syntax)"),
])
def test_a_bad_curate_config_is_one_line_naming_the_field(tmp_path, text, field):
    config = tmp_path / "curate.toml"
    config.write_text(text)
    result = curate_cli(str(config), "--store", str(tmp_path / "s"), "--out", str(tmp_path / "o"))
    assert result.exit_code == 2, result.output
    assert f"{config}: field {field}" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "s").exists() and not (tmp_path / "o").exists()


@pytest.mark.slow
def test_curate_with_the_judge_on_asks_once_and_sets_aside_what_it_does_not_include(tmp_path, work_root, endpoint):
    base_url, script = endpoint
    source = tmp_path / "source"
    markers = {"algokit__bisect-past-end": "score-90", "calkit__free-slots-nested-meeting": "score-60",
               "textkit__ini-value-equals": "score-10", "algokit__topk-tied-scores": "malformed"}
    for iid, marker in markers.items():
        shutil.copytree(EXAMPLES / "instances" / iid, source / "instances" / iid)
        with (source / "instances" / iid / "instruction.md").open("a") as fh:
            fh.write(f"\n[[script:{marker}]]\n")
    config = tmp_path / "curate.toml"
    config.write_text(f'[[sources]]\nname = "s"\nkind = "benchmark"\npath = "source"\n\n'
                      f'[split]\ntest_size = 1\ntrain_size = 0\n\n'
                      f'[judge]\nbase_url = "{base_url}"\nmodel = "judge-test"\napi_key = "sk-test"\n'
                      f'concurrency = 2\nmax_retries = 0\n')
    store, out = tmp_path / "store", tmp_path / "bench"
    args = [str(config), "--store", str(store), "--out", str(out), "--work", str(work_root)]
    result = curate_cli(*args)
    assert result.exit_code == 0, result.output
    assert script.total() == 4
    funnel = Store(store).scan("funnel").filter(pl.col("flow") == "curate").collect().sort("step")
    audit = funnel.filter(pl.col("stage") == "audit").row(0, named=True)
    assert audit["retained"] == 1
    assert sorted((e["item"], e["reason"]) for e in audit["exclusions"]) == [
        ("algokit__topk-tied-scores", "needs_review"),  # malformed: never a crash, never an include
        ("calkit__free-slots-nested-meeting", "needs_review"),
        ("textkit__ini-value-equals", "judge_excluded"),
    ]
    assert list(load_benchmark(out).instances) == ["algokit__bisect-past-end"]
    # the answers are in the store: a second curation asks nothing
    assert curate_cli(*args, "--overwrite").exit_code == 0
    assert script.total() == 4


def mixed_config(path: Path, fx, *, reverse: bool = False) -> Path:
    sources = [
        f'[[sources]]\nname = "bundled"\nkind = "benchmark"\npath = "{EXAMPLES}"\n',
        f'[[sources]]\nname = "harbor"\nkind = "harbor"\npath = "{EXAMPLES / "sources" / "harbor"}"\n',
        f'[[sources]]\nname = "track"\nkind = "exercises"\npath = "{EXAMPLES / "sources" / "exercises"}"\n',
        f'[[sources]]\nname = "swe"\nkind = "swebench"\npath = "{fx.rows}"\nrecipes = ["{fx.recipes}"]\n'
        f'repos = "{fx.repos}"\n',
    ]
    path.write_text("\n".join(sources[::-1] if reverse else sources) + """
[bounds.algorithms]
min_solution_lines = 2

[bounds.textproc]
test_quota = 0

[split]
seed = 42
test_size = 4
train_size = 6
""")
    return path


@pytest.mark.slow
@pytest.mark.requires("sandbox")
@pytest.mark.requires("docker")  # the Harbor source's solution scripts run in its Dockerfile's image
def test_curate_a_mixed_set_of_four_kinds_of_source(tmp_path, work_root):
    from tests.gitfixture import build_git_fixture

    from testprism.tasks.curate.sources import item_of

    fx = build_git_fixture(tmp_path / "fixture")
    store = tmp_path / "store"
    runs = {}
    for name, reverse in (("first", False), ("again", False), ("reversed", True)):
        config = mixed_config(tmp_path / f"{name}.toml", fx, reverse=reverse)
        out = tmp_path / name / "bench"
        result = curate_cli(str(config), "--store", str(store), "--out", str(out), "--work", str(work_root))
        assert result.exit_code == 0, result.output
        runs[name] = (load_benchmark(out), load_benchmark(tmp_path / name / "bench-train"))
    funnels = Store(store).scan("funnel").filter(pl.col("flow") == "curate").collect()
    one = funnels.filter(pl.col("flow_run") == funnels.sort("recorded_at")["flow_run"][0]).sort("step")
    assert one["stage"].to_list() == ["sources", "bounds", "dedup", "split"]
    # 23 bundled (12 Python, 2 Go, 2 JavaScript, one in each of the seven other languages) + 1 Harbor task + 2 exercises
    # + 1 SWE-bench row; a Harbor task without its program and an exercise without its example are skipped by their adapters
    assert one["retained"].to_list() == [27, 26, 26, 10]
    sources = one.row(0, named=True)
    assert sorted(e["reason"] for e in sources["exclusions"]) == ["source_skipped", "source_skipped"]
    assert [e["item"] for e in one.row(1, named=True)["exclusions"]] == ["algokit__toposort-leaf-deps"]
    test, train = runs["first"]
    assert len(test.instances) == 4 and len(train.instances) == 6
    assert not any(i.source == "textproc" for i in test.instances.values())  # its quota is 0
    repositories = {side: {item_of(i).repository for i in bench.instances.values()}
                    for side, bench in (("test", test), ("train", train))}
    assert not repositories["test"] & repositories["train"]
    # the same inputs give the same selection, whatever the order of the sources
    for name in ("again", "reversed"):
        assert sorted(runs[name][0].instances) == sorted(test.instances)
        assert sorted(runs[name][1].instances) == sorted(train.instances)
