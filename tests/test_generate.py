"""`testprism generate`: agent commands in the sandbox leave suites that replay and score
unchanged; what a run is shown; budgets that hold (wall clock, the channel's steps, the
agent's own report); a rerun that redoes nothing."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from testprism.flows.cli import app
from testprism.storage import Store
from testprism.tasks.generate.settings import GenerateSettings
from testprism.tasks.generate.strategy import Caps, Strategy
from testprism.tasks.model.bundled import BUNDLED
from testprism.tasks.model.benchmark import load_benchmark
from testprism.tasks.model.outcome import GENERATION_REASONS
from testprism.tasks.execution.run_settings import RunSettings
from tests.synthbench import make_synthetic

pytestmark = [pytest.mark.slow, pytest.mark.requires("sandbox")]

GENERATORS = BUNDLED / "generators"
SOME = ["algokit__bisect-past-end", "calkit__merge-touching", "textkit__snake-case-acronyms"]


def cli(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def generated(store: Path) -> pl.DataFrame:
    return Store(store).scan("generations").collect()


def test_scripted_generators_give_a_biased_and_a_weak_suite_that_replay_and_score(tmp_path, work_root):
    """generate → replay → score on bundled instances: the suite derived from the reference
    reproduces every bug (GRR 1) yet rejects correct fixes written differently; the one
    from the instruction's examples accepts what the examples do not cover."""
    store, out = tmp_path / "store", tmp_path / "generated"
    picked = [a for i in SOME for a in ("--instance", i)]
    for name, mode in (("from-reference", "testprism"), ("from-instruction", "plain")):
        tool = GENERATORS / f"{name.replace('-', '_')}.py"
        cli("generate", str(BUNDLED), "--store", str(store), "--configuration", name, "--mode", mode,
            "--tool", str(tool), "--command", f"python3 tmp/.task/tools/{tool.name}", "--out", str(out),
            "--work", str(work_root), *picked)
    rows = generated(store)
    assert rows.height == 6 and rows["reason"].null_count() == 6
    assert sorted(rows["mode"].unique().to_list()) == ["plain", "testprism"]
    for log in rows["log"]:
        assert gzip.open(store / log).read() is not None
    bench = load_benchmark(out)
    assert sorted(bench.configurations) == ["from-instruction", "from-reference"]
    assert sorted(bench.instances) == sorted(load_benchmark(BUNDLED).instances)  # every instance, a suite for three

    cli("replay", str(out), "--store", str(store), "--work", str(work_root), "--configuration", "from-reference",
        "--configuration", "from-instruction")
    cli("score", str(store))
    scores = Store(store).read_table("instance_scores").filter(pl.col("instance_id").is_in(SOME))
    biased = scores.filter(pl.col("configuration") == "from-reference")
    weak = scores.filter(pl.col("configuration") == "from-instruction")
    # f: fails before and passes after; a: share of valid candidates accepted; r: of invalid rejected
    assert biased["f"].to_list() == [1.0, 1.0, 1.0]  # "perfect" by the fail-before/pass-after measure
    assert biased["a"].mean() < 0.5  # but most correct fixes are rejected: solution bias
    assert weak["a"].mean() > biased["a"].mean() and weak["r"].mean() < biased["r"].mean()  # wrong ones slip through

    again = cli("generate", str(BUNDLED), "--store", str(store), "--configuration", "from-instruction",
                "--tool", str(GENERATORS / "from_instruction.py"), "--command",
                "python3 tmp/.task/tools/from_instruction.py", "--out", str(out), "--work", str(work_root), *picked)
    assert "3 planned, 3 already stored, 0 executed" in " ".join(again.split())
    assert generated(store).height == 6


PROBE = r"""
import json, os, pathlib
seen = {"task": sorted(os.listdir("tmp/.task")), "env": sorted(os.environ),
        "values": sorted(v for v in os.environ.values())}
pathlib.Path("tmp/test_seen.py").write_text("SEEN = " + repr(json.dumps(seen)) + "\n")
"""


