"""`testprism select`: demonstrations chosen by a replayed metric, with their trajectories.

The store is real: the two scripted generators (examples/generators/) write suites for a few
bundled instances, the generated benchmark is replayed and scored, and the selection is
checked against the store's own instance scores. from_reference's suites reject the buggy
program and accept the reference (high GRR) but reject correct fixes written differently
(CAR < 1): the case SWEPatchTest warns GRR selection about.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from testprism.flows.cli import app
from testprism.storage import Store
from testprism.tasks.generate.selection import INDICATORS, select_demonstrations
from testprism.tasks.model.bundled import BUNDLED
from tests.synthbench import make_synthetic

GENERATORS = BUNDLED / "generators"
INSTANCES = ["algokit__bisect-past-end", "calkit__merge-touching", "textkit__wrap-exact-width"]
GENERATED = ("from-reference", "from-instruction")
#: a hand-written suite replayed beside the generated ones: scored, but without a trajectory
HANDWRITTEN = ("handwritten", "calkit__merge-touching")


@dataclass(frozen=True)
class Scored:
    store: Path
    out: Path  #: the benchmark of generated suites


def invoke(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory, work_root: Path) -> Scored:
    root = tmp_path_factory.mktemp("select")
    store, out = root / "store", root / "out"
    chosen = [arg for name in INSTANCES for arg in ("--instance", name)]
    for configuration, generator, mode in (("from-reference", "from_reference.py", "testprism"),
                                           ("from-instruction", "from_instruction.py", "plain")):
        invoke("generate", str(BUNDLED), "--store", str(store), "--configuration", configuration,
               "--command", f"python3 tmp/.task/tools/{generator}", "--tool", str(GENERATORS / generator),
               "--mode", mode, "--out", str(out), "--work", str(work_root), *chosen)
    shutil.copytree(BUNDLED / "suites" / "biased" / HANDWRITTEN[1], out / "suites" / HANDWRITTEN[0] / HANDWRITTEN[1])
    invoke("replay", str(out), "--store", str(store), "--work", str(work_root))
    invoke("score", str(store))
    return Scored(store, out)


def selected(scored: Scored, tmp_path: Path, by: str, minimum: float, *configurations: str) -> list[dict]:
    target = tmp_path / f"{by}.jsonl"
    invoke("select", str(scored.store), "--by", by, "--min", str(minimum), "--out", str(target),
           *(arg for c in configurations for arg in ("--configuration", c)))
    return [json.loads(line) for line in target.read_text().splitlines()]


def expected(scored: Scored, by: str, minimum: float) -> set[tuple[str, str]]:
    """What the store's instance scores say meets the criterion, generated suites only."""
    scores = Store(scored.store).read_table("instance_scores")
    return {(r["configuration"], r["instance_id"]) for r in scores.iter_rows(named=True)
            if r["configuration"] in GENERATED and r["instance_id"] in INSTANCES and r[INDICATORS[by]] is not None
            and r[INDICATORS[by]] >= minimum}


@pytest.mark.slow
@pytest.mark.requires("sandbox")
def test_grr_selects_the_biased_suites_that_car_and_jvr_leave_out(scored, tmp_path):
    by_grr = selected(scored, tmp_path, "grr", 1.0)
    chosen = {(r["configuration"], r["instance_id"]) for r in by_grr}
    assert chosen == expected(scored, "grr", 1.0)
    assert {i for c, i in chosen if c == "from-reference"} == set(INSTANCES)  # biased: every one fails before, passes after
    for by in ("car", "jvr"):
        stricter = {(r["configuration"], r["instance_id"]) for r in selected(scored, tmp_path, by, 1.0)}
        assert stricter == expected(scored, by, 1.0)
        assert {i for c, i in chosen - stricter if c == "from-reference"}  # high GRR, CAR < 1: left out
    for record in by_grr:
        suite = scored.out / "suites" / record["configuration"] / record["instance_id"]
        assert record["suite"] == {p.relative_to(suite).as_posix(): p.read_text() for p in sorted(suite.rglob("*"))
                                   if p.is_file()}
        assert record["metric"] == "grr" and record["value"] == record["indicators"]["f"] == 1.0
        assert record["mode"] == ("testprism" if record["configuration"] == "from-reference" else "plain")
        assert record["strategy"] and isinstance(record["strategy"], dict) and record["exit_code"] == 0
        assert (scored.store / record["log"]).is_file() and record["repair"] is None


@pytest.mark.slow
@pytest.mark.requires("sandbox")
def test_a_configuration_limits_the_export_and_an_unknown_one_is_refused(scored, tmp_path):
    records = selected(scored, tmp_path, "wdr", 0.0, "from-instruction")
    assert {r["configuration"] for r in records} <= {"from-instruction"}
    assert {(r["configuration"], r["instance_id"]) for r in records} == {
        k for k in expected(scored, "wdr", 0.0) if k[0] == "from-instruction"}
    result = CliRunner().invoke(app, ["select", str(scored.store), "--by", "jvr", "--min", "0", "--out",
                                      str(tmp_path / "x.jsonl"), "--configuration", "nope"])
    assert result.exit_code == 2 and "field --configuration" in result.output and "nope" in result.output


@pytest.mark.slow
@pytest.mark.requires("sandbox")
def test_a_scored_suite_without_a_generation_is_skipped_and_counted(scored, tmp_path):
    summary = select_demonstrations(scored.store, "grr", 0.0, tmp_path / "all.jsonl")
    records = [json.loads(line) for line in (tmp_path / "all.jsonl").read_text().splitlines()]
    scores = Store(scored.store).read_table("instance_scores")
    generated = {(c, folder.name) for c in GENERATED for folder in (scored.out / "suites" / c).iterdir()}
    assert HANDWRITTEN in set(zip(scores["configuration"], scores["instance_id"]))
    assert {(r["configuration"], r["instance_id"]) for r in records} == generated
    assert summary.scored == scores.height and summary.selected == len(generated)
    assert summary.without_trajectory == scores.height - len(generated)


