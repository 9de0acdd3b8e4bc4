"""The release gate (`testprism check`, docs/gate.md): per row, the checks fail on buggy and
pass on the reference, the empty patch resolves nothing; a checksum manifest of the folder;
a failed row kept out of panels, replays and the leaderboard unless asked."""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from testprism.storage import Store
from testprism.tasks.collect.label import GOLD_POLICY, gold_plan
from testprism.tasks.execution.batch import ExecutionOptions
from testprism.tasks.gate import store as gate_store
from testprism.tasks.gate.manifest import changes, manifest, manifest_hash
from testprism.tasks.gate.verdict import GateVerdict, RowVerdict, empty_plan, gate_verdict, load_rows
from testprism.tasks.model.benchmark import load_benchmark
from testprism.tasks.model.bundled import BUNDLED
from testprism.tasks.execution.run_settings import RunSettings
from tests.benchfixture import BUGGY, CHECKS, REFERENCE, diff, make_benchmark, write

INSTANCE = "mini__median-even"


def twin(root: Path, name: str, **files: str) -> Path:
    """A copy of the fixture's instance under another id, with `files` (path → text) replaced."""
    folder = root / "instances" / name
    shutil.copytree(root / "instances" / INSTANCE, folder)
    toml = folder / "instance.toml"
    toml.write_text(toml.read_text().replace(f'id = "{INSTANCE}"', f'id = "{name}"'))
    for rel, text in files.items():
        write(folder / rel, text)
    return folder


def gated_fixture(root: Path) -> Path:
    """The fixture's instance (ok) and one twin per way a row fails the gate."""
    make_benchmark(root, {})
    # the reference edits a docstring only: the bug stays, the fail-to-pass check fails on it
    twin(root, "mini__median-wrong-fix",
         **{"reference.diff": diff("stats.py", BUGGY, BUGGY.replace("non-empty", "non-empty, sorted"))})
    # the program is fixed already: every check passes on it, so the empty patch resolves the row
    fixed = twin(root, "mini__median-fixed-already", **{
        "program/stats.py": REFERENCE,
        "reference.diff": diff("stats.py", REFERENCE, REFERENCE.replace("non-empty", "non-empty, sorted"))})
    for cand in (fixed / "candidates").iterdir():  # not read by the gate; kept loadable
        cand.write_text(diff("stats.py", REFERENCE, REFERENCE + "\n"))
    # an interpreter no machine has: the environment cannot be built
    no_env = twin(root, "mini__median-no-env")
    with open(no_env / "instance.toml", "a") as toml:
        toml.write('\n[environment]\npython = "3.99"\n')
    # a pass-to-pass check that fails before the fix: gold validation (reference only) accepts it, the gate not
    p2p = twin(root, "mini__median-p2p-fails-before", **{"checks.diff": diff(
        "tests/test_official.py", "", CHECKS + "\n\ndef test_even_again():\n    assert median([1, 2]) == 1.5\n")})
    toml = p2p / "instance.toml"
    toml.write_text(toml.read_text().replace('"tests/test_official.py::test_input_untouched"]',
                                             '"tests/test_official.py::test_input_untouched", '
                                             '"tests/test_official.py::test_even_again"]'))
    # a row that does not load: its verdict names the file and the field
    broken = twin(root, "mini__median-broken")
    toml = broken / "instance.toml"
    toml.write_text(toml.read_text().replace("fail_to_pass = [", "fail_to_pass = 7 #"))
    return root


# -- without a sandbox ----------------------------------------------------------------------------


