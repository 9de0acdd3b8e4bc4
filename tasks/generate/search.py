"""Strategy search (rsi, TestHelix's recursive self-improvement) under a fixed inference
budget: its identity, its history in the store (`searches`), what each round may spend, what
it spent, how well it did, and the best strategy so far.

A search is searched on the training split only (curate's `train`): its JSF is an
optimisation target, so a strategy chosen by it and scored on the same instances is
overfitted by construction; the test split is for scoring the exported strategy once.

The budget holds because each round is admitted against what is left: a round whose runs
could all spend their cap (plus one reply of headroom, `Caps.reply_tokens`, since the
channel counts a reply only once it is back) runs as it is; otherwise its per-run cap is
lowered to its share of what remains, and when no share is left the search stops. A round
is charged what its own generation runs spent (a strategy proposed twice has the same
generation keys, so its runs are not executed again and cost nothing).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from pathlib import Path

import polars as pl
import pyarrow as pa

from testprism.storage import Store
from testprism.storage.schema import SCHEMAS
from testprism.tasks.generate.strategy import Caps, Strategy, StrategySpace
from testprism.tasks.generate.task_folder import Mode
from testprism.tasks.model.hashing import digest
from testprism.tasks.score.metrics import instance_scores


class RoundStatus(StrEnum):
    """What became of a round."""

    DONE = "done"  #: ran with the space's per-run cap
    CUT = "cut"  #: ran with a per-run cap lowered to its share of what the search has left
    STOPPED = "stopped"  #: not run: the search's budget has no share left; the search ends here


@dataclass(frozen=True)
class SearchRound:
    """One row of `searches` (storage/schema.py SEARCHES)."""

    search_id: str
    round: int
    configuration: str
    proposer: str
    strategy: Strategy
    jsf: float | None
    instances: int
    tokens: int
    requests: int
    cumulative_tokens: int
    run_tokens_cap: int
    search_tokens_cap: int
    proposer_tokens: int
    started_at: datetime
    status: RoundStatus
    note: str | None
    generation_keys: tuple[str, ...]


def search_id(space: StrategySpace, command: str, mode: Mode, tools: Sequence[Path], benchmark: Path) -> str:
    """Same space, agent, mode, tools and benchmark: the same search, which a rerun resumes.
    `--rounds`, the proposer and the seed are not part of it, so a search can be continued
    with more rounds or another proposer."""
    parts = [part for tool in tools for part in (tool.name, tool.read_bytes())]
    return digest("search", space.identity, command, mode.value, *parts, str(benchmark.resolve()))


def configuration_of(search: str, round_: int) -> str:
    """The round's configuration: named by its search too, so two searches in one store
    never overwrite each other's runs."""
    return f"rsi-{search[:8]}-{round_}"


def history(store: Store, search: str) -> list[SearchRound]:
    """The stored rounds of `search`, in order (one row each: parts are named by round)."""
    rows = store.scan("searches").filter(pl.col("search_id") == search).sort("round").collect()
    return [SearchRound(
        search_id=r["search_id"], round=r["round"], configuration=r["configuration"], proposer=r["proposer"],
        strategy=Strategy.model_validate_json(r["strategy"]), jsf=r["jsf"], instances=r["instances"],
        tokens=r["tokens"], requests=r["requests"], cumulative_tokens=r["cumulative_tokens"],
        run_tokens_cap=r["run_tokens_cap"], search_tokens_cap=r["search_tokens_cap"],
        proposer_tokens=r["proposer_tokens"], started_at=r["started_at"], status=RoundStatus(r["status"]),
        note=r["note"], generation_keys=tuple(r["generation_keys"] or ()),
    ) for r in rows.iter_rows(named=True)]


def record(store: Store, done: SearchRound) -> None:
    """Append one round; idempotent (the part is named by search and round)."""
    row = {**done.__dict__, "strategy": done.strategy.model_dump_json(), "status": done.status.value,
           "generation_keys": list(done.generation_keys)}
    store.append("searches", pa.Table.from_pylist([row], schema=SCHEMAS["searches"]),
                 part=digest("searches", done.search_id, str(done.round)))


@dataclass(frozen=True)
class RoundBudget:
    """What a round may spend: its caps (None: stopped) and why."""

    caps: Caps | None
    status: RoundStatus
    note: str | None


