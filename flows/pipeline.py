"""The pipeline flow: curate (when configured) → check, the release gate (when configured) →
collect (when configured) → generate (when
configured) → replay → score → report, each stage the existing flow run as a subflow, every parameter from one config file
(tasks/pipeline/config.py; examples/pipeline.toml).

A rerun redoes nothing settled: every stage skips the keys its store holds, so a nightly
schedule costs only what changed. Thin wiring: no stage logic here.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from prefect import flow
from pydantic import BaseModel

from testprism.flows.check import check_flow
from testprism.flows.collect import collect_flow
from testprism.flows.curate import curate_flow
from testprism.flows.generate import generate_flow
from testprism.flows.replay import ReplaySummary, replay_flow
from testprism.flows.report import report_flow
from testprism.flows.score import score_flow
from testprism.tasks.collect.settings import CollectSettings
from testprism.tasks.gate.settings import CheckSettings
from testprism.tasks.generate.settings import GenerateSettings
from testprism.tasks.pipeline.config import load_pipeline
from testprism.tasks.replay.settings import ReplaySettings
from testprism.tasks.score.settings import ScoreSettings

S = TypeVar("S", bound=BaseModel)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PipelineSummary:
    store: str
    replay: ReplaySummary
    configurations: int  #: rows of the leaderboard
    report: str


def _settings(model: type[S], section: BaseModel) -> S:
    """A stage's settings object from its pipeline section (the settings plus what the stage
    reads and writes)."""
    return model(**{name: getattr(section, name) for name in model.model_fields})


@flow(name="pipeline", log_prints=False)
def pipeline_flow(config: str = "examples/pipeline.toml", store: str | None = None) -> PipelineSummary:
    """Run every configured stage of `config` in order; `store` replaces the config's store."""
    chosen = load_pipeline(Path(config), Path(store) if store else None)
    target, run = str(chosen.store), chosen.run
    if chosen.curate:
        # A pipeline reruns by design: the split is rewritten whole (the same inputs give the same split).
        curate_flow(config=str(chosen.curate.config), store=target, out=str(chosen.curate.out), overwrite=True,
                    run=run)
    if chosen.check:  # a row that fails the gate is left out by collect and replay (docs/gate.md)
        gate = check_flow(benchmark=str(chosen.check_benchmark), store=target,
                          settings=_settings(CheckSettings, chosen.check), run=run)
        log.info("check: %d of %d rows pass the gate", len(gate.verdicts) - len(gate.failed), len(gate.verdicts))
    if chosen.collect:
        stage = chosen.collect
        collect_flow(benchmark=str(chosen.collect_benchmark), store=target,
                     predictions=[str(p) for p in stage.predictions], diffs=[str(d) for d in stage.diffs],
                     out=str(stage.out), settings=_settings(CollectSettings, stage), run=run,
                     trusted=chosen.collect_trusted)
    if chosen.generate:
        stage = chosen.generate
        generate_flow(benchmark=str(chosen.generate_benchmark), store=target, configuration=stage.configuration,
                      command=stage.command, out=str(chosen.generate_out), settings=_settings(GenerateSettings, stage),
                      run=run)
    benchmark = str(chosen.replay_benchmark)
    replayed = replay_flow(benchmark=benchmark, store=target, settings=_settings(ReplaySettings, chosen.replay),
                           run=run, trusted=chosen.replay_trusted)
    log.info("replay: %d planned, %d already stored, %d executed; outcomes %s", replayed.planned, replayed.skipped,
             replayed.executed, replayed.outcomes or "{}")
    board = score_flow(store=target, settings=_settings(ScoreSettings, chosen.score),
                       benchmark=benchmark if chosen.score.coverage else None, panel_benchmark=benchmark, run=run,
                       trusted=chosen.replay_trusted)
    log.info("score: %d configurations on the leaderboard", board.height)
    report = report_flow(store=target, out=str(chosen.report_out), benchmark=benchmark)
    log.info("pipeline done: store %s, report %s", target, report)
    return PipelineSummary(target, replayed, board.height, report)
