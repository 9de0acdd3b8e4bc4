"""`testprism rsi`: a strategy search that finds the strategy a designed generator rewards,
resumes from its stored history, exports its best, and never spends more than its search
cap, even with a generator that spends every token it is allowed; the budget rule and the
proposers on their own."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from testprism.flows.cli import app
from testprism.storage import Store
from testprism.tasks.generate.generation import Endpoint
from testprism.tasks.generate.proposers import propose_llm, propose_tpe
from testprism.tasks.generate.search import RoundStatus, SearchRound, best, round_budget
from testprism.tasks.generate.strategy import Bound, Caps, Strategy, StrategySpace, load_strategy
from tests.chatserver import PROPOSER_USAGE
from tests.synthbench import make_synthetic
from tests.test_generate import GREEDY

#: writes the strong suite (greps for "fixed": JSF 1) when its strategy allows 4 or more
#: test-repair rounds, else the lax one (always passes: JSF 0)
DESIGNED = r"""
import json, pathlib
rounds = json.loads(pathlib.Path("tmp/.task/strategy.json").read_text())["rounds"]
body = "grep -q '^fixed' impl.txt\n" if rounds >= 4 else "exit 0\n"
pathlib.Path("tmp/run_tests.sh").write_text(body)
"""
SPACE = "[strategy]\nrounds = 1\n[bounds.rounds]\nlow = 1\nhigh = 8\n"


def cli(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def searches(store: Path) -> pl.DataFrame:
    return Store(store).scan("searches").sort("round").collect()


def rsi(tmp_path: Path, work_root: Path, code: str, space: str, rounds: int, *extra: str) -> str:
    tool = tmp_path / "agent.py"
    tool.write_text(code)
    (tmp_path / "strategy.toml").write_text(space)
    return cli("rsi", str(tmp_path / "bench"), "--store", str(tmp_path / "store"), "--command",
               "python tmp/.task/tools/agent.py", "--tool", str(tool), "--space", str(tmp_path / "strategy.toml"),
               "--rounds", str(rounds), "--export", str(tmp_path / "best.json"), "--work", str(work_root), *extra)


@pytest.mark.slow
@pytest.mark.requires("sandbox")
@pytest.mark.timeout(900)
def test_tpe_finds_the_rewarded_strategy_resumes_and_exports_the_best(tmp_path, work_root):
    make_synthetic(tmp_path / "bench", 2, valid=2, invalid=2)
    printed = rsi(tmp_path, work_root, DESIGNED, SPACE, 6)
    rows = searches(tmp_path / "store")
    assert rows["round"].to_list() == [1, 2, 3, 4, 5, 6]  # one row per round
    assert rows["proposer"].to_list() == ["start"] + ["tpe"] * 5
    jsf = rows["jsf"].to_list()
    strategies = [json.loads(s) for s in rows["strategy"]]
    assert jsf[0] == 0.0 and strategies[0]["rounds"] == 1  # the start: the lax suite
    assert max(jsf) == 1.0 > jsf[0]  # found: a strategy of 4 rounds or more, the strong suite
    assert all((j == 1.0) == (s["rounds"] >= 4) for j, s in zip(jsf, strategies))
    assert all(1 <= s["rounds"] <= 8 for s in strategies)
    best = rows.filter(pl.col("jsf") == 1.0).row(0, named=True)
    assert load_strategy(tmp_path / "best.json") == Strategy.model_validate_json(best["strategy"])
    assert "rsi " in printed and "jsf" in printed

    again = rsi(tmp_path, work_root, DESIGNED, SPACE, 6)  # resumes after round 6: nothing to do
    assert searches(tmp_path / "store").equals(rows)
    assert "0 rounds run now, 6 stored" in " ".join(again.split())
    rsi(tmp_path, work_root, DESIGNED, SPACE, 7)  # more rounds continue the search
    assert searches(tmp_path / "store")["round"].to_list() == [1, 2, 3, 4, 5, 6, 7]
    assert searches(tmp_path / "store").head(6).equals(rows)


@pytest.mark.slow
@pytest.mark.requires("sandbox")
@pytest.mark.timeout(600)
def test_a_greedy_generator_never_takes_the_search_past_its_cap(tmp_path, work_root, endpoint):
    url, script = endpoint
    make_synthetic(tmp_path / "bench", 2, valid=1, invalid=1)
    # a wide field, so that no two rounds share a strategy (which would spend nothing); a reply costs 2
    space = ("[bounds.context_tokens]\nlow = 2000\nhigh = 64000\n"
             "[caps]\nrun_tokens = 10\nreply_tokens = 2\nsearch_tokens = 50\n")
    rsi(tmp_path, work_root, GREEDY, space, 6, "--model-url", url)
    rows = searches(tmp_path / "store")
    spent = Store(tmp_path / "store").scan("generations").collect()["total_tokens"].sum()
    assert spent == rows["cumulative_tokens"][-1] == script.total() * 2 <= 50  # as stored, as upstream saw it
    assert rows["status"].to_list() == ["done", "done", "cut", "stopped"]
    assert rows["tokens"].to_list() == [20, 20, 8, 0]  # 2 runs each spending all 10 tokens, then all of 3 (4)
    assert rows["run_tokens_cap"].to_list()[:3] == [10, 10, 3]  # (50 - 40) // 2 - 2 of headroom
    assert rows["jsf"].to_list()[:3] == [0.0, 0.0, 0.0]  # over budget: no suite kept


def test_the_budget_admits_cuts_and_stops_a_round():
    caps = Caps(run_tokens=100, reply_tokens=10, search_tokens=1_000)
    assert round_budget(caps, 0, 4).status is RoundStatus.DONE  # 4 × 110 fits
    cut = round_budget(caps, 700, 4)  # 300 left: 75 a run, 10 of them headroom
    assert cut.status is RoundStatus.CUT and cut.caps.run_tokens == 65 and "100 to 65" in cut.note
    assert round_budget(caps, 960, 4).status is RoundStatus.STOPPED  # 10 a run: all of it headroom


def _round(n: int, rounds: int, jsf: float, model: str = "default") -> SearchRound:
    return SearchRound("s", n, f"rsi-s-{n}", "tpe", Strategy(rounds=rounds, model=model), jsf, 2, 10, 1, 10 * n, 10,
                       100, 0, datetime.now(UTC), RoundStatus.DONE, None, ())


def test_tpe_proposes_within_bounds_the_same_way_after_a_resume():
    space = StrategySpace(strategy=Strategy(rounds=1), bounds={"rounds": Bound(low=1, high=8),
                                                               "agent_steps": Bound(low=5, high=40)})
    past = [_round(n, r, float(r >= 4)) for n, r in enumerate([1, 6, 2, 7, 3], start=1)]
    proposed = [propose_tpe(space, past, 6, seed=0) for _ in range(2)]
    assert proposed[0] == proposed[1]  # a function of the history, seed and round
    assert 1 <= proposed[0].rounds <= 8 and 5 <= proposed[0].agent_steps <= 40
    assert proposed[0].model_dump(exclude={"rounds", "agent_steps"}) == space.strategy.model_dump(
        exclude={"rounds", "agent_steps"})


def test_the_llm_proposer_is_clamped_to_the_bounds_and_falls_back_to_tpe(endpoint):
    url, script = endpoint
    space = StrategySpace(strategy=Strategy(rounds=1), bounds={"rounds": Bound(low=1, high=8),
                                                               "agent_steps": Bound(low=5, high=40)})
    asked = propose_llm(space, [_round(1, 1, 0.0, model="[[script:strategy]]")], 2, 0, Endpoint(url, None), "m")
    assert asked.proposer == "llm" and asked.note is None and asked.tokens == 2
    assert (asked.strategy.rounds, asked.strategy.agent_steps) == (8, 7)  # 99 clamped, 7.4 rounded
    assert asked.strategy.model == "default"  # not a searched field: the start's
    fallback = propose_llm(space, [_round(1, 1, 0.0, model="[[script:malformed]]")], 2, 0, Endpoint(url, None), "m")
    assert fallback.proposer == "tpe-fallback" and "no JSON object" in fallback.note
    assert 1 <= fallback.strategy.rounds <= 8
    assert script.total() == 2


#: asks its model once through the channel (so each run spends tokens), then writes the strong
#: suite when its instructions say to check the fixed text, else the lax one
TOLD = r"""
import json, os, pathlib, urllib.request
strategy = json.loads(pathlib.Path("tmp/.task/strategy.json").read_text())
body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "[[script:score-90]]"}]}).encode()
urllib.request.urlopen(urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", body,
                                              {"Content-Type": "application/json"}), timeout=30).read()