def test_a_run_sees_its_task_folder_and_never_the_candidates_or_the_reference_in_plain_mode(tmp_path, work_root):
    bench = make_synthetic(tmp_path / "bench", 1)
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    store, out = tmp_path / "store", tmp_path / "out"
    for mode in ("plain", "testprism"):
        cli("generate", str(bench), "--store", str(store), "--configuration", f"probe-{mode}", "--mode", mode,
            "--tool", str(probe), "--command", "python tmp/.task/tools/probe.py", "--out", str(out),
            "--work", str(work_root))
    seen = {}
    for mode in ("plain", "testprism"):
        text = (out / "suites" / f"probe-{mode}" / "synth__0000" / "test_seen.py").read_text()
        seen[mode] = json.loads(text.removeprefix("SEEN = ").strip().strip("'"))
    assert seen["plain"]["task"] == ["instruction.md", "language.json", "strategy.json", "tools"]
    assert seen["testprism"]["task"] == ["instruction.md", "language.json", "reference.diff", "strategy.json", "tools"]
    for what in seen.values():  # no state, candidate or label named anywhere in its environment
        assert not any(word in value for value in what["values"] for word in ("buggy", "candidate", "valid", "synth"))
    # the suite left is the probe's file plus the default entry; the task folder is not part of it
    assert sorted(p.name for p in (out / "suites" / "probe-plain" / "synth__0000").iterdir()) == [
        "run_tests.sh", "test_seen.py"]


GREEDY = r"""
import json, os, pathlib, urllib.request, urllib.error
url = os.environ["OPENAI_BASE_URL"] + "/chat/completions"
steps = 0
while steps < 1000:  # asks until it is refused
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "[[script:score-90]]"}]}).encode()
    try:
        urllib.request.urlopen(urllib.request.Request(url, body, {"Content-Type": "application/json"}), timeout=30)
    except urllib.error.HTTPError as exc:
        assert exc.code == 429, exc.code
        break
    steps += 1
pathlib.Path("tmp/test_greedy.py").write_text("def test_x():\n    assert True\n")
"""
SLEEPER = "import time\ntime.sleep(60)\n"
BOASTER = ("import json, pathlib\npathlib.Path('tmp/test_b.py').write_text('def test_b():\\n    pass\\n')\n"
           "pathlib.Path('tmp/.task/usage.json').write_text(json.dumps({'steps': 999, 'total_tokens': 10**9}))\n")


def test_budgets_hold_and_overruns_are_recorded_without_their_suite(tmp_path, work_root, endpoint):
    from testprism.flows.generate import generate_flow

    url, script = endpoint
    bench = make_synthetic(tmp_path / "bench", 1)
    store, out = tmp_path / "store", tmp_path / "out"
    cases = {"greedy": (GREEDY, Caps(run_steps=3)), "sleeper": (SLEEPER, Caps(wall_clock_s=3)),
             "boaster": (BOASTER, Caps())}
    for name, (code, caps) in cases.items():
        tool = tmp_path / f"{name}.py"
        tool.write_text(code)
        generate_flow(benchmark=str(bench), store=str(store), configuration=name,
                      command=f"python tmp/.task/tools/{tool.name}", out=str(out), run=RunSettings(work=str(work_root)),
                      settings=GenerateSettings(caps=caps, tools=(tool,), model_url=url if name == "greedy" else None))
    rows = {r["configuration"]: r for r in generated(store).iter_rows(named=True)}
    assert script.total() == 3  # the channel stopped the greedy one at its cap: upstream saw no more
    assert rows["greedy"]["requests"] == 3 and rows["greedy"]["reason"] == "over_budget"  # the 4th was refused
    assert rows["greedy"]["total_tokens"] == 6  # metered from upstream's usage: 2 a reply
    assert rows["sleeper"]["reason"] == "timeout"
    assert rows["boaster"]["reason"] == "over_budget" and rows["boaster"]["reported_steps"] == 999
    assert all(r["suite_hash"] is None and r["reason"] in GENERATION_REASONS for r in rows.values())
    assert not any((out / "suites" / name / "synth__0000").exists() for name in cases)  # no suite kept


