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
from testprism.tasks.execution.cluster import DaskCluster
from testprism.tasks.generate.generation import Endpoint
from testprism.tasks.generate.search import SearchRound, best, export, search_id
from testprism.tasks.generate.search_rounds import PROPOSERS, SearchPlacing, SearchSetup, run_search
from testprism.tasks.generate.strategy import Caps, StrategySpace, load_space
from testprism.tasks.generate.task_folder import Mode
from testprism.tasks.model.workdir import default_work_root
from testprism.tasks.replay.settings import ReplaySettings

log = logging.getLogger(__name__)

__all__ = ["PROPOSERS", "RsiSummary", "rsi_flow"]


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
    space: str | None = None,
    rounds: int = 6,
    mode: Mode = Mode.PLAIN,
    proposer: str = "tpe",
    tools: list[str] | None = None,
    model_url: str | None = None,
    api_key_env: str | None = "OPENAI_API_KEY",
    proposer_model: str | None = None,
    seed: int = 0,
    export_to: str | None = None,
    backend: str = "local",
    workers: int = 1,
    dask_address: str | None = None,
    dask_cluster: DaskCluster | None = None,
    work: str | None = None,
    unsafe: bool = False,
) -> RsiSummary:
    """Search `rounds` rounds in all (stored ones included) on `benchmark` (the training
    split), and write the best strategy to `export_to`."""
    if proposer not in PROPOSERS:
        raise ValueError(f"proposer {proposer!r}: one of {', '.join(PROPOSERS)}")
    if proposer == "llm" and not model_url:
        raise ValueError("the llm proposer needs model_url")
    chosen = load_space(Path(space) if space else None)
    mode = Mode(mode)
    work_root = Path(work) if work else default_work_root()
    inputs = open_inputs(benchmark, store, (), backend, work_root, trusted=False, unsafe=unsafe)
    bench, target = inputs.benchmark, inputs.store
    tool_paths = tuple(Path(t) for t in tools or ())
    search = search_id(chosen, command, mode, tool_paths, bench.root)
    out = Path(store) / "rsi" / "bench"
    endpoint = Endpoint(model_url, api_key_env) if model_url else None

    def generate(name: str, strategy_file: Path, caps: Caps) -> None:
        generate_flow(benchmark=benchmark, store=store, configuration=name, command=command, out=str(out),
                      mode=mode, strategy=str(strategy_file), caps=caps, tools=list(tools or ()),
                      model_url=model_url, api_key_env=api_key_env, backend=backend, workers=workers,
                      dask_address=dask_address, dask_cluster=dask_cluster, work=work, unsafe=unsafe)

    def replay(name: str) -> None:
        replay_flow(benchmark=str(out), store=store, settings=ReplaySettings(configurations=(name,)),
                    backend=backend, workers=workers,
                    dask_address=dask_address, dask_cluster=dask_cluster, work=work, unsafe=unsafe)

    setup = SearchSetup(search, chosen, command, mode, tool_paths, proposer, seed, endpoint, proposer_model)
    past, executed = run_search(target, Path(store) / "rsi" / "strategies", bench, setup, rounds,
                                SearchPlacing(generate, replay))
    top = best(past)
    if export_to and top is not None:
        export(top, Path(export_to))
        log.info("rsi %s: best JSF %.3f (round %d) exported to %s", search[:8], top.jsf, top.round, export_to)
    return RsiSummary(search, chosen, past, executed, top, export_to if top is not None else None)