def test_manifest_names_each_changed_added_and_removed_file(tmp_path):
    root = make_benchmark(tmp_path / "bench", {})
    before = manifest(root)
    assert f"instances/{INSTANCE}/program/stats.py" in before and len(before) == len(list(root.rglob("*.*")))
    assert changes(before, manifest(root)) == changes({}, {}) and not changes(before, manifest(root))
    program = root / "instances" / INSTANCE / "program"
    (program / "stats.py").write_text(REFERENCE)
    (program / "extra.py").write_text("x = 1\n")
    (root / "instances" / INSTANCE / "instruction.md").unlink()
    found = changes(before, manifest(root))
    assert found.changed == (f"instances/{INSTANCE}/program/stats.py",)
    assert found.added == (f"instances/{INSTANCE}/program/extra.py",)
    assert found.removed == (f"instances/{INSTANCE}/instruction.md",)
    assert "1 changed (instances/mini__median-even/program/stats.py)" in found.summary()
    assert manifest_hash(before) != manifest_hash(manifest(root))


def test_manifest_hashes_a_link_by_its_target_and_never_opens_a_fifo(tmp_path):
    root = make_benchmark(tmp_path / "bench", {})
    outside = tmp_path / "secret.txt"
    outside.write_text("one")
    (root / "link").symlink_to(outside)
    before = manifest(root)
    outside.write_text("two")  # what the link points at is not the benchmark's
    assert manifest(root) == before and before["link"].startswith("link:")
    (root / "link").unlink()
    (root / "link").symlink_to(tmp_path / "other.txt")
    assert changes(before, manifest(root)).changed == ("link",)
    os.mkfifo(root / "fifo")  # listed by kind, never opened (an open would block the gate)
    assert manifest(root)["fifo"].startswith("special:")


def test_the_empty_patch_runs_are_the_buggy_runs_by_key(tmp_path, work_root):
    """The gate's decision (tasks/gate/verdict.py): the empty patch's state is the buggy one
    by content, so its verifications are keyed as gold validation's buggy runs and never run
    again. Control: a patch that changes anything is another state, other keys."""
    instance = load_benchmark(make_benchmark(tmp_path / "bench", {})).instances[INSTANCE]
    options = ExecutionOptions(backend="local", work_root=work_root, store_root=tmp_path / "s", policy=GOLD_POLICY)
    buggy = {s.key for s in gold_plan(instance, options) if s.state.kind == "buggy"}
    assert {s.key for s in empty_plan(instance, options)} == buggy and len(buggy) == 2
    other = replace(instance, candidates=())
    from testprism.tasks.collect.verification import candidate_states, plan
    changed = candidate_states(other, {"x": diff("stats.py", BUGGY, BUGGY + "\n")})["x"]
    assert not {s.key for s in plan(instance, [changed], options, 2)} & buggy


def test_a_row_that_does_not_load_gets_its_verdict_and_the_others_load(tmp_path):
    root = gated_fixture(tmp_path / "bench")
    rows = load_rows(root)
    assert INSTANCE in rows.instances and "mini__median-broken" not in rows.instances
    (bad,) = rows.unloadable
    assert (bad.instance_id, bad.verdict, bad.source) == ("mini__median-broken", GateVerdict.LOAD_FAILED, "mini")
    assert "instance.toml" in bad.detail and "checks.fail_to_pass" in bad.detail


