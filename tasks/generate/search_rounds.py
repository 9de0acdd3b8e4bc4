"""rsi's search loop (TestHelix's recursive self-improvement under a fixed inference budget):
each round is admitted against what the search has left (`round_budget`), proposed (the
start, then TPE or the model: tasks/generate/proposers.py), generated and replayed, scored
by its JSF and recorded in `searches`; a rerun resumes after the last stored round, and a
stopped round ends the search.

A plain function of the store and two placing calls the flow hands it (generate a round's
configuration, replay it), so where batches run stays the flow's business.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from testprism.storage import Store
from testprism.tasks.generate.generation import Endpoint, plan_generation
from testprism.tasks.generate.proposers import Proposal, propose_llm, propose_tpe
from testprism.tasks.generate.search import (RoundStatus, SearchRound, charged, configuration_of, history, record,
                                             round_budget, round_feedback, round_jsf)
from testprism.tasks.generate.strategy import Caps, StrategySpace
from testprism.tasks.generate.task_folder import Mode
from testprism.tasks.model.benchmark import Benchmark

log = logging.getLogger(__name__)



@dataclass(frozen=True)
class SearchPlacing:
    """The flow's calls: generate a round's configuration (name, strategy file, caps) and
    replay it (name)."""

    generate: Callable[[str, Path, Caps], object]
    replay: Callable[[str], object]


@dataclass(frozen=True)
class SearchSetup:
    """What a search is: its identity's parts and how it proposes."""

    search: str  #: tasks/generate/search.py `search_id`
    space: StrategySpace
    command: str
    mode: Mode
    tools: tuple[Path, ...]
    proposer: str = "tpe"
    seed: int = 0
    endpoint: Endpoint | None = None  #: the llm proposer's (and the runs') endpoint
    proposer_model: str | None = None


def proposal(setup: SearchSetup, store: Store, past: list[SearchRound], round_: int) -> Proposal:
    """Round 1 is the start; then TPE, or the model with each earlier round's execution feedback."""
    if round_ == 1:
        return Proposal(setup.space.strategy, "start")
    if setup.proposer == "llm":
        ran = [r for r in past if r.jsf is not None]
        said = round_feedback(store, [r.configuration for r in ran])
        feedback = {r.round: said[r.configuration] for r in ran}
        return propose_llm(setup.space, past, round_, setup.seed, setup.endpoint,
                           setup.proposer_model or setup.space.strategy.model, feedback=feedback)
    return Proposal(propose_tpe(setup.space, past, round_, setup.seed), "tpe")


def run_search(store: Store, strategies: Path, bench: Benchmark, setup: SearchSetup, rounds: int,
               place: SearchPlacing) -> tuple[list[SearchRound], int]:
    """Search up to `rounds` rounds in all (stored ones included); (the whole history,
    rounds run by this call). A round's strategy file is written to `strategies`."""
    chosen = setup.space
    past = history(store, setup.search)
    log.info("rsi %s: %d rounds stored, up to %d in all; %d instances, search cap %d tokens", setup.search[:8],
             len(past), rounds, len(bench.instances), chosen.caps.search_tokens)
    executed = 0
    while (not past or past[-1].status is not RoundStatus.STOPPED) and (past[-1].round if past else 0) < rounds:
        round_ = past[-1].round + 1 if past else 1
        name, started = configuration_of(setup.search, round_), datetime.now(UTC)
        used = past[-1].cumulative_tokens if past else 0
        # the model proposer's reply counts against the cap as a run's does: admitted with
        # one reply of headroom for it, charged what it spent, then the runs admitted after it
        asks = round_ > 1 and setup.proposer == "llm"
        allowed = round_budget(chosen.caps, used + (chosen.caps.reply_tokens if asks else 0), len(bench.instances))
        proposed = proposal(setup, store, past, round_) if allowed.caps is not None else None
        if proposed is not None:
            used += proposed.tokens
            allowed = round_budget(chosen.caps, used, len(bench.instances))
        if allowed.caps is None or proposed is None:
            done = SearchRound(setup.search, round_, name, "none", chosen.strategy, None, len(bench.instances), 0, 0,
                               used, 0, chosen.caps.search_tokens, proposed.tokens if proposed else 0, started,
                               RoundStatus.STOPPED,
                               f"{allowed.note} (after {chosen.caps.reply_tokens} tokens kept for the proposer's reply)"
                               if asks and proposed is None else allowed.note, ())
            log.warning("rsi round %d: stopped: %s", round_, allowed.note)
        else:
            strategy_file = strategies / f"{name}.json"
            strategy_file.parent.mkdir(parents=True, exist_ok=True)
            strategy_file.write_text(proposed.strategy.as_json())
            if allowed.note:
                log.info("rsi round %d: %s", round_, allowed.note)
            place.generate(name, strategy_file, allowed.caps)
            place.replay(name)
            keys = tuple(s.key for s in plan_generation(bench, name, setup.command, setup.mode, proposed.strategy,
                                                        allowed.caps, setup.tools))
            tokens, requests = charged(store, name)
            done = SearchRound(setup.search, round_, name, proposed.proposer, proposed.strategy, round_jsf(store, name),
                               len(bench.instances), tokens, requests, used + tokens, allowed.caps.run_tokens,
                               chosen.caps.search_tokens, proposed.tokens, started, allowed.status,
                               "; ".join(n for n in (allowed.note, proposed.note) if n) or None, keys)
            executed += 1
            log.info("rsi round %d (%s): JSF %.3f, %d tokens (%d of %d in all)", round_, proposed.proposer, done.jsf,
                     tokens, done.cumulative_tokens, chosen.caps.search_tokens)
        record(store, done)
        past.append(done)
    return past, executed