strong = "starts with `fixed`" in strategy.get("instructions", "")
pathlib.Path("tmp/run_tests.sh").write_text("grep -q '^fixed' impl.txt\n" if strong else "exit 0\n")
"""
TEXT_SPACE = ('instructions_max_chars = 400\n[strategy]\nrounds = 1\n'
              'instructions = "Write a regression test. [[script:strategy-text]]"\n'
              "[bounds.rounds]\nlow = 1\nhigh = 8\n[caps]\nrun_tokens = 10\nreply_tokens = 2\nsearch_tokens = 60\n")


@pytest.mark.slow
@pytest.mark.requires("sandbox")
@pytest.mark.timeout(600)
def test_the_llm_proposer_rewrites_the_instructions_and_raises_jsf_within_the_cap(tmp_path, work_root, endpoint):
    """The designed example: the start's instructions give the lax suite (JSF 0); the model,
    shown what each round's suites did, rewrites them; the rewritten text gives the strong
    suite (JSF 1); the numbers it proposed stay in bounds and the search within its cap."""
    from tests.chatserver import STRATEGY_TEXT

    url, script = endpoint
    make_synthetic(tmp_path / "bench", 2, valid=1, invalid=1)
    rsi(tmp_path, work_root, TOLD, TEXT_SPACE, 2, "--proposer", "llm", "--model-url", url)
    rows = searches(tmp_path / "store")
    strategies = [json.loads(s) for s in rows["strategy"]]
    assert rows["proposer"].to_list() == ["start", "llm"]
    assert rows["jsf"].to_list() == [0.0, 1.0]  # the text change raised JSF
    assert strategies[0]["instructions"] == "Write a regression test. [[script:strategy-text]]"
    assert strategies[1]["instructions"] == STRATEGY_TEXT and strategies[1]["rounds"] == 2  # the history keeps each
    spent = Store(tmp_path / "store").scan("generations").collect()["total_tokens"].sum()
    assert spent == 8  # 2 rounds × 2 runs × one 2-token reply
    assert rows["proposer_tokens"].to_list() == [0, 2] and rows["cumulative_tokens"][-1] == 10 <= 60  # and the proposer's
    proposer_prompt = next(p for p in script.prompts if "## History" in p)
    assert "## What each round's suites did" in proposer_prompt  # the execution feedback it read
    assert "synth__0000: the suite fails on the buggy program" not in proposer_prompt  # the lax suite passes there
    assert "synth__0000: the suite does not both fail" in proposer_prompt and "rejects 0 of 1 wrong fixes" in proposer_prompt
    assert load_strategy(tmp_path / "best.json").instructions == STRATEGY_TEXT


def test_the_proposers_text_is_cut_to_the_space_bound_and_ignored_when_text_is_not_searched():
    from testprism.tasks.generate.proposers import clamp

    long = {"rounds": 3, "instructions": "x" * 50}
    cut, note = clamp(StrategySpace(instructions_max_chars=20), long)
    assert cut.instructions == "x" * 20 and note == "instructions cut from 50 to 20 characters"
    fixed, note = clamp(StrategySpace(instructions_max_chars=0), long)
    assert fixed.instructions == "" and note is None and fixed.rounds == 3
    with pytest.raises(ValueError, match="instructions"):
        clamp(StrategySpace(), {"instructions": 7})
    assert Strategy().key != Strategy(instructions="x").key


# -- the search improves a strategy it must discover, and its controls ---------------------------------

#: the stand-in generator's hidden scoring: instance → the word its instructions must hold for
#: the strong suite; a text holding POISON gets the lax suite everywhere (a smoke test only)
HIDDEN = {"synth__0000": "boundary", "synth__0001": "exact", "synth__0002": "reject"}
POISON = "smoke"
#: tokens each stand-in generation run spends (under its cap of RUN_CAP)
RUN_SPEND, RUN_CAP, REPLY_CAP = 4, 5, 5


def strong_suite(instructions: str, instance_id: str) -> bool:
    """The hidden function of the strategy's text the search must discover."""
    words = set(instructions.split())
    return HIDDEN[instance_id] in words and POISON not in words