def test_the_strategy_reaches_the_run_as_its_json(tmp_path, work_root):
    bench = make_synthetic(tmp_path / "bench", 1)
    strategy = tmp_path / "strategy.json"
    strategy.write_text(json.dumps({"rounds": 5, "agent_steps": 12, "model": "local-7b"}))
    tool = tmp_path / "copy.py"
    tool.write_text("import shutil\nshutil.copy('tmp/.task/strategy.json', 'tmp/strategy_seen.json')\n")
    cli("generate", str(bench), "--store", str(tmp_path / "store"), "--configuration", "s", "--strategy",
        str(strategy), "--tool", str(tool), "--command", "python tmp/.task/tools/copy.py", "--out",
        str(tmp_path / "out"), "--work", str(work_root))
    seen = json.loads((tmp_path / "out" / "suites" / "s" / "synth__0000" / "strategy_seen.json").read_text())
    assert seen == {**Strategy().model_dump(), "rounds": 5, "agent_steps": 12, "model": "local-7b"}
    row = generated(tmp_path / "store").row(0, named=True)
    assert json.loads(row["strategy"])["rounds"] == 5


HEALER = ("import pathlib\npathlib.Path('tmp/run_tests.sh').write_text(\"grep -q '^fixed' impl.txt\\n\")\n"
          "pathlib.Path('impl.txt').write_text('fixed by the agent\\n')\n")


@pytest.mark.requires("docker")
@pytest.mark.parametrize("backend", ["local", "docker"])
def test_a_test_and_a_repair_come_back_from_either_backend(tmp_path, work_root, backend):
    """Heterogeneous synthesis's two outputs, under bubblewrap and in a container alike."""
    bench = make_synthetic(tmp_path / "bench", 1)
    tool = tmp_path / "healer.py"
    tool.write_text(HEALER)
    store = tmp_path / "store"
    cli("generate", str(bench), "--store", str(store), "--configuration", "healer", "--backend", backend,
        "--tool", str(tool), "--command", "python tmp/.task/tools/healer.py", "--out", str(tmp_path / "out"),
        "--work", str(work_root))
    row = generated(store).row(0, named=True)
    assert row["reason"] is None and row["backend"] == backend and row["repair_hash"]
    repair = (store / "generated" / row["generation_key"] / "repair.diff").read_text()
    assert "-bug" in repair and "+fixed by the agent" in repair
    suite = tmp_path / "out" / "suites" / "healer" / "synth__0000" / "run_tests.sh"
    assert suite.read_text() == "grep -q '^fixed' impl.txt\n"


def test_testprism_agent_as_the_command_writes_a_suite_that_replays(tmp_path, work_root, endpoint):
    """The provided agent through generate: `testprism agent` runs in the sandbox (its one
    file placed in the task folder), reaches the loopback model only through the channel,
    and the suite it leaves fails on the buggy program and passes on the reference."""
    from tests.chatserver import AGENT_FIX, AGENT_PROGRAM

    url, script = endpoint
    bench = make_synthetic(tmp_path / "bench", 1, valid=0, invalid=0)
    instance = bench / "instances" / "synth__0000"
    (instance / "program" / "impl.txt").unlink()
    (instance / "program" / "calc.py").write_text(AGENT_PROGRAM)
    (instance / "instruction.md").write_text("`add` in calc.py subtracts. [[script:agent-fail]]\n")
    (instance / "reference.diff").write_text(AGENT_FIX)
    toml = (instance / "instance.toml").read_text().replace("packages = []\n", "")  # the default: with pytest
    (instance / "instance.toml").write_text(toml)
    store, out = tmp_path / "store", tmp_path / "out"
    cli("generate", str(bench), "--store", str(store), "--configuration", "agent", "--command", "testprism agent",
        "--model-url", url, "--out", str(out), "--work", str(work_root), "--instance", "synth__0000")
    row = generated(store).row(0, named=True)
    assert row["reason"] is None and row["requests"] == 1 == row["reported_steps"] and script.total() == 1
    suite = out / "suites" / "agent" / "synth__0000"
    assert sorted(p.name for p in suite.iterdir()) == ["run_tests.sh", "test_generated.py"]
    cli("replay", str(out), "--store", str(store), "--work", str(work_root), "--configuration", "agent")
    runs = {r["state"]: r["outcome"] for r in Store(store).scan("runs").collect().iter_rows(named=True)}
    assert runs == {"buggy": "F", "reference": "P"}