def test_rows_an_import_refused_are_rows_of_the_gate_with_their_reason(tmp_path):
    """An imported file's refused rows leave no instance folder; refused.json keeps them, and
    the gate gives each the verdict `refused` with its row, field and reason, so the table
    over the file shows every row of it. A row imported later drops its refusal; refusals of
    another file stay. Control: the rows that imported are instances, not refusals."""
    import json

    from testprism.tasks.importing.image_route import ImageRoute, import_image_rows
    from testprism.tasks.importing.image_specs import ImageSpecs

    def swebench_row(repo: str, version: str, instance_id: str, test_file: str) -> dict:
        change = f"--- a/{test_file}\n+++ b/{test_file}\n@@ -1 +1,2 @@\n x = 1\n+y = 2\n"
        return {"repo": repo, "instance_id": instance_id, "base_commit": "a" * 40, "patch": change,
                "test_patch": change, "problem_statement": "it breaks", "version": version,
                "FAIL_TO_PASS": '["test_it (x.tests.T)"]', "PASS_TO_PASS": "[]"}

    def write_rows(path: Path, items: list) -> Path:
        path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in items))
        return path

    bench = tmp_path / "bench"
    rows = write_rows(tmp_path / "rows.jsonl", [
        swebench_row("django/django", "3.0", "django__django-1", "tests/admin_views/tests.py"),
        {**swebench_row("acme/unknown", "1.0", "acme__unknown-1", "tests/test_x.py"), "language": "Python"},
        swebench_row("briannesbitt/carbon", "2813", "briannesbitt__carbon-2813", "tests/Factory/FactoryTest.php"),
        "{not json",
    ])
    report = import_image_rows(rows, bench, ImageRoute(ImageSpecs.load()), source="multilingual")
    assert report.imported == ["django__django-1"]
    loaded = load_rows(bench)
    assert list(loaded.instances) == ["django__django-1"] and not loaded.unloadable
    refused = {v.instance_id: v for v in loaded.refused}
    assert sorted(refused) == ["acme__unknown-1", "briannesbitt__carbon-2813", "rows.jsonl:4"]
    assert all(v.verdict is GateVerdict.REFUSED and v.source == "multilingual" for v in refused.values())
    assert refused["acme__unknown-1"].language == "python"  # as the row declares it
    assert refused["acme__unknown-1"].detail.startswith("rows.jsonl:2: field repo: acme/unknown is not in the ")
    assert "fetches over the network at check time" in refused["briannesbitt__carbon-2813"].detail
    assert refused["rows.jsonl:4"].detail.startswith("rows.jsonl:4: field (row): not JSON")
    frame = pl.DataFrame([{"source": v.source, "language": v.language, "verdict": v.verdict.value}
                          for v in [*loaded.refused]] + [{"source": "multilingual", "language": "python",
                                                          "verdict": "ok"}])
    assert gate_store.gate_table(frame).filter(pl.col("language") == "python").row(0, named=True) == {
        "source": "multilingual", "language": "python", "rows": 2, "ok": 1, "refused": 1}
    # the repository given later (--specs): its row imports and its refusal goes; the others stay
    specs = tmp_path / "specs.toml"
    specs.write_text('[swebench.repos."acme/unknown"]\nlanguage = "python"\nlog_parser = "parse_log_pytest"\n'
                     'test_command = "pytest -rA"\n', encoding="utf-8")
    again = write_rows(tmp_path / "again.jsonl", [swebench_row("acme/unknown", "1.0", "acme__unknown-1",
                                                               "tests/test_x.py")])
    import_image_rows(again, bench, ImageRoute(ImageSpecs.load(specs)))
    assert sorted(v.instance_id for v in load_rows(bench).refused) == ["briannesbitt__carbon-2813", "rows.jsonl:4"]


def run_row(state: str, repeat: int, passed: set[str], reason: str | None = None) -> dict:
    """A stored verification row, by hand: the fixture's three checks, `passed` passing."""
    names = ("tests/test_official.py::test_even_length", "tests/test_official.py::test_odd_length",
             "tests/test_official.py::test_input_untouched")
    return {"state": state, "repeat": repeat, "reason": reason, "stdout_tail": "log tail",
            "tests": [] if reason else [{"name": n.replace(".py", "").replace("/", "."),  # as JUnit names them
                                         "outcome": "passed" if n in passed else "failed", "message": ""}
                                        for n in names]}


EVEN, ODD, UNTOUCHED = "tests/test_official.py::test_even_length", "tests/test_official.py::test_odd_length", \
    "tests/test_official.py::test_input_untouched"
EVERY = {EVEN, ODD, UNTOUCHED}


