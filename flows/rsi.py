"""The rsi flow: strategy search under a fixed inference budget (TestHelix's recursive
self-improvement). Each round proposes a strategy within the space's bounds, generates a
configuration with it (the generate flow, as a subflow), replays it (the replay flow) and
scores its JSF; the history is kept in the store's `searches`, so a rerun resumes after
the last stored round.

Search on curate's training split only: the search fits its strategy to these instances,
and the test split must stay unseen until the exported strategy is scored on it once.

Thin wiring: the loop is tasks/generate/search_rounds.py's (the budget, the history and the
best tasks/generate/search.py's, the proposers tasks/generate/proposers.py's); the flow hands
it the generate and replay subflows.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from prefect import flow

from testprism.flows.generate import generate_flow
from testprism.flows.replay import replay_flow
from testprism.flows.runner import open_inputs
from testprism.tasks.execution.run_settings import RunSettings
from testprism.tasks.generate.generation import Endpoint
from testprism.tasks.generate.search import SearchRound, best, export, search_id
from testprism.tasks.generate.search_rounds import SearchPlacing, SearchSetup, run_search
from testprism.tasks.generate.strategy import Caps, StrategySpace, load_space
from testprism.tasks.generate.settings import GenerateSettings, RsiSettings
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


@flow(name="rsi", log_prints=False)
def rsi_flow(
    benchmark: str,
    store: str,
    command: str,
    settings: RsiSettings,
    run: RunSettings = RunSettings(),
) -> RsiSummary:
    """Search `settings.rounds` rounds in all (stored ones included) on `benchmark` (the
    training split), and write the best strategy to `settings.export_to`. `settings`: the
    search's (tasks/generate/settings.py, each field's description in Prefect's run form);
    `run`: where its generations and replays run, as for every stage."""
    rounds, mode, tools, seed = settings.rounds, settings.mode, settings.tools, settings.seed
    model_url, api_key_env, export_to = settings.model_url, settings.api_key_env, settings.export_to
    chosen = load_space(settings.space)
    inputs = open_inputs(benchmark, store, (), run, trusted=False)
    bench, target = inputs.benchmark, inputs.store
    search = search_id(chosen, command, mode, tools, bench.root)
    out = Path(store) / "rsi" / "bench"
    endpoint = Endpoint(model_url, api_key_env) if model_url else None

    def generate(name: str, strategy_file: Path, caps: Caps) -> None:
        generate_flow(benchmark=benchmark, store=store, configuration=name, command=command, out=str(out),
                      settings=GenerateSettings(mode=mode, strategy=strategy_file, caps=caps, tools=tools,
                                                model_url=model_url, api_key_env=api_key_env),
                      run=run)

    def replay(name: str) -> None:
        replay_flow(benchmark=str(out), store=store, settings=ReplaySettings(configurations=(name,)), run=run)

    setup = SearchSetup(search, chosen, command, mode, tuple(tools), str(settings.proposer), seed, endpoint,
                        settings.proposer_model)
    past, executed = run_search(target, Path(store) / "rsi" / "strategies", bench, setup, rounds,
                                SearchPlacing(generate, replay))
    top = best(past)
    if export_to and top is not None:
        export(top, export_to)
        log.info("rsi %s: best JSF %.3f (round %d) exported to %s", search[:8], top.jsf, top.round, export_to)
    return RsiSummary(search, chosen, past, executed, top, str(export_to) if export_to and top is not None else None)