def standin_search(tmp_path: Path, url: str, proposer_marker: str, reads_strategy: bool, rounds: int,
                   search_tokens: int = 10_000) -> list:
    """rsi's search loop (tasks/generate/search_rounds.py run_search) with the llm proposer
    asking the scripted one at `url`, over a stand-in generation and replay in the harness
    (no sandbox): each instance's suite is strong (rejects the invalid candidate) when
    `strong_suite` says so of the round's instructions, else lax (passes everywhere);
    `reads_strategy` False: the generator ignores its strategy (always the start's text)."""
    from testprism.tasks.generate.search_rounds import SearchPlacing, SearchSetup, run_search
    from testprism.tasks.generate.task_folder import Mode
    from testprism.tasks.model.benchmark import load_benchmark
    import pyarrow as pa
    from testprism.storage import SCHEMAS

    bench = load_benchmark(make_synthetic(tmp_path / "bench", 3, valid=1, invalid=1), announce=False)
    store = Store(tmp_path / "store")
    states = [(iid, kind, c.id if c else None, c.label if c else None) for iid, inst in bench.instances.items()
              for kind, c in [("buggy", None), ("reference", None), *(("candidate", c) for c in inst.candidates)]]
    store.append("panels", pa.Table.from_pylist(
        [{"instance_id": i, "source": "s", "state": k, "candidate_id": c, "label": lab, "state_hash": f"{i}{k}{c}"}
         for i, k, c, lab in states], schema=SCHEMAS["panels"]))
    start = f"[[script:{proposer_marker}]]"
    space = StrategySpace(strategy=Strategy(instructions=start), caps=Caps(
        run_tokens=RUN_CAP, reply_tokens=REPLY_CAP, search_tokens=search_tokens))
    strong: dict[tuple[str, str], bool] = {}
    now = datetime.now(UTC)

    def generate(name: str, strategy_file: Path, caps: Caps) -> None:
        text = load_strategy(strategy_file).instructions if reads_strategy else start
        rows = []
        for iid in bench.instances:
            strong[name, iid] = strong_suite(text, iid)
            rows.append({"generation_key": f"{name}/{iid}", "configuration": name, "instance_id": iid, "source": "s",
                         "mode": "plain", "round": 0, "command": "stand-in", "strategy": strategy_file.read_text(),
                         "strategy_hash": "h", "started_at": now, "requests": 1, "total_tokens": min(RUN_SPEND, caps.run_tokens),
                         "suite_hash": str(strong[name, iid])})
        store.append("generations", pa.Table.from_pylist(rows, schema=SCHEMAS["generations"]))
        store.append("suites", pa.Table.from_pylist(
            [{"configuration": name, "instance_id": iid, "suite_hash": "h", "present": True} for iid in bench.instances],
            schema=SCHEMAS["suites"]))

    def replay(name: str) -> None:
        rows = []
        for iid, kind, cid, label in states:
            rejects = kind == "buggy" or label == "invalid"  # what the strong suite fails; the lax fails nothing
            rows.append({"run_key": f"{name}/{iid}/{kind}/{cid}", "instance_id": iid, "source": "s",
                         "configuration": name, "state": kind, "candidate_id": cid, "label": label,
                         "outcome": "F" if strong[name, iid] and rejects else "P", "started_at": now})
        store.append("runs", pa.Table.from_pylist(rows, schema=SCHEMAS["runs"]))

    setup = SearchSetup("search", space, "stand-in", Mode.PLAIN, (), proposer="llm", endpoint=Endpoint(url, None),
                        proposer_model="m")
    past, _ = run_search(store, tmp_path / "strategies", bench, setup, rounds, SearchPlacing(generate, replay))
    return past


