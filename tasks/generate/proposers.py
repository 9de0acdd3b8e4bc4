"""Who proposes a search round's strategy: Optuna's TPE sampler over the space's bounds, or a
model over the OpenAI-compatible API that reads the history and answers a strategy.

TPE searches the numeric fields (the default proposer); it leaves the text as the start
has it. The model may rewrite the strategy's `instructions` too (TestHelix's
self-improvement refines the synthesis strategy from execution feedback): it is shown each
round's instructions and what its suites did per instance (the replayed indicators), and
its text is cut to the space's `instructions_max_chars`.

Both are functions of the stored history, so a rerun proposes what the first run would
have: TPE's study is rebuilt in memory from the history every round and seeded with the
search's seed plus the round (a sampler's RNG carried across rounds would differ after a
resume); the model is asked again (its answer may differ; what it answered is stored).
The model is called by the harness, never from a sandbox; its tokens are recorded
(`proposer_tokens`) and count against the search's cap with the runs' (tasks/generate/
search_rounds.py), so a model proposer buys no JSF with tokens the cap does not see.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import openai
import optuna
from optuna.distributions import IntDistribution
from pydantic import ValidationError

from testprism.tasks.generate.generation import Endpoint
from testprism.tasks.generate.search import SearchRound
from testprism.tasks.generate.strategy import Strategy, StrategySpace

log = logging.getLogger(__name__)

#: TPE's random rounds before it models the history; Optuna's default (10) is more than a
#: search under a budget of a few rounds ever reaches (TestHelix's K = 3)
STARTUP_ROUNDS = 3

SYSTEM_PROMPT = (
    "You tune the strategy of a test-generation agent. Each round, the agent wrote a test suite per task "
    "under the strategy shown; JSF is the share of tasks whose suite failed the buggy program, passed the "
    "reference fix, accepted every valid alternative fix and rejected every invalid one. Propose the next "
    "strategy to try: higher JSF is better, and every strategy runs under the same fixed token caps. Besides "
    "its numbers, a strategy has `instructions`: text the agent adds to its system prompt. Read what each "
    "round's suites did and rewrite the instructions where they would help.")


@dataclass(frozen=True)
class Proposal:
    strategy: Strategy
    proposer: str  #: tpe | llm | tpe-fallback
    note: str | None = None  #: why the model's answer was not used, or what of it was cut
    tokens: int = 0  #: the proposer's own tokens


def _distributions(space: StrategySpace) -> dict[str, IntDistribution]:
    return {name: IntDistribution(b.low, b.high) for name, b in sorted(space.bounds.items())}


def propose_tpe(space: StrategySpace, rounds: Sequence[SearchRound], round_: int, seed: int) -> Strategy:
    """TPE's next point, from a study holding every round that has a JSF."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    distributions = _distributions(space)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(
        seed=seed + round_, n_startup_trials=STARTUP_ROUNDS))
    for r in rounds:
        if r.jsf is not None:
            study.add_trial(optuna.trial.create_trial(
                params={n: getattr(r.strategy, n) for n in distributions}, distributions=distributions, value=r.jsf))
    return space.strategy.model_copy(update=study.ask(distributions).params)


def clamp(space: StrategySpace, answer: dict) -> tuple[Strategy, str | None]:
    """The model's answer as a strategy, and a note when its text was cut: unknown and fixed
    fields ignored (the start's stay), searched fields rounded and clamped into their bounds,
    `instructions` (when the space searches text) cut to `instructions_max_chars`. Raises
    ValueError when a searched field is not a number or the instructions not text."""
    values: dict[str, object] = {}
    for name, bound in space.bounds.items():
        if name in answer:
            value = answer[name]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{name}: {value!r} is not a number")
            values[name] = min(bound.high, max(bound.low, round(value)))
    note = None
    if space.instructions_max_chars and "instructions" in answer:
        text = answer["instructions"]
        if not isinstance(text, str):
            raise ValueError(f"instructions: {text!r} is not text")
        text = text.strip()
        if len(text) > space.instructions_max_chars:
            note = f"instructions cut from {len(text)} to {space.instructions_max_chars} characters"
            text = text[:space.instructions_max_chars]
        values["instructions"] = text
    return space.strategy.model_copy(update=values), note


def _answer_object(content: str) -> dict:
    """The JSON object of an answer, bare or inside prose or a code fence."""
    start, end = content.find("{"), content.rfind("}")
    if start < 0 or end < start:
        raise ValueError("no JSON object in the answer")
    data = json.loads(content[start:end + 1])
    if not isinstance(data, dict):
        raise ValueError("the answer is not a JSON object")
    return data


def messages(space: StrategySpace, rounds: Sequence[SearchRound], feedback: Mapping[int, str] | None = None
             ) -> list[dict[str, str]]:
    """The history table (strategy, JSF, tokens per round), each round's execution feedback
    (what its suites did per instance) and the bounds."""
    lines = "\n".join(json.dumps({"round": r.round, "strategy": r.strategy.model_dump(), "jsf": r.jsf,
                                  "tokens": r.tokens}) for r in rounds if r.jsf is not None)
    seen = "\n\n".join(f"### Round {n}\n\n{text}" for n, text in sorted((feedback or {}).items()) if text)
    bounds = "\n".join(f"- {n}: integer in [{b.low}, {b.high}]" for n, b in sorted(space.bounds.items()))
    if space.instructions_max_chars:
        bounds += f"\n- instructions: text of at most {space.instructions_max_chars} characters"
    user = (f"## History (one JSON object per round)\n\n{lines}\n\n"
            + (f"## What each round's suites did\n\n{seen}\n\n" if seen else "")
            + f"## Fields you may change\n\n{bounds}\n\nAnswer with one JSON object holding those fields only.")
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def propose_llm(space: StrategySpace, rounds: Sequence[SearchRound], round_: int, seed: int, endpoint: Endpoint,
                model: str, timeout_s: float = 120.0, feedback: Mapping[int, str] | None = None) -> Proposal:
    """The model's strategy, clamped to the bounds; TPE's on an error or a malformed
    answer (recorded as `tpe-fallback` with the reason), so one bad answer costs no round.
    `feedback`: round → what its suites did (tasks/generate/search.py `round_feedback`)."""
    client = openai.OpenAI(base_url=endpoint.base_url, api_key=endpoint.api_key or "none", timeout=timeout_s,
                           max_retries=2)
    tokens = 0
    try:
        completion = client.chat.completions.create(model=model, messages=messages(space, rounds, feedback),
                                                    temperature=0.0)
        tokens = completion.usage.total_tokens if completion.usage else 0
        content = completion.choices[0].message.content if completion.choices else None
        if not content:
            raise ValueError("the answer is empty")
        strategy, note = clamp(space, _answer_object(content))
        return Proposal(strategy, "llm", note, tokens=tokens)
    except (openai.OpenAIError, ValueError, ValidationError) as exc:
        note = f"{type(exc).__name__}: {exc}"
        log.warning("rsi round %d: the model's proposal is unusable (%s); TPE proposes instead", round_, note)
        return Proposal(propose_tpe(space, rounds, round_, seed), "tpe-fallback", note, tokens)