def test_a_store_without_scores_says_run_score_first(tmp_path):
    Store(tmp_path / "store")
    result = CliRunner().invoke(app, ["select", str(tmp_path / "store"), "--by", "jvr", "--min", "1",
                                      "--out", str(tmp_path / "d.jsonl")])
    assert result.exit_code == 2, result.output
    assert "instance_scores" in result.output and "run `testprism score` first" in result.output
    assert not (tmp_path / "d.jsonl").exists()


@pytest.mark.parametrize(("option", "value", "field"), [("--by", "f1", "--by"), ("--min", "1.5", "--min"),
                                                        ("--min", "-0.1", "--min")])
def test_a_bad_criterion_names_its_option(tmp_path, option, value, field):
    Store(tmp_path / "store")
    args = {"--by": "jvr", "--min": "1", option: value}
    result = CliRunner().invoke(app, ["select", str(tmp_path / "store"), *(a for k, v in args.items() for a in (k, v)),
                                      "--out", str(tmp_path / "d.jsonl")])
    assert result.exit_code == 2, result.output
    assert f"field {field}" in result.output and value in result.output


SECRET = "sk-gen31-never-written-7f3a9c"


def _bytes_under(root: Path) -> bytes:
    """Every file under `root`, gzip ones decompressed too."""
    import gzip

    found = b""
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        found += data + (gzip.decompress(data) if path.suffix == ".gz" else b"")
    return found


@pytest.mark.slow
@pytest.mark.requires("sandbox")
def test_select_chat_exports_what_the_model_channel_recorded_without_the_key(tmp_path, work_root, endpoint,
                                                                             monkeypatch):
    """The provided agent through the channel on a loopback model: configuration `a` needs a
    revision (two exchanges, the second extending the first: one conversation), `b` and `c`
    say and hear the same in one exchange (one conversation, the other a duplicate). The
    chat export's messages are exactly what the server received and answered; the key, which
    reached the server, is nowhere in the store or the export."""
    from tests.chatserver import AGENT_FIX, AGENT_PROGRAM

    url, script = endpoint
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    bench = make_synthetic(tmp_path / "bench", 1, valid=0, invalid=0)
    instance = bench / "instances" / "synth__0000"
    (instance / "program" / "impl.txt").unlink()
    (instance / "program" / "calc.py").write_text(AGENT_PROGRAM)
    (instance / "instruction.md").write_text("`add` in calc.py subtracts. [[script:agent-pass-then-fail]]\n")
    (instance / "reference.diff").write_text(AGENT_FIX)
    (instance / "instance.toml").write_text((instance / "instance.toml").read_text().replace("packages = []\n", ""))
    store, out = tmp_path / "store", tmp_path / "out"
    for name, chars in (("a", 4000), ("b", 3000), ("c", 3500)):  # another strategy: another run, same prompt
        strategy = tmp_path / f"{name}.json"
        strategy.write_text(json.dumps({"tool_output_chars": chars}))
        invoke("generate", str(bench), "--store", str(store), "--configuration", name, "--command", "testprism agent",
               "--strategy", str(strategy), "--model-url", url, "--out", str(out), "--work", str(work_root))
    invoke("replay", str(out), "--store", str(store), "--work", str(work_root))
    invoke("score", str(store))
    target = tmp_path / "chat.jsonl"
    invoke("select", str(store), "--by", "grr", "--min", "1", "--format", "chat", "--out", str(target))
    lines = [json.loads(line) for line in target.read_text().splitlines()]

    assert {f"Bearer {SECRET}"} == script.authorization  # control: the key went upstream, through the harness
    # what the server received and answered (its answer's null fields are not part of a message)
    answered = [[*body["messages"], {k: v for k, v in reply["choices"][0]["message"].items() if v is not None}]
                for body, reply in script.exchanges]
    assert len(answered) == 4  # a: 2 exchanges, b and c: 1 each
    assert answered[0] == answered[1][:3] and answered[2] == answered[3]
    assert [line["messages"] for line in lines] == [answered[1], answered[2]]
    assert [(line["metadata"]["configuration"], line["metadata"]["provenance"]["exchange"]) for line in lines] == [
        ("a", 2), ("b", 1)]
    first = lines[0]["metadata"]
    assert first["metric"] == "grr" and first["value"] == 1.0 and first["indicators"]["f"] == 1.0
    assert "test_generated.py" in first["suite"] and first["provenance"]["tokens"] == 2
    assert first["provenance"]["strategy"]["tool_output_chars"] == 4000
    assert SECRET.encode() not in _bytes_under(store) + target.read_bytes()

    budget = tmp_path / "budget.jsonl"  # each conversation's last exchange cost 2 tokens
    invoke("select", str(store), "--by", "grr", "--min", "1", "--format", "chat", "--max-tokens", "2",
           "--out", str(budget))
    assert [json.loads(line)["metadata"]["configuration"] for line in budget.read_text().splitlines()] == ["a"]

    invoke("report", str(store), "--out", str(tmp_path / "report.html"))
    page = (tmp_path / "report.html").read_text()
    section = page[page.index('<section id="conversations">'):]
    assert section.count(">conversation</a>") == 3 and "conversation.jsonl.gz" in section