@pytest.mark.parametrize(("buggy", "reference", "expected", "detail"), [
    ([{ODD, UNTOUCHED}] * 2, [EVERY] * 2, GateVerdict.OK, ""),
    ([EVERY] * 2, [EVERY] * 2, GateVerdict.EMPTY_RESOLVES, "every check passes on the buggy program"),
    # the fail-to-pass check passes before, but a pass-to-pass one fails: not resolved by the empty patch
    ([{EVEN, ODD}] * 2, [EVERY] * 2, GateVerdict.F2P_PASSES_BEFORE, EVEN),
    ([{ODD}] * 2, [EVERY] * 2, GateVerdict.P2P_FAILS_BEFORE, UNTOUCHED),
    ([{ODD, UNTOUCHED}] * 2, [{ODD, UNTOUCHED}] * 2, GateVerdict.GOLD_FAILS, f"{EVEN} failed"),
    ([{ODD, UNTOUCHED}] * 2, [EVERY, {ODD, UNTOUCHED}], GateVerdict.UNSTABLE, f"on reference: {EVEN}"),
    ([{ODD, UNTOUCHED}] * 2, ["report_unreadable", EVERY], GateVerdict.PARSE_FAILED, "on reference: log tail"),
    (["environment_failed"] * 2, ["environment_failed"] * 2, GateVerdict.ENV_BUILD_FAILED, "on buggy: log tail"),
    ([{ODD, UNTOUCHED}] * 2, ["checks_patch_failed"] * 2, GateVerdict.CHECKS_PATCH_FAILED, "on reference: log tail"),
    (["timeout"] * 2, [EVERY] * 2, GateVerdict.UNRESOLVED, "timeout on buggy (repeat 0)"),
])
def test_each_way_a_row_fails_is_named(tmp_path, buggy, reference, expected, detail):
    instance = load_benchmark(make_benchmark(tmp_path / "bench", {})).instances[INSTANCE]
    rows = [run_row(state, n, set() if isinstance(got, str) else got, got if isinstance(got, str) else None)
            for state, runs in (("buggy", buggy), ("reference", reference)) for n, got in enumerate(runs)]
    verdict = gate_verdict(instance, rows, [r for r in rows if r["state"] == "buggy"])
    assert (verdict.verdict, verdict.detail) == (expected, detail)


def gate_rows(store: Store, root: Path, verdicts: dict[str, GateVerdict], when: datetime) -> None:
    rows = [RowVerdict(iid, "src-a" if iid == "i1" else "src-b", "python", v, "" if v is GateVerdict.OK else "x::t failed")
            for iid, v in verdicts.items()]
    gate_store.record(store, f"run-{when:%Y%m%d}", root, rows, {"f": "0"}, "m", when, "local")


def test_the_newest_gate_verdict_decides_what_replay_keeps(tmp_path):
    root = make_benchmark(tmp_path / "bench", {"c": {"test_x.py": "def test_x():\n    pass\n"}})
    twin(root, "mini__median-twin")
    bench = load_benchmark(root)
    store = Store(tmp_path / "store")
    assert gate_store.gated_benchmark(store, bench, False, "replay") is bench  # no gate rows: nothing gated
    gate_rows(store, root, {INSTANCE: GateVerdict.OK, "mini__median-twin": GateVerdict.GOLD_FAILS},
              datetime(2026, 1, 1, tzinfo=UTC))
    kept = gate_store.gated_benchmark(store, bench, False, "replay")
    assert list(kept.instances) == [INSTANCE] and set(kept.suites) == {("c", INSTANCE)}
    assert gate_store.gated_benchmark(store, bench, True, "replay") is bench  # asked: every row
    # a newer gate run that passes the row lets it back in
    gate_rows(store, root, {"mini__median-twin": GateVerdict.OK}, datetime(2026, 2, 1, tzinfo=UTC))
    assert gate_store.gated_benchmark(store, bench, False, "replay") is bench