@pytest.mark.requires("toolchains")
@pytest.mark.parametrize("picked", [
    # Go's eleven state builds (go vet, the test packages) took most of this test's 163 s in
    # CI: its Go half runs with the polyglot replays (make test-polyglot), JavaScript's in CI
    pytest.param("gokit__csv-doubled-quotes", id="go", marks=[pytest.mark.polyglot, pytest.mark.timeout(900)]),
    pytest.param("urlkit__query-repeated-keys", id="javascript"),
])
def test_scripted_generators_write_suites_that_run_without_pytest_on_go_and_javascript(picked, tmp_path, work_root):
    """Their suite is a stdlib-only python3 script: in a Go or JavaScript environment (no
    virtualenv, no pytest; the system's python3) from-reference still reads the changed files
    (fails on buggy, passes on the reference, rejects the valid candidates written otherwise)
    and from-instruction, with no python example to replay, passes everywhere."""
    store, out = tmp_path / "store", tmp_path / "generated"
    picked = [picked]
    for name, mode in (("from-reference", "testprism"), ("from-instruction", "plain")):
        tool = GENERATORS / f"{name.replace('-', '_')}.py"
        cli("generate", str(BUNDLED), "--store", str(store), "--configuration", name, "--mode", mode,
            "--tool", str(tool), "--command", f"python3 tmp/.task/tools/{tool.name}", "--out", str(out),
            "--work", str(work_root), *(a for i in picked for a in ("--instance", i)))
    assert generated(store)["reason"].null_count() == 2 * len(picked)
    for instance in picked:
        assert sorted(p.name for p in (out / "suites" / "from-reference" / instance).iterdir()) == [
            "check_generated.py", "run_tests.sh"]
    cli("replay", str(out), "--store", str(store), "--work", str(work_root))  # loads: environments/ linked too
    runs = Store(store).scan("runs").collect().filter(pl.col("instance_id").is_in(picked))  # the others: no suite
    assert runs.height == 2 * len(picked) * 11 and runs["tests"].list.len().min() == 1  # each wrote its JUnit report
    for rec in runs.iter_rows(named=True):
        if rec["configuration"] == "from-instruction" or rec["state"] == "reference":
            assert rec["outcome"] == "P", rec
        elif rec["state"] == "buggy" or rec["label"] == "valid":
            assert rec["outcome"] == "F", rec


