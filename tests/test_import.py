"""Importing SWE-bench rows and generated test patches, on a real git repository
(tests/gitfixture.py): the exported program, the patches, bad rows, recipes, suites and
their replay."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from testprism.flows.cli import import_app
from testprism.storage import Store
from testprism.tasks.importing import suite_import
from testprism.tasks.model.benchmark import CONFIGURATION as CONFIGURATION_RULE, load_benchmark
from testprism.tasks.model.hashing import tree_files
from testprism.tasks.importing.recipe import NoRecipe, Recipe, RecipeError, load_recipe_file, load_recipes
from testprism.tasks.replay.runs import execute_batch, plan
from testprism.tasks.execution.batch import ExecutionOptions
from testprism.tasks.sandbox.local import LocalBackend
from testprism.tasks.model.state import apply_patch
from testprism.tasks.importing.suite_import import configuration_name, import_suites, selected_tests
from testprism.tasks.model.pytest_ids import find_test_functions
from testprism.tasks.importing.rows import RowError
from testprism.tasks.importing.sources import ProgramSources
from testprism.tasks.importing.swebench import import_rows
from testprism.tasks.importing.verifier import Verifier
from testprism.tasks.model.patches import is_test_file
from testprism.tasks.model.toml_writer import value as toml_list, value as toml_string
from tests.gitfixture import (INSTANCE_ID, SUITE_SELECTED, GitFixture, LanguageFixture, build_git_fixture,
                              build_multilingual_fixture)

CONFIGURATION = "agent-x__model-1"


@pytest.fixture()
def fx(tmp_path: Path) -> GitFixture:
    return build_git_fixture(tmp_path / "fixture")


def write_rows(path: Path, rows: list[dict | str]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def run_import(fx: GitFixture, out: Path, rows: Path | None = None, **kwargs):
    return import_rows(rows or fx.rows, out, load_recipes([fx.recipes]), ProgramSources.from_options(fx.repos, None),
                       **kwargs)


def git_files(repo: Path, commit: str) -> dict[str, bytes]:
    names = subprocess.run(["git", "ls-tree", "-r", "--name-only", commit], cwd=repo, capture_output=True,
                           text=True, check=True).stdout.split()
    return {n: subprocess.run(["git", "show", f"{commit}:{n}"], cwd=repo, capture_output=True, check=True).stdout
            for n in names}


# -- SWE-bench rows -------------------------------------------------------------------------


def test_row_becomes_an_instance_at_base_commit(fx, tmp_path):
    out = tmp_path / "bench"
    report = run_import(fx, out)
    assert report.imported == [INSTANCE_ID] and not report.issues
    instance = load_benchmark(out).instances[INSTANCE_ID]
    program = {p.relative_to(instance.program).as_posix(): p.read_bytes() for p in tree_files(instance.program)}
    assert program == git_files(fx.repo, fx.base_commit)  # not HEAD: no CHANGELOG.md, version 0.2
    assert not (instance.program / ".git").exists()
    assert instance.reference == fx.reference.encode() and instance.checks_patch == fx.test_patch.encode()
    spec = instance.spec
    assert (spec.source, spec.summary) == ("swe-bench-lite", "slugify drops digits")
    assert spec.environment.packages == ("pytest>=8,<10",)
    assert spec.checks.command == ("WIDGETS_MODE=strict python -m pytest -q -p no:cacheprovider tests/test_text.py "
                                   "--junitxml=$TESTPRISM_JUNIT")
    assert spec.checks.fail_to_pass == ("tests/test_text.py::test_slugify_keeps_digits",)
    assert spec.checks.pass_to_pass == ("tests/test_text.py::test_slugify_lowercases",)
    assert (instance.folder / "instruction.md").read_text() == fx.row["problem_statement"]
    scratch = tmp_path / "scratch"
    shutil.copytree(instance.program, scratch)
    assert apply_patch(scratch, instance.reference).applied and apply_patch(scratch, instance.checks_patch).applied
    assert not (out / ".staging").exists()
    assert run_import(fx, out).existing == [INSTANCE_ID]  # a rerun keeps what is there


def test_bad_rows_are_named_and_the_rest_still_imported(fx, tmp_path):
    good = fx.row
    missing = {k: v for k, v in good.items() if k != "FAIL_TO_PASS"} | {"instance_id": "acme__widgets-2"}
    not_a_diff = good | {"instance_id": "acme__widgets-3", "patch": "please fix slugify"}
    unknown_commit = good | {"instance_id": "acme__widgets-4", "base_commit": "0123456789abcdef0123456789abcdef01234567"}
    no_clone = good | {"instance_id": "acme__gadgets-5", "repo": "acme/gadgets"}
    no_recipe = good | {"instance_id": "acme__gizmos-6", "repo": "acme/gizmos"}
    rows = write_rows(tmp_path / "rows.jsonl", [missing, not_a_diff, "{truncated", good, unknown_commit, no_clone, no_recipe])
    gadgets = tmp_path / "gadgets.toml"
    gadgets.write_text(fx.recipes.read_text().replace("acme/widgets", "acme/gadgets"))
    out = tmp_path / "bench"
    report = import_rows(rows, out, load_recipes([fx.recipes, gadgets]), ProgramSources.from_options(fx.repos, None))
    assert report.imported == [INSTANCE_ID]
    issues = {(i.row, i.instance_id, i.field) for i in report.issues}
    assert issues == {
        ("rows.jsonl:1", "acme__widgets-2", "FAIL_TO_PASS"),
        ("rows.jsonl:2", "acme__widgets-3", "patch"),
        ("rows.jsonl:3", "", "(row)"),
        ("rows.jsonl:5", "acme__widgets-4", "base_commit"),
        ("rows.jsonl:6", "acme__gadgets-5", "repo"),
        ("rows.jsonl:7", "acme__gizmos-6", "repo"),
    }
    messages = {i.instance_id: i.message for i in report.issues}
    assert "not a unified diff" in messages["acme__widgets-3"]
    assert "is not a commit of" in messages["acme__widgets-4"]
    assert "no local clone of acme/gadgets" in messages["acme__gadgets-5"]
    assert "no recipe for acme/gizmos" in messages["acme__gizmos-6"]
    assert sorted(p.name for p in (out / "instances").iterdir()) == [INSTANCE_ID]  # nothing half-written
    assert not (out / ".staging").exists()


def test_json_list_and_patch_that_needs_fuzz(fx, tmp_path):
    # A test patch whose context drifted (as against a source release): applies with fuzz only,
    # and is stored as the exact diff it produces, the published one kept beside it.
    drifted = fx.test_patch.replace(" def test_slugify_transliterates():", " def test_slugify_transliterate():")
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps([fx.row | {"test_patch": drifted}]))
    out = tmp_path / "bench"
    assert run_import(fx, out, rows).imported == [INSTANCE_ID]
    folder = out / "instances" / INSTANCE_ID
    assert (folder / "checks.published.diff").read_text() == drifted
    scratch = tmp_path / "scratch"
    shutil.copytree(folder / "program", scratch)
    assert apply_patch(scratch, (folder / "checks.diff").read_bytes()).method == "git apply"
    assert "test_slugify_keeps_digits" in (scratch / "tests" / "test_text.py").read_text()
    assert 'rewritten_patches = [\n    "checks",\n]' in (folder / "origin.toml").read_text()


def test_release_folder_stands_in_for_a_clone(fx, tmp_path):
    release = tmp_path / "widgets-0.2"
    release.mkdir()
    subprocess.run(f"git archive {fx.base_commit} | tar -x -C {release}", shell=True, cwd=fx.repo, check=True)
    mapping = tmp_path / "releases.toml"
    mapping.write_text('"acme/widgets@0.2" = "widgets-0.2"\n')
    out = tmp_path / "bench"
    report = import_rows(fx.rows, out, load_recipes([fx.recipes]), ProgramSources.from_options(None, mapping))
    assert report.imported == [INSTANCE_ID]
    assert "release folder" in (out / "instances" / INSTANCE_ID / "origin.toml").read_text()
    no_release = fx.row | {"instance_id": "acme__widgets-9", "version": "0.3"}
    report = import_rows(write_rows(tmp_path / "more.jsonl", [no_release]), out, load_recipes([fx.recipes]),
                         ProgramSources.from_options(None, mapping))
    assert [(i.field, "no release folder" in i.message) for i in report.issues] == [("instance_id", True)]


def test_cli_reports_a_table_and_exits_by_the_rule(fx, tmp_path):
    runner = CliRunner()
    out = tmp_path / "bench"
    bad = write_rows(tmp_path / "bad.jsonl", [fx.row | {"instance_id": "acme__widgets-3", "patch": "nope"}])
    args = ["swebench", "--out", str(out), "--recipes", str(fx.recipes), "--repos", str(fx.repos)]
    result = runner.invoke(import_app, [*args[:1], str(bad), *args[1:]])
    assert result.exit_code == 1, result.output  # nothing imported
    assert "acme__widgets-3" in result.output and "not a unified diff" in result.output
    both = write_rows(tmp_path / "both.jsonl", [fx.row, fx.row | {"instance_id": "acme__widgets-3", "patch": "nope"}])
    assert runner.invoke(import_app, [*args[:1], str(both), *args[1:]]).exit_code == 0
    assert runner.invoke(import_app, [*args[:1], str(both), *args[1:], "--strict"]).exit_code == 1
    result = runner.invoke(import_app, ["swebench", str(both), "--out", str(out), "--recipes", str(tmp_path / "none.toml"),
                                        "--repos", str(fx.repos)])
    assert result.exit_code == 2 and "none.toml" in result.output


def test_toml_strings_survive_any_text():
    nasty = 'quote " backslash \\ tab \t nl \n bell \x07 del \x7f ünï 😀 $(rm -rf /)'
    assert tomllib.loads(f"v = {toml_string(nasty)}\nl = {toml_list([nasty, 'x'])}") == {"v": nasty, "l": [nasty, "x"]}


# -- recipes --------------------------------------------------------------------------------


def test_recipe_folds_env_setup_and_deselect_into_one_command():
    recipe = Recipe(repo="a/b", test_command="python -m pytest {test_files} {deselect} --junitxml=$TESTPRISM_JUNIT",
                    setup=["python setup.py build_ext -i"], env={"NO_NET": "1", "MSG": "a b"},
                    deselect=["t/test_net.py::test_dial[tarpit]"])
    assert recipe.command_template() == (
        "MSG='a b' NO_NET=1 python setup.py build_ext -i && MSG='a b' NO_NET=1 python -m pytest {test_files} "
        "--deselect 't/test_net.py::test_dial[tarpit]' --junitxml=$TESTPRISM_JUNIT")
    assert recipe.deselects("t/test_net.py::test_dial") and recipe.deselects("test_dial")
    assert not recipe.deselects("t/test_net.py::test_dial_local")


def test_deselected_tests_leave_the_checks(fx, tmp_path):
    recipes = tmp_path / "recipes.toml"
    recipes.write_text(fx.recipes.read_text().replace(
        "{test_files} --junitxml", "{test_files} {deselect} --junitxml").replace(
        'packages = ["pytest>=8,<10"]', 'packages = ["pytest>=8,<10"]\ndeselect = ["tests/test_text.py::test_slugify_lowercases"]'))
    out = tmp_path / "bench"
    report = import_rows(fx.rows, out, load_recipes([recipes]), ProgramSources.from_options(fx.repos, None))
    assert report.imported == [INSTANCE_ID]
    checks = load_benchmark(out).instances[INSTANCE_ID].spec.checks
    assert checks.pass_to_pass == () and "--deselect tests/test_text.py::test_slugify_lowercases" in checks.command


@pytest.mark.parametrize(("text", "field"), [
    ('[[recipe]]\nrepo = "a/b"\n', "recipe.0.test_command"),
    ('[[recipe]]\nrepo = "a/b"\ntest_command = "pytest"\n', "recipe.0"),
    ('[[recipe]]\nrepo = "a/b"\ntest_command = "pytest {test_files}"\ndeselect = ["x"]\n', "recipe.0"),
    ('[[recipe]]\nrepo = "a/b"\nversions = "1.6+"\ntest_command = "pytest {test_files}"\n', "recipe.0.versions"),
    ('[[recipe]]\nrepo = "a/b"\ntest_command = "pytest {test_files}"\npyhton = "3.11"\n', "recipe.0.pyhton"),
    ('[[recipe]]\nrepo = "a/b"\ntest_command = "pytest {test_files}"\nparser = "pytset"\n', "recipe.0.parser"),
    ('[recipe]\nrepo = "a/b"\n', "recipe"),
    ("repo = 'a/b'\n", "repo"),
])
def test_recipe_errors_name_file_and_field(tmp_path, text, field):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(RecipeError) as caught:
        load_recipe_file(path)
    assert caught.value.field == field and str(path) in str(caught.value)


def test_row_without_a_matching_recipe_names_its_version(fx, tmp_path):
    rows = write_rows(tmp_path / "rows.jsonl", [fx.row | {"version": "1.4"}])
    [issue] = run_import(fx, tmp_path / "bench", rows).issues
    assert issue.field == "version" and "no recipe for acme/widgets version '1.4'" in issue.message


def test_bundled_sympy_recipe_covers_the_realdata_versions():
    book = load_recipes([Path(__file__).resolve().parents[1] / "examples" / "recipes" / "sympy.toml"])
    for version in ("1.4", "1.6", "1.9", "1.10", "1.11"):  # 1.4: the gate of 2026-12-07 (realdata-results)
        recipe, _ = book.find("sympy/sympy", version)
        assert recipe.python == "3.11" and "mpmath==1.3.0" in recipe.packages
    with pytest.raises(NoRecipe):
        book.find("sympy/sympy", "1.1")


# -- suites from test patches ---------------------------------------------------------------


def test_test_functions_follow_classes_and_decorators():
    source = (
        "import pytest\n\n"                       # 1-2
        "@pytest.mark.parametrize('x', [1])\n"    # 3
        "def test_a(x):\n"                        # 4
        "    assert x\n\n"                         # 5-6
        "class TestB:\n"                          # 7
        "    def test_c(self):\n"                 # 8
        "        pass\n\n"                        # 9-10
        "class Helper:\n"                         # 11
        "    def test_not_collected(self):\n"     # 12
        "        pass\n\n"                        # 13-14
        "def helper():\n"                         # 15
        "    pass\n"                              # 16
    )
    assert find_test_functions(source) == [("test_a", 3, 5), ("TestB::test_c", 8, 9)]


@pytest.mark.parametrize(("path", "runs"), [
    ("sympy/core/tests/test_arit.py", True), ("pkg/util_test.py", True), ("app/tests.py", True),
    ("tests/helpers.py", True), ("sympy/testing/quality_unicode.py", False), ("tests/conftest.py", False),
    ("tests/__init__.py", False), ("tests/data/case.json", False),
])
def test_which_touched_files_run_as_tests(path, runs):
    assert is_test_file(path) is runs


@pytest.mark.parametrize(("language", "path", "runs"), [
    # real rows (issue 40): immutable-js (JavaScript) keeps its Jest tests in TypeScript; vuejs/core
    # keeps specs under __tests__/helpers/
    ("javascript", "__tests__/Range.ts", True), ("javascript", "src/Range.ts", False),
    ("typescript", "packages/runtime-core/__tests__/helpers/renderList.spec.ts", True),
    ("typescript", "packages/runtime-core/__tests__/helpers/utils.ts", False),
    ("typescript", "__tests__/Range.js", False),
    ("javascript", "test/fixtures/app.js", False), ("javascript", "test/support/env.js", False),
    ("javascript", "test/app.router.js", True),
])
def test_which_touched_files_run_as_tests_in_javascript(language, path, runs):
    assert is_test_file(path, language) is runs


def test_selected_tests_count_removed_lines_too(tmp_path):
    program = tmp_path / "program"
    (program / "tests").mkdir(parents=True)
    (program / "tests" / "test_m.py").write_text(
        "def test_one():\n    assert 1\n    assert 2\n\n\ndef test_two():\n    assert 3\n")
    patch = ("--- a/tests/test_m.py\n+++ b/tests/test_m.py\n@@ -1,7 +1,6 @@\n def test_one():\n     assert 1\n"
             "-    assert 2\n \n \n def test_two():\n     assert 3\n")
    assert selected_tests(program, patch) == ["tests/test_m.py::test_one"]


def test_suite_from_a_test_patch(fx, tmp_path):
    out = tmp_path / "bench"
    run_import(fx, out)
    report = import_suites(fx.predictions, out)
    assert report.imported == [f"{CONFIGURATION}/{INSTANCE_ID}"] and not report.issues
    suite = load_benchmark(out).suites[(CONFIGURATION, INSTANCE_ID)]
    assert suite.tests == SUITE_SELECTED  # the changed and the added test, not the helper nor the old ones
    assert suite.files == ("run_tests.sh", "test.diff")
    assert (suite.folder / "test.diff").read_text() == fx.suite_patch  # the final newline restored
    assert suite.patch == fx.suite_patch.encode()  # applied by the harness (suite.toml `patch`), not by the script
    script = (suite.folder / "run_tests.sh").read_text()
    assert "\nWIDGETS_MODE=strict exec python -m pytest -q -p no:cacheprovider tests/test_text.py" in script
    assert 'scope = "tests"' in (suite.folder / "suite.toml").read_text()
    again = import_suites(fx.predictions, out)
    assert again.existing == [f"{CONFIGURATION}/{INSTANCE_ID}"] and not again.imported


def test_suite_rows_with_problems(fx, tmp_path):
    out = tmp_path / "bench"
    run_import(fx, out)
    helper_only = ("--- a/tests/test_text.py\n+++ b/tests/test_text.py\n@@ -7,3 +7,7 @@\n \n"
                   " def test_slugify_transliterates():  # a known failure no state fixes: it must not decide\n"
                   '     assert slugify("Ça va") == "ca-va"\n+\n+\n+def _words(slug):\n+    return slug.split("-")\n')
    rows = write_rows(tmp_path / "preds.jsonl", [
        {"instance_id": "acme__unknown-1", "model_name_or_path": "m", "model_patch": fx.suite_patch},
        {"instance_id": INSTANCE_ID, "model_name_or_path": "m", "model_patch": "I could not write a test"},
        {"instance_id": INSTANCE_ID, "model_name_or_path": "helper", "model_patch": helper_only},
        {"instance_id": INSTANCE_ID, "model_patch": fx.suite_patch},
    ])
    report = import_suites(rows, out)
    assert report.imported == [f"helper/{INSTANCE_ID}"]
    kept = [(i.row, i.field, i.fatal) for i in report.issues]
    assert kept == [("preds.jsonl:1", "instance_id", True), ("preds.jsonl:2", "model_patch", True),
                    ("preds.jsonl:3", "model_patch", False), ("preds.jsonl:4", "model_name_or_path", True)]
    assert 'scope = "files"' in (out / "suites" / "helper" / INSTANCE_ID / "suite.toml").read_text()



REAL_MODELS = ["Otter", "Otterplus", "copilot-basic/gpt-5-mini", "copilot-plus/gpt-5-mini"]  # generated_tests_dev.jsonl


def test_configuration_names_keep_plain_names_and_never_merge_two_models():
    assert [configuration_name(m) for m in REAL_MODELS] == [
        "Otter", "Otterplus", "copilot-basic__gpt-5-mini", "copilot-plus__gpt-5-mini"]
    alike = ["otter(GPT-4o)", "otter++(GPT-4o)", "otter GPT-4o", "otter__GPT-4o", "otter/GPT-4o", " otter/GPT-4o",
             "a_/b", "a/_b", "a//b", "a/__b"]
    names = [configuration_name(m) for m in alike]
    assert len(set(names)) == len(alike), dict(zip(alike, names))
    assert all(re.fullmatch(CONFIGURATION_RULE, n) for n in names)
    assert names[1].startswith("otter++__GPT-4o-")  # readable, with a hash of the original
    with pytest.raises(RowError):
        configuration_name("(/)")


def test_models_that_sanitise_alike_become_two_configurations(fx, tmp_path):
    out = tmp_path / "bench"
    run_import(fx, out)
    models = ["otter(GPT-4o)", "otter++(GPT-4o)"]
    rows = write_rows(tmp_path / "preds.jsonl", [
        {"instance_id": INSTANCE_ID, "model_name_or_path": m, "model_patch": fx.suite_patch} for m in models])
    report = import_suites(rows, out)
    assert not report.issues and len(report.imported) == 2
    bench = load_benchmark(out)
    assert len(bench.configurations) == 2
    for model, name in zip(models, (configuration_name(m) for m in models)):
        suite = bench.suites[(name, INSTANCE_ID)]
        assert suite.tests == SUITE_SELECTED
        assert tomllib.loads((suite.folder / "suite.toml").read_text())["model_name_or_path"] == model


def test_two_models_in_one_folder_are_refused_naming_both_rows(fx, tmp_path, monkeypatch):
    out = tmp_path / "bench"
    run_import(fx, out)
    monkeypatch.setattr(suite_import, "configuration_name", lambda model: "same")  # a hash collision, forced
    rows = write_rows(tmp_path / "preds.jsonl", [
        {"instance_id": INSTANCE_ID, "model_name_or_path": m, "model_patch": fx.suite_patch} for m in ("m-1", "m-2")])
    report = import_suites(rows, out)
    assert report.imported == [f"same/{INSTANCE_ID}"]
    [issue] = report.issues
    assert (issue.row, issue.field) == ("preds.jsonl:2", "model_name_or_path")
    assert "'m-2'" in issue.message and "'m-1' (preds.jsonl:1: field model_name_or_path)" in issue.message
    # Against the folder already written: the suite.toml that records the other model is named.
    again = import_suites(write_rows(tmp_path / "more.jsonl", [
        {"instance_id": INSTANCE_ID, "model_name_or_path": "m-3", "model_patch": fx.suite_patch}]), out)
    [issue] = again.issues
    assert (issue.row, issue.field) == ("more.jsonl:1", "model_name_or_path") and not again.existing
    assert f"{out / 'suites' / 'same' / INSTANCE_ID / 'suite.toml'}: field model_name_or_path" in issue.message
    overwritten = import_suites(rows, out, overwrite=True)  # --overwrite replaces m-1's suite, never merges m-2's
    assert overwritten.imported == [f"same/{INSTANCE_ID}"]
    assert [(i.row, i.field) for i in overwritten.issues] == [("preds.jsonl:2", "model_name_or_path")]


@pytest.mark.slow
@pytest.mark.requires("sandbox")
@pytest.mark.parametrize(("scope", "reference"), [("tests", "P"), ("files", "F")])
def test_imported_suite_replays_F_on_buggy_and_P_on_reference(fx, tmp_path, work_root, scope, reference):
    out = tmp_path / "bench"
    run_import(fx, out)
    import_suites(fx.predictions, out, scope=scope)
    options = ExecutionOptions(backend="local", work_root=work_root, store_root=tmp_path / "store")
    execute_batch(plan(load_benchmark(out), options), options)
    runs = Store(tmp_path / "store").scan("runs").collect()
    got = dict(runs.select("state", "outcome").iter_rows())
    # With scope "files", the old failing test of the file decides too, and rejects the reference.
    assert got == {"buggy": "F", "reference": reference}
    tests = runs.filter(pl.col("state") == "reference")["tests"][0]
    assert {t["name"].rsplit("::", 1)[-1] for t in tests} >= {"test_digits_survive", "test_slugify_transliterates"}


@pytest.mark.slow
@pytest.mark.requires("sandbox")
def test_verify_refuses_rows_whose_checks_do_not_reproduce(fx, tmp_path, work):
    wrong = fx.row | {"instance_id": "acme__widgets-2", "FAIL_TO_PASS": json.dumps(["tests/test_text.py::test_slugify_lowercases"])}
    rows = write_rows(tmp_path / "rows.jsonl", [fx.row, wrong])
    backend = LocalBackend(work)
    report = run_import(fx, tmp_path / "bench", rows, verifier=Verifier(backend, work))
    assert report.imported == [INSTANCE_ID]
    [issue] = report.issues
    assert issue.instance_id == "acme__widgets-2" and issue.field == "FAIL_TO_PASS/PASS_TO_PASS"
    assert "test_slugify_lowercases passes before the reference" in issue.message


# -- SWE-bench Multilingual rows ------------------------------------------------------------


def import_language(lx: LanguageFixture, out: Path, rows: Path | None = None):
    return import_rows(rows or lx.rows, out, load_recipes([lx.recipes]), ProgramSources.from_options(lx.repos, None),
                       source="swe-bench-multilingual")


@pytest.mark.parametrize(("language", "command"), [
    ("go", "gotestsum --junitfile $TESTPRISM_JUNIT -- -count=1 -run 'TestClamp|TestClampLow' ./calc/"),
    ("javascript", "node --test --test-reporter=junit --test-reporter-destination=$TESTPRISM_JUNIT "
                   "--test-name-pattern='clamps \\(above\\) the upper bound|keeps values inside' test/clamp.test.js"),
])
def test_multilingual_row_becomes_an_instance_of_its_language(tmp_path, language, command):
    lx = build_multilingual_fixture(tmp_path / "fixture", language)
    out = tmp_path / "bench"
    report = import_language(lx, out)
    assert report.imported == [lx.row["instance_id"]] and not report.issues
    instance = load_benchmark(out).instances[lx.row["instance_id"]]
    spec = instance.spec
    assert spec.language == language and spec.source == "swe-bench-multilingual"
    env_name = lx.recipes.stem
    copied = out / "environments" / env_name / "Dockerfile"
    assert copied.read_bytes() == lx.dockerfile.read_bytes()
    assert spec.environment.dockerfile == f"../../environments/{env_name}/Dockerfile"
    assert spec.environment.context == copied.parent.resolve()
    assert spec.environment.python is None and spec.environment.packages == ()  # no virtualenv
    assert spec.environment.toolchains == tuple(tomllib.loads(lx.recipes.read_text())["recipe"][0]["toolchains"])
    assert spec.checks.fail_to_pass == tuple(json.loads(lx.row["FAIL_TO_PASS"]))  # as given: Go subtests, JS titles
    assert spec.checks.pass_to_pass == tuple(json.loads(lx.row["PASS_TO_PASS"]))
    assert spec.checks.command == command
    if language == "go":
        assert spec.build is not None and spec.build.command == "go vet ./..." and spec.build.timeout_s == 300
        assert dict(spec.environment.variables) == {"GOPROXY": "off", "CGO_ENABLED": "0", "GOFLAGS": "-mod=mod"}
    # A second row of the recipe shares the copy; a changed Dockerfile is refused, naming the recipe.
    second = lx.row | {"instance_id": lx.row["instance_id"].replace("-7", "-8")}
    assert import_language(lx, out, write_rows(tmp_path / "second.jsonl", [second])).imported == [second["instance_id"]]
    lx.dockerfile.write_text(lx.dockerfile.read_text() + "RUN true\n")
    third = lx.row | {"instance_id": lx.row["instance_id"].replace("-7", "-9")}
    [issue] = import_language(lx, out, write_rows(tmp_path / "third.jsonl", [third])).issues
    assert issue.field == "repo" and f"{lx.recipes}: field dockerfile" in issue.message
    assert copied.read_text().count("RUN true") == 0 and not (out / "instances" / third["instance_id"]).exists()


def test_multilingual_rows_without_their_recipe_are_refused(tmp_path):
    go = build_multilingual_fixture(tmp_path / "go", "go")
    js = build_multilingual_fixture(tmp_path / "js", "javascript")
    # a Go row, a row naming another language than its recipe, a row of a repository with no recipe
    # (a row spelling its recipe's language its own way, `golang`, is that language; one naming
    # none testprism knows is refused naming the field)
    rows = write_rows(tmp_path / "rows.jsonl", [go.row, go.row | {"instance_id": "acme__gocalc-2", "language": "java"},
                                                js.row, go.row | {"instance_id": "acme__gocalc-3", "language": "Golang"},
                                                go.row | {"instance_id": "acme__gocalc-4", "language": "fortran"}])
    report = import_rows(rows, tmp_path / "bench", load_recipes([go.recipes]), ProgramSources.from_options(go.repos, None))
    assert report.imported == [go.row["instance_id"], "acme__gocalc-3"]
    issues = {i.instance_id: i for i in report.issues}
    assert issues["acme__gocalc-4"].field == "language" and "'fortran', not a language" in issues["acme__gocalc-4"].message
    assert issues["acme__gocalc-2"].field == "language"
    assert f"{go.recipes}: field language" in issues["acme__gocalc-2"].message and "'go'" in issues["acme__gocalc-2"].message
    assert issues[js.row["instance_id"]].field == "repo"
    assert "no recipe for acme/jsclamp" in issues[js.row["instance_id"]].message
    # A recipe whose language is wrong for the repository: its test files are not found, naming the field.
    wrong = go.recipes.with_name("wrong.toml")
    wrong.write_text(go.recipes.read_text().replace('language = "go"', 'language = "javascript"'))
    [issue] = import_rows(go.rows, tmp_path / "bench2", load_recipes([wrong]),
                          ProgramSources.from_options(go.repos, None)).issues
    assert issue.field == "test_patch" and "touches no javascript test file" in issue.message


@pytest.mark.parametrize(("text", "field"), [
    ('[[recipe]]\nrepo = "a/b"\nlanguage = "cobol"\ntest_command = "make {tests}"\n', "recipe.0.language"),
    ('[[recipe]]\nrepo = "a/b"\nlanguage = "go"\ntest_command = "go test ./..."\n', "recipe.0"),
    ('[[recipe]]\nrepo = "a/b"\nlanguage = "go"\ntest_command = "go test {tests} {deselect}"\n', "recipe.0"),
    ('[[recipe]]\nrepo = "a/b"\nlanguage = "go"\ntest_command = "go test -run {tests}"\ndockerfile = "none"\n',
     "recipe.0.dockerfile"),
    ('[[recipe]]\nrepo = "a/b"\nlanguage = "go"\ntest_command = "go test -run {tests}"\n'
     'variables = { TESTPRISM_JUNIT = "x" }\n', "recipe.0.variables"),
    ('[[recipe]]\nrepo = "a/b"\nlanguage = "go"\ntest_command = "go test -run {tests}"\nbuild = { timeout_s = 5 }\n',
     "recipe.0.build.command"),
    ('[[recipe]]\nrepo = "a/b"\nlanguage = "ruby"\nparser = "testunit"\ntest_command = "ruby t.rb -n /{tests}/"\n',
     "recipe.0.parser"),
])
def test_multilingual_recipe_errors_name_file_and_field(tmp_path, text, field):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(RecipeError) as caught:
        load_recipe_file(path)
    assert caught.value.field == field and str(path) in str(caught.value)


def test_a_recipes_context_folder_goes_beside_its_dockerfile(tmp_path):
    """A Java recipe's Maven seed (`context`) reaches the benchmark's environment folder, which
    is the build context both backends read (the local backend fills its Maven repository from
    `maven-seed/` there): without the field the folder stays behind, and a changed seed is
    refused as a changed Dockerfile is."""
    lx = build_multilingual_fixture(tmp_path / "fixture", "go")
    seed = lx.recipes.parent / "go-context" / "maven-seed"
    seed.mkdir(parents=True)
    (seed / "pom.xml").write_text("<project/>\n")
    without = import_language(lx, tmp_path / "without")
    assert without.imported and not (tmp_path / "without" / "environments" / "go" / "maven-seed").exists()
    lx.recipes.write_text(lx.recipes.read_text().replace('dockerfile = ', 'context = "go-context"\ndockerfile = '))
    out = tmp_path / "bench"

    class Seen:
        """A verifier that records what the staged instance's environment folder holds: --verify
        builds the environment from there, before the instance is in place."""

        def problems(self, instance) -> list[str]:
            self.files = sorted(p.name for p in instance.spec.environment.context.iterdir())
            return []

    seen = Seen()
    assert import_rows(lx.rows, out, load_recipes([lx.recipes]), ProgramSources.from_options(lx.repos, None),
                       source="swe-bench-multilingual", verifier=seen).imported == [lx.row["instance_id"]]
    assert seen.files == ["Dockerfile", "maven-seed"]
    environment = load_benchmark(out).instances[lx.row["instance_id"]].spec.environment
    assert (environment.context / "maven-seed" / "pom.xml").read_text() == "<project/>\n"
    assert (environment.context / "Dockerfile").read_bytes() == lx.dockerfile.read_bytes()
    (seed / "pom.xml").write_text("<project><modelVersion>4.0.0</modelVersion></project>\n")
    second = lx.row | {"instance_id": lx.row["instance_id"].replace("-7", "-8")}
    [issue] = import_language(lx, out, write_rows(tmp_path / "second.jsonl", [second])).issues
    assert issue.field == "repo" and f"{lx.recipes}: field context: maven-seed/pom.xml differs" in issue.message
    assert (environment.context / "maven-seed" / "pom.xml").read_text() == "<project/>\n"
    # a context that is not a folder, or without a dockerfile to go with, names the field
    lx.recipes.write_text(lx.recipes.read_text().replace('context = "go-context"', 'context = "nowhere"'))
    with pytest.raises(RecipeError) as caught:
        load_recipe_file(lx.recipes)
    assert caught.value.field == "recipe.0.context"


def test_two_recipes_may_not_share_an_environment_name_with_different_dockerfiles(tmp_path):
    for name, content in (("a.Dockerfile", "ARG BASE\nFROM ${BASE}\n"), ("b.Dockerfile", "ARG BASE\nFROM ${BASE}\nRUN true\n")):
        (tmp_path / name).write_text(content)
    path = tmp_path / "two.toml"
    path.write_text("".join(f'[[recipe]]\nrepo = "a/{r}"\nlanguage = "go"\ndockerfile = "{r}.Dockerfile"\n'
                            'test_command = "go test -run {tests} ./..."\n' for r in "ab"))
    with pytest.raises(RecipeError) as caught:
        load_recipes([path])
    assert caught.value.field == "recipe.1.name" and "'two'" in str(caught.value)
    path.write_text(path.read_text().replace('repo = "a/b"', 'repo = "a/b"\nname = "b-env"'))
    assert [r.environment_name(path) for r, _ in load_recipes([path]).recipes] == ["two", "b-env"]


def test_bundled_multilingual_recipes_load():
    recipes = Path(__file__).resolve().parents[1] / "examples" / "recipes"
    book = load_recipes([recipes / "gin.toml", recipes / "express.toml"])
    gin, gin_file = book.find("gin-gonic/gin", "1.9")
    express, express_file = book.find("expressjs/express", "4.18")
    assert (gin.language, express.language) == ("go", "javascript")
    for recipe, path in ((gin, gin_file), (express, express_file)):
        dockerfile = recipe.dockerfile_path(path)
        assert dockerfile is not None and dockerfile.read_text().count("FROM ${BASE}") == 1


def test_bundled_real_row_recipes_name_their_languages_and_parsers():
    # the recipes of the real rows of docs/real-benchmarks.md (issue 40): TypeScript named TypeScript,
    # and test-unit, which writes no JUnit, read by its log parser
    recipes = Path(__file__).resolve().parents[1] / "examples" / "recipes"
    book = load_recipes([recipes / "immutable-js.toml", recipes / "vue-core.toml", recipes / "test-unit.toml",
                         recipes / "jq.toml", recipes / "redis.toml", recipes / "micropython.toml"])
    found = {repo: book.find(repo, "")[0] for repo in ("immutable-js/immutable-js", "vuejs/core", "test-unit/test-unit",
                                                       "jqlang/jq", "redis/redis", "micropython/micropython")}
    assert {repo: (r.language, r.parser) for repo, r in found.items()} == {
        "immutable-js/immutable-js": ("javascript", None), "vuejs/core": ("typescript", None),
        "test-unit/test-unit": ("ruby", "ruby_unit"), "jqlang/jq": ("c", "jq"), "redis/redis": ("c", "redis"),
        "micropython/micropython": ("c", "micropython")}
    assert all("$TESTPRISM_JUNIT" in r.test_command for r in found.values() if r.parser is None)


def test_bundled_jackson_recipe_loads_without_its_fetched_seed():
    # examples/recipes/jackson.toml (java40b): its context folder is committed without the Maven seed
    # (bench/realrows/maven_seed.py writes it from fetched repositories), and both repositories it
    # covers are named as SWE-bench-java's rows spell them, which the book matches exactly
    recipes = Path(__file__).resolve().parents[1] / "examples" / "recipes"
    book = load_recipes([recipes / "jackson.toml"])
    for repo in ("fasterxml/jackson-databind", "fasterxml/jackson-dataformat-xml"):
        recipe, path = book.find(repo, "")
        assert recipe.language == "java" and "{tests}" in recipe.test_command and recipe.build is not None
        assert recipe.context_path(path) == recipes / "jackson-env"
    with pytest.raises(NoRecipe):
        book.find("FasterXML/jackson-core", "")


def test_a_recipes_parser_becomes_the_instances_checks_parser(tmp_path):
    lx = build_multilingual_fixture(tmp_path / "fixture", "javascript")
    assert load_benchmark(_imported(lx, tmp_path / "junit")).instances[lx.row["instance_id"]].spec.checks.parser is None
    lx.recipes.write_text(lx.recipes.read_text().replace("test_command =", 'parser = "mocha"\ntest_command =', 1))
    spec = load_benchmark(_imported(lx, tmp_path / "parsed")).instances[lx.row["instance_id"]].spec
    assert spec.checks.parser == "mocha"


def _imported(lx: LanguageFixture, out: Path) -> Path:
    assert import_language(lx, out).imported == [lx.row["instance_id"]]
    return out


@pytest.mark.slow
@pytest.mark.requires("sandbox", "toolchains")
@pytest.mark.parametrize("language", ["go", "javascript"])
def test_imported_multilingual_checks_fail_on_buggy_and_pass_on_reference(tmp_path, work, language):
    # --verify: the checks run on buggy and reference under the local backend (the toolchains,
    # the build step, the {tests} pattern, JUnit matched to the row's ids as given)
    lx = build_multilingual_fixture(tmp_path / "fixture", language)
    broken = lx.row | {"instance_id": lx.row["instance_id"].replace("-7", "-2"),
                       "PASS_TO_PASS": json.dumps([*json.loads(lx.row["PASS_TO_PASS"]), "TestNoSuchTest"])}
    rows = write_rows(tmp_path / "rows.jsonl", [lx.row, broken])
    report = import_rows(rows, tmp_path / "bench", load_recipes([lx.recipes]),
                         ProgramSources.from_options(lx.repos, None), verifier=Verifier(LocalBackend(work), work))
    assert report.imported == [lx.row["instance_id"]]
    [issue] = report.issues
    assert issue.field == "FAIL_TO_PASS/PASS_TO_PASS" and "TestNoSuchTest" in issue.message