def round_budget(caps: Caps, used: int, instances: int) -> RoundBudget:
    """Admit a round of `instances` runs after `used` tokens, so that the search's total
    never passes `caps.search_tokens` (while no reply counts more than `caps.reply_tokens`)."""
    headroom = caps.run_tokens + caps.reply_tokens
    if used + instances * headroom <= caps.search_tokens:
        return RoundBudget(caps, RoundStatus.DONE, None)
    share = (caps.search_tokens - used) // instances - caps.reply_tokens
    if share < 1:
        return RoundBudget(None, RoundStatus.STOPPED,
                           f"{caps.search_tokens - used} of {caps.search_tokens} search tokens left: "
                           f"no share for {instances} runs beyond {caps.reply_tokens} tokens of headroom each")
    return RoundBudget(caps.model_copy(update={"run_tokens": share}), RoundStatus.CUT,
                       f"per-run cap lowered from {caps.run_tokens} to {share}: "
                       f"{caps.search_tokens - used} search tokens left for {instances} runs")


def charged(store: Store, configuration: str) -> tuple[int, int]:
    """(tokens, requests) the round spent, as the channel measured them: the sum over its
    `generations` rows. A run skipped because an earlier round (or any generate) settled its
    key writes no row and costs nothing; a round resumed after a crash counts its rows from
    before the crash too."""
    rows = store.scan("generations").filter(pl.col("configuration") == configuration).select(
        "total_tokens", "requests").collect()
    return int(rows["total_tokens"].fill_null(0).sum()), int(rows["requests"].fill_null(0).sum())


def round_jsf(store: Store, configuration: str) -> float:
    """JSF of one configuration: the mean of the per-instance joint indicator `s`
    (tasks/score/metrics.py; the leaderboard's `jvr`), computed without rewriting `scores/`."""
    rows = instance_scores(store).filter(pl.col("configuration") == configuration)
    return float(rows["s"].mean()) if rows.height else 0.0


def round_feedback(store: Store, configurations: Sequence[str]) -> dict[str, str]:
    """What each round's suites did per instance, in words a proposer reads: whether each
    failed the buggy program and passed the reference, and how many valid (invalid)
    candidates it accepted (rejected). The store is scored once for all the rounds asked
    (a proposer is shown every earlier round, so once per round would grow with its square)."""
    scores = instance_scores(store).filter(pl.col("configuration").is_in(list(configurations)))
    return {configuration: _feedback(scores.filter(pl.col("configuration") == configuration).sort("instance_id"))
            for configuration in configurations}


def _feedback(rows: pl.DataFrame) -> str:
    """One round's lines of `round_feedback`, from its instance scores."""
    lines = []
    for r in rows.iter_rows(named=True):
        said = ["fails on the buggy program and passes the reference" if r["f"] == 1.0
                else "does not both fail on the buggy program and pass the reference"]
        if r["n_valid"]:
            said.append(f"accepts {round((r['a'] or 0) * r['n_valid'])} of {r['n_valid']} correct alternative fixes")
        if r["n_invalid"]:
            said.append(f"rejects {round((r['r'] or 0) * r['n_invalid'])} of {r['n_invalid']} wrong fixes")
        lines.append(f"- {r['instance_id']}: the suite {'; '.join(said)} (S = {r['s']:.0f})")
    return "\n".join(lines)


def best(rounds: Sequence[SearchRound]) -> SearchRound | None:
    """The round with the highest JSF; the earliest of a tie (it was found first, and
    spent no more)."""
    ran = [r for r in rounds if r.jsf is not None]
    return max(ran, key=lambda r: (r.jsf, -r.round)) if ran else None


def export(round_: SearchRound, path: Path) -> None:
    """The best strategy as the JSON file `testprism generate --strategy` reads."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(round_.strategy.as_json())


def table(rounds: Sequence[SearchRound], space: StrategySpace) -> list[dict]:
    """The history for display: round, proposer, the searched fields, JSF, tokens, status."""
    return [{"round": r.round, "proposer": r.proposer,
             **{name: getattr(r.strategy, name) for name in space.bounds},
             "jsf": r.jsf, "tokens": r.tokens, "cumulative": r.cumulative_tokens, "run cap": r.run_tokens_cap,
             "status": r.status.value} for r in rounds]