def test_the_leaderboard_and_the_report_respect_the_gate(tmp_path):
    from testprism.tasks.report.data import load_report_data
    from testprism.tasks.report.html import render_report
    from tests.test_report import cells, hand_made_store, score, section_of

    store = hand_made_store(tmp_path / "store")
    assert 'id="gate"' not in render_report(load_report_data(store.paths.root))  # no gate rows: no section
    assert set(store.read_table("instance_scores")["instance_id"]) == {"i1", "i2"}
    gate_rows(store, tmp_path / "bench", {"i1": GateVerdict.OK, "i2": GateVerdict.GOLD_FAILS},
              datetime(2026, 1, 1, tzinfo=UTC))
    score(store)
    assert set(store.read_table("instance_scores")["instance_id"]) == {"i1"}
    assert store.read_table("leaderboard")["n_instances"].to_list() == [1, 1, 1]
    from testprism.tasks.score.scores import score_tables, write_scores

    write_scores(store, score_tables(store, 200, seed=42, include_failed_gate=True))  # asked: both rows
    assert set(store.read_table("instance_scores")["instance_id"]) == {"i1", "i2"}
    section = section_of(render_report(load_report_data(store.paths.root)), "gate")
    assert cells(section, "gate") == [["src-a", "python", "1", "1", "0"], ["src-b", "python", "1", "0", "1"]]
    assert "<th>gold_fails</th>" in section
    assert cells(section, "gate-failed")[0][:3] == ["i2", "gold_fails", "x::t failed"]


# -- in the sandbox -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gated(tmp_path_factory, work_root):
    """One gate run over the fixture (and a second, after a file changed), shared by the tests."""
    from testprism.flows.check import check_flow

    root = gated_fixture(tmp_path_factory.mktemp("gate") / "bench")
    store = root.parent / "store"
    first = check_flow(benchmark=str(root), store=str(store), run=RunSettings(work=str(work_root)))
    return root, store, first


@pytest.mark.slow
@pytest.mark.requires("sandbox")
def test_each_row_gets_its_verdict(gated):
    root, store, summary = gated
    verdicts = {v.instance_id: (v.verdict, v.detail) for v in summary.verdicts}
    assert {iid: v for iid, (v, _) in verdicts.items()} == {
        INSTANCE: GateVerdict.OK,
        "mini__median-wrong-fix": GateVerdict.GOLD_FAILS,
        "mini__median-fixed-already": GateVerdict.EMPTY_RESOLVES,
        "mini__median-no-env": GateVerdict.ENV_BUILD_FAILED,
        "mini__median-p2p-fails-before": GateVerdict.P2P_FAILS_BEFORE,
        "mini__median-broken": GateVerdict.LOAD_FAILED,
    }
    assert verdicts["mini__median-wrong-fix"][1] == "tests/test_official.py::test_even_length failed"
    assert verdicts["mini__median-p2p-fails-before"][1] == "tests/test_official.py::test_even_again"
    assert summary.changes is None and summary.previous is None  # the folder's first gate
    # the table per source and language
    assert summary.table.to_dicts() == [{
        "source": "mini", "language": "python", "rows": 6, "ok": 1, "load_failed": 1, "env_build_failed": 1,
        "gold_fails": 1, "empty_resolves": 1, "pass_to_pass_fails_before": 1}]
    # stored beside the benchmark: the verdicts and the manifest of every file
    stored = Store(store)
    rows = stored.scan("gate").collect()
    assert rows.height == 6 and set(rows["benchmark"]) == {str(root.resolve())}
    files = stored.scan("gate_files").collect()
    assert dict(zip(files["path"], files["sha256"], strict=True)) == manifest(root)
    assert set(rows["manifest"]) == {manifest_hash(manifest(root))}