@pytest.mark.parametrize(("proposer", "reads_strategy", "found"), [
    ("explore", True, True),  # the search: an exploring proposer, a generator its text shapes
    ("explore", False, False),  # control: the generator ignores its strategy
    ("stuck", True, False),  # control: the proposer cannot vary (always the start's text)
])
def test_the_search_discovers_what_the_generator_rewards_and_its_controls_find_nothing(
        tmp_path, endpoint, proposer, reads_strategy, found):
    """The generator's suite quality is a hidden function of its instructions' words (one
    word per instance, one word that spoils all); the proposer is handed no word that
    matters, only seven to try, and explores from the best round so far. 12 rounds: the
    search reaches JSF 1 from the start's 0 (through worse rounds: it explores, it is not
    told); with a generator that ignores its strategy, or a proposer that cannot vary, the
    same 12 rounds end where they began."""
    url, script = endpoint
    past = standin_search(tmp_path, url, proposer, reads_strategy, rounds=12)
    jsf = [r.jsf for r in past]
    assert len(past) == 12 and jsf[0] == 0.0
    assert [r.proposer for r in past] == ["start"] + ["llm"] * 11  # every answer used: no TPE fallback
    top = best(past)
    if found:
        assert top.jsf == 1.0 and top.round > 2
        assert set(HIDDEN.values()) <= set(top.strategy.instructions.split()) and POISON not in top.strategy.instructions
        assert any(j < max(jsf[:n]) for n, j in enumerate(jsf) if n)  # it tried worse strategies too
    else:
        assert jsf == [0.0] * 12 and top.round == 1
    assert (len({r.strategy.instructions for r in past}) == 1) == (proposer == "stuck")
    assert script.requests[proposer] == 11  # one proposal a round after the start