@pytest.mark.requires("toolchains")
def test_testprism_agent_writes_go_and_javascript_tests_from_the_instances_convention(tmp_path, work_root, endpoint):
    """The provided agent on the bundled Go and JavaScript instances (TestPrism mode, `local`):
    it takes the test file, its run and what an assertion is from language.json, so a Go
    test that does not compile and a JavaScript test that passes on the buggy program are
    each revised once into one that fails there by an assertion and passes with the
    reference (else it would have asked a third time), and the suite left runs as its kind does."""
    from tests.chatserver import GO_FAILING_TEST, JS_FAILING_TEST

    url, script = endpoint
    bench = tmp_path / "bench"
    shutil.copytree(BUNDLED / "environments", bench / "environments")
    markers = {"gokit__csv-doubled-quotes": "agent-go", "urlkit__query-repeated-keys": "agent-js"}
    for instance, marker in markers.items():
        shutil.copytree(BUNDLED / "instances" / instance, bench / "instances" / instance)
        with (bench / "instances" / instance / "instruction.md").open("a") as issue:
            issue.write(f"\n[[script:{marker}]]\n")
    store, out = tmp_path / "store", tmp_path / "out"
    cli("generate", str(bench), "--store", str(store), "--configuration", "agent", "--command", "testprism agent",
        "--mode", "testprism", "--model-url", url, "--out", str(out), "--work", str(work_root),
        *(a for i in markers for a in ("--instance", i)))
    rows = {r["instance_id"]: r for r in generated(store).iter_rows(named=True)}
    assert {i: (r["reason"], r["requests"], r["reported_steps"]) for i, r in rows.items()} == {
        i: (None, 2, 2) for i in markers}
    go_prompts = [p for p in script.prompts if "[[script:agent-go]]" in p]
    js_prompts = [p for p in script.prompts if "[[script:agent-js]]" in p]
    assert "```go block" in go_prompts[0] and "go test ./tmp/" in go_prompts[0] and "pytest" not in go_prompts[0]
    assert "did not fail by an assertion" in go_prompts[1] and "SplitLine" in go_prompts[1]  # the compiler's word
    assert "node --test tmp/generated.test.js" in js_prompts[0] and "PASSED on the current" in js_prompts[1]
    go_suite = out / "suites" / "agent" / "gokit__csv-doubled-quotes"
    js_suite = out / "suites" / "agent" / "urlkit__query-repeated-keys"
    assert (go_suite / "generated_test.go").read_text() == GO_FAILING_TEST
    assert (js_suite / "generated.test.js").read_text() == JS_FAILING_TEST
    assert "gotestsum --junitfile" in (go_suite / "run_tests.sh").read_text()
    assert sorted(p.name for p in js_suite.iterdir()) == ["generated.test.js", "run_tests.sh"]


@pytest.mark.slow
@pytest.mark.polyglot
@pytest.mark.requires("sandbox", "toolchains")
def test_testprism_agent_writes_typescript_rust_and_java_tests(tmp_path, work_root, endpoint):
    """The provided agent on the bundled TypeScript, Rust and Java instances (`local`): each
    record's convention (Vitest, an integration test through cargo, JUnit 5 through Maven) runs
    the one test it writes; that test fails on buggy by an assertion and passes on the
    reference in the first answer, and the suite left replays so."""
    url, script = endpoint
    bench = tmp_path / "bench"
    shutil.copytree(BUNDLED / "environments", bench / "environments")
    markers = {"tskit__duration-ms-unit": "agent-ts", "fmtkit__truncate-multibyte": "agent-rust",
               "sizekit__format-shows-1024-kib": "agent-java"}
    for instance, marker in markers.items():
        shutil.copytree(BUNDLED / "instances" / instance, bench / "instances" / instance)
        with (bench / "instances" / instance / "instruction.md").open("a") as issue:
            issue.write(f"\n[[script:{marker}]]\n")
    store, out = tmp_path / "store", tmp_path / "out"
    cli("generate", str(bench), "--store", str(store), "--configuration", "agent", "--command", "testprism agent",
        "--mode", "testprism", "--model-url", url, "--out", str(out), "--work", str(work_root),
        *(a for i in markers for a in ("--instance", i)))
    rows = {r["instance_id"]: (r["reason"], r["requests"]) for r in generated(store).iter_rows(named=True)}
    assert rows == {i: (None, 1) for i in markers}
    for instance, name in (("tskit__duration-ms-unit", "generated.test.ts"), ("fmtkit__truncate-multibyte", "generated.rs"),
                           ("sizekit__format-shows-1024-kib", "GeneratedTest.java")):
        assert sorted(p.name for p in (out / "suites" / "agent" / instance).iterdir()) == [name, "run_tests.sh"]
    cli("replay", str(out), "--store", str(store), "--work", str(work_root), "--configuration", "agent")
    runs = Store(store).scan("runs").collect()
    for instance in markers:
        outcomes = {r["state"]: r["outcome"] for r in runs.filter(pl.col("instance_id") == instance).iter_rows(named=True)
                    if r["state"] in ("buggy", "reference")}
        assert outcomes == {"buggy": "F", "reference": "P"}, (instance, outcomes)