@pytest.mark.slow
@pytest.mark.requires("sandbox")
def test_a_second_gate_runs_nothing_again_and_names_what_changed(gated):
    """Through the CLI: the table, the failing rows, what changed since the first gate; exit 1."""
    from typer.testing import CliRunner

    from testprism.flows.cli import app

    root, store, first = gated
    program = root / "instances" / "mini__median-wrong-fix" / "instruction.md"
    program.write_text(program.read_text() + "edited\n")
    result = CliRunner().invoke(app, ["check", str(root), "--store", str(store)], terminal_width=200)
    printed = " ".join(line.strip(" │") for line in result.output.splitlines())
    assert result.exit_code == 1, result.output
    assert f"changed since gate {first.gate_run}: 1 changed (instances/mini__median-wrong-fix/instruction.md)" in printed
    assert "0 check runs executed" in printed and "1 of 6 rows ok" in printed
    assert "rows that fail the gate" in printed and "tests/test_official.py::test_even_length failed" in printed
    assert "empty_resolves" in printed and "pass_to_pass_fails_before" in printed
    second = gate_store.newest_run(Store(store), root)
    assert second is not None and second[0] != first.gate_run and second[1] == manifest(root)
    newest = gate_store.newest_verdicts(Store(store))
    assert set(newest["gate_run"]) == {second[0]}
    assert dict(zip(newest["instance_id"], newest["verdict"], strict=True)) == {
        v.instance_id: v.verdict.value for v in first.verdicts}


@pytest.mark.slow
@pytest.mark.requires("sandbox")
def test_panels_leave_out_a_row_that_failed_the_gate_unless_asked(gated, tmp_path, work_root):
    """The p2p row passes gold validation (the reference passes every check): only the gate
    keeps it out. Control: --include-failed-gate gives it its panel."""
    from testprism.flows.collect import collect_flow
    from testprism.tasks.collect.panel import PanelMode
    from testprism.tasks.collect.settings import CollectSettings

    root, store, _ = gated
    shutil.rmtree(root / "instances" / "mini__median-broken")  # collect loads the benchmark whole
    p2p = "mini__median-p2p-fails-before"
    args = dict(benchmark=str(root), store=str(store), run=RunSettings(work=work_root))
    kept = collect_flow(**args, settings=CollectSettings(panel=PanelMode.POOL), out=str(tmp_path / "panels"))
    assert list(load_benchmark(tmp_path / "panels").instances) == [INSTANCE] and kept.panels == 1
    funnel = Store(store).scan("funnel").sort("recorded_at").collect()
    gold = funnel.filter(pl.col("stage") == "gold_validation").row(-1, named=True)
    assert {e["item"]: e["reason"] for e in gold["exclusions"]}[p2p] == "failed_gate"
    asked = collect_flow(**args, settings=CollectSettings(panel=PanelMode.POOL, include_failed_gate=True),
                         out=str(tmp_path / "asked"))
    assert sorted(load_benchmark(tmp_path / "asked").instances) == [INSTANCE, p2p] and asked.panels == 2


@pytest.mark.slow
@pytest.mark.requires("sandbox")
def test_every_python_row_of_the_bundled_benchmark_passes_the_gate(tmp_path, work_root):
    """The bundled Python rows (one environment: CI-sized); every row of every language is
    `test_every_bundled_row_passes_the_gate` (polyglot)."""
    from testprism.flows.check import check_flow

    root = tmp_path / "bundled"
    python = [i for i in load_rows(BUNDLED).instances.values() if i.spec.language == "python"]
    for instance in python:
        shutil.copytree(instance.folder, root / "instances" / instance.id, symlinks=True)
    summary = check_flow(benchmark=str(root), store=str(tmp_path / "store"), run=RunSettings(work=str(work_root)))
    assert len(summary.verdicts) >= 10
    assert {v.instance_id: v.verdict.value for v in summary.failed} == {}


@pytest.mark.slow
@pytest.mark.polyglot
@pytest.mark.requires("sandbox")
@pytest.mark.timeout(1200)
def test_every_bundled_row_passes_the_gate(tmp_path, work_root):
    from testprism.flows.check import check_flow

    summary = check_flow(benchmark=str(BUNDLED), store=str(tmp_path / "store"), run=RunSettings(work=str(work_root)), trusted=True)
    assert len(summary.verdicts) == len(list((BUNDLED / "instances").iterdir()))
    assert {v.instance_id: v.verdict.value for v in summary.failed} == {}
