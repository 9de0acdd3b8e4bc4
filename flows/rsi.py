"""The rsi flow: strategy search under a fixed inference budget (TestHelix's recursive
self-improvement). Each round proposes a strategy within the space's bounds, generates a
configuration with it (the generate flow, as a subflow), replays it (the replay flow) and
scores its JSF; the history is kept in the store's `searches`, so a rerun resumes after
the last stored round.

Search on curate's training split only: the search fits its strategy to these instances,
and the test split must stay unseen until the exported strategy is scored on it once.

Thin wiring: the budget, the proposers, the history and the best are tasks/generate/search.py
and tasks/generate/proposers.py.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from prefect import flow

from testprism.flows.generate import generate_flow
from testprism.flows.replay import replay_flow
from testprism.flows.runner import open_inputs
from testprism.tasks.execution.cluster import DaskCluster
from testprism.tasks.generate.generation import Endpoint, plan_generation
from testprism.tasks.generate.proposers import Proposal, propose_llm, propose_tpe
from testprism.tasks.generate.search import (RoundStatus, SearchRound, best, charged, configuration_of, export,
                                             history, record, round_budget, round_jsf, search_id)
from testprism.tasks.generate.strategy import StrategySpace, load_space
from testprism.tasks.generate.settings import GenerateSettings, Proposer, RsiSettings
from testprism.tasks.model.workdir import default_work_root
from testprism.tasks.replay.settings import ReplaySettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RsiSummary:
    search_id: str
    space: StrategySpace
    rounds: list[SearchRound]  #: the whole history, earlier runs' rounds included
    executed: int  #: rounds run by this call
    best: SearchRound | None
    export: str | None


def _proposal(space: StrategySpace, past: list[SearchRound], round_: int, proposer: Proposer, seed: int,
              endpoint: Endpoint | None, model: str) -> Proposal:
    if round_ == 1:
        return Proposal(space.strategy, "start")
    if proposer is Proposer.LLM:
        return propose_llm(space, past, round_, seed, endpoint, model)
    return Proposal(propose_tpe(space, past, round_, seed), "tpe")


@flow(name="rsi", log_prints=False)
def rsi_flow(
    benchmark: str,
    store: str,
    command: str,
    settings: RsiSettings,
    backend: str = "local",
    workers: int = 1,
    dask_address: str | None = None,
    dask_cluster: DaskCluster | None = None,
    work: str | None = None,
    unsafe: bool = False,
) -> RsiSummary:
    """Search `settings.rounds` rounds in all (stored ones included) on `benchmark` (the
    training split), and write the best strategy to `settings.export_to`. `settings`: the
    search's (tasks/generate/settings.py, each field's description in Prefect's run form)."""
    rounds, mode, tools, seed = settings.rounds, settings.mode, settings.tools, settings.seed
    model_url, api_key_env, export_to = settings.model_url, settings.api_key_env, settings.export_to
    chosen = load_space(settings.space)
    work_root = Path(work) if work else default_work_root()
    inputs = open_inputs(benchmark, store, (), backend, work_root, trusted=False, unsafe=unsafe)
    bench, target = inputs.benchmark, inputs.store
    search = search_id(chosen, command, mode, tools, bench.root)
    out = Path(store) / "rsi" / "bench"
    endpoint = Endpoint(model_url, api_key_env) if model_url else None
    past = history(target, search)
    log.info("rsi %s: %d rounds stored, up to %d in all; %d instances, search cap %d tokens", search[:8], len(past),
             rounds, len(bench.instances), chosen.caps.search_tokens)
    executed = 0
    while (not past or past[-1].status is not RoundStatus.STOPPED) and (past[-1].round if past else 0) < rounds:
        round_ = past[-1].round + 1 if past else 1
        name, started = configuration_of(search, round_), datetime.now(UTC)
        used = past[-1].cumulative_tokens if past else 0
        allowed = round_budget(chosen.caps, used, len(bench.instances))
        if allowed.caps is None:
            done = SearchRound(search, round_, name, "none", chosen.strategy, None, len(bench.instances), 0, 0, used,
                               0, chosen.caps.search_tokens, 0, started, allowed.status, allowed.note, ())
            log.warning("rsi round %d: stopped: %s", round_, allowed.note)
        else:
            proposal = _proposal(chosen, past, round_, settings.proposer, seed, endpoint,
                                 settings.proposer_model or chosen.strategy.model)
            strategy_file = Path(store) / "rsi" / "strategies" / f"{name}.json"
            strategy_file.parent.mkdir(parents=True, exist_ok=True)
            strategy_file.write_text(proposal.strategy.as_json())
            if allowed.note:
                log.info("rsi round %d: %s", round_, allowed.note)
            generate_flow(benchmark=benchmark, store=store, configuration=name, command=command, out=str(out),
                          settings=GenerateSettings(mode=mode, strategy=strategy_file, caps=allowed.caps, tools=tools,
                                                    model_url=model_url, api_key_env=api_key_env),
                          backend=backend, workers=workers, dask_address=dask_address, dask_cluster=dask_cluster,
                          work=work, unsafe=unsafe)
            replay_flow(benchmark=str(out), store=store, settings=ReplaySettings(configurations=(name,)),
                        backend=backend, workers=workers,
                        dask_address=dask_address, dask_cluster=dask_cluster, work=work, unsafe=unsafe)
            keys = tuple(s.key for s in plan_generation(bench, name, command, mode, proposal.strategy, allowed.caps,
                                                        tools))
            tokens, requests = charged(target, name)
            done = SearchRound(search, round_, name, proposal.proposer, proposal.strategy, round_jsf(target, name),
                               len(bench.instances), tokens, requests, used + tokens, allowed.caps.run_tokens,
                               chosen.caps.search_tokens, proposal.tokens, started, allowed.status,
                               "; ".join(n for n in (allowed.note, proposal.note) if n) or None, keys)
            executed += 1
            log.info("rsi round %d (%s): JSF %.3f, %d tokens (%d of %d in all)", round_, proposal.proposer, done.jsf,
                     tokens, done.cumulative_tokens, chosen.caps.search_tokens)
        record(target, done)
        past.append(done)
    top = best(past)
    if export_to and top is not None:
        export(top, export_to)
        log.info("rsi %s: best JSF %.3f (round %d) exported to %s", search[:8], top.jsf, top.round, export_to)
    return RsiSummary(search, chosen, past, executed, top, str(export_to) if export_to and top is not None else None)