def test_the_proposer_s_tokens_count_against_the_search_cap(tmp_path, endpoint):
    """A round costs its 3 runs (4 tokens each) and, from round 2, the proposer's reply (5).
    Under a cap of 66 the search runs rounds of 12, 17 and 17 tokens (46) and stops at round
    4, which would need 5 for the proposer and 3 × (5 + 5) for its runs: 46 + 5 + 30 > 66.
    Control: without the proposer's 10 tokens the runs alone (36 + 30 ≤ 66) would have run it."""
    url, script = endpoint
    past = standin_search(tmp_path, url, "explore", True, rounds=6, search_tokens=66)
    proposer_tokens = [r.proposer_tokens for r in past]
    assert [r.status.value for r in past] == ["done", "done", "done", "stopped"]
    assert proposer_tokens == [0, sum(PROPOSER_USAGE), sum(PROPOSER_USAGE), 0]
    assert [r.tokens for r in past] == [12, 12, 12, 0]
    assert [r.cumulative_tokens for r in past] == [12, 29, 46, 46] and past[-1].cumulative_tokens <= 66
    assert script.requests["explore"] == 2  # the stopped round asked nothing: no headroom for the proposer
    assert "kept for the proposer's reply" in past[-1].note
    runs_only = sum(r.tokens for r in past)
    caps = Caps(run_tokens=RUN_CAP, reply_tokens=REPLY_CAP, search_tokens=66)
    assert round_budget(caps, runs_only, 3).status is RoundStatus.DONE  # the control
