"""The crossval flow (TestHelix: heterogeneous synthesis + peer cross-validation): K agents
each write a test and a repair per instance; every test runs on buggy, reference and every
repair; over-restrictive and weak tests are flagged, their agents asked again with the
disagreeing repair and output (within what their first run left of the caps), and the
validated tests of each instance merge into one suite.

Thin wiring: generation, replay and verification batches run through the stage driver
(flows/driver.py); the rounds are tasks/generate/crossval_rounds.py's, the rules
tasks/generate/crossval.py's and the semantic review tasks/generate/review.py's.
"""

from __future__ import annotations

import logging
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from prefect import flow

from testprism.flows.driver import drive
from testprism.flows.generate import run_generations
from testprism.flows.runner import Placement, open_stage
from testprism.storage import Store
from testprism.tasks.collect.label import LABEL_POLICY
from testprism.tasks.collect.verification import Verification, VerifyJob, stored_keys, stored_rows
from testprism.tasks.execution.batch import ExecutionOptions
from testprism.tasks.execution.run_settings import RunSettings
from testprism.tasks.generate import crossval as pcv
from testprism.tasks.generate.benchmark_out import write_generated
from testprism.tasks.generate.crossval import kept_keys
from testprism.tasks.generate.crossval_config import CrossvalConfig, load_crossval
from testprism.tasks.generate.crossval_rounds import Placing, cross_validate
from testprism.tasks.generate.generation import Endpoint, GenerationSpec, plan_generation, settled_generations
from testprism.tasks.generate.strategy import load_strategy
from testprism.tasks.replay.runs import ReplayJob, RunSpec, finished_keys, pending_runs, record_reused

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CrossvalSummary:
    instances: int
    verdicts: dict[str, dict[str, int]]  #: round → verdict → tests
    merged: int  #: instances with a merged suite
    out: str


def _run(specs: list[RunSpec], options: ExecutionOptions, place: Placement) -> None:
    todo, _ = record_reused(pending_runs(specs, finished_keys(Store(options.store_root))), options)
    drive("replay", todo, ReplayJob, options, place)


def _verify(checks: list[Verification], options: ExecutionOptions, place: Placement) -> dict[str, dict]:
    store = Store(options.store_root)
    drive("verify", list({v.key: v for v in checks}.values()), VerifyJob, options, place, key=lambda v: v.key,
          settled=stored_keys(store))
    return stored_rows(store, [v.key for v in checks])


@flow(name="crossval", log_prints=False)
def crossval_flow(store: str, config: str | None = None, settings: CrossvalConfig | None = None,
                  run: RunSettings = RunSettings()) -> CrossvalSummary:
    """Cross-validate the agents of `config` (a crossval config file, its paths relative to
    it) or of `settings` (the same fields given whole, as a deployment's run form shows
    them; paths relative to the working directory): one of the two. `run`: where it runs,
    as for every stage."""
    if (config is None) == (settings is None):
        raise ValueError("crossval takes a config file or its settings: give one")
    chosen = load_crossval(Path(config)) if config is not None else settings
    stage = open_stage(str(chosen.benchmark), store, run)
    place, options = stage.place, stage.options
    bench, target = stage.inputs.benchmark, stage.inputs.store
    endpoint = Endpoint(chosen.model_url, chosen.api_key_env) if chosen.model_url else None
    specs: list[GenerationSpec] = []
    for agent in chosen.agents:
        strategy = load_strategy(agent.strategy).model_copy(update={"repair": True})
        specs += plan_generation(bench, agent.name, agent.command, agent.mode or chosen.mode, strategy, chosen.caps,
                                 agent.tools)
    run_generations(specs, options, endpoint, place, chosen, run)
    peers = pcv.peers_of(target, specs, kept_keys(specs, settled_generations(target)))
    check_options = replace(options, policy=replace(LABEL_POLICY, patch_fuzz=options.policy.patch_fuzz))
    placing = Placing(run=lambda runs: _run(runs, options, place),
                      verify=lambda checks: _verify(checks, check_options, place),
                      generate=lambda again: run_generations(again, options, endpoint, place))
    done = cross_validate(target, bench.instances, peers, chosen.feedback_rounds, options, check_options, placing,
                          chosen.review_config(), chosen.rule)
    peers, verdicts = done.peers, done.verdicts
    target.write_table("crossval_matrix", done.matrix.to_arrow())
    target.write_table("crossval_flags", done.flags.to_arrow())
    for agent in chosen.agents:  # each agent's final suites, as a configuration of their own
        write_generated(bench, agent.name, {i: g.suite.folder for i, group in peers.items() for g in group
                                            if g.name == agent.name}, chosen.out)
    validated = done.validated
    with tempfile.TemporaryDirectory(dir=run.work_root) as staging:
        merged = {i: Path(staging) / i for i, group in peers.items()
                  if pcv.write_merged(group, {n for (j, n) in validated if j == i}, Path(staging) / i)}
        write_generated(bench, chosen.merged, merged, chosen.out)
    log.info("crossval: %d instances, %d with a merged suite (%s) in %s", len(peers), len(merged), chosen.merged,
             chosen.out)
    return CrossvalSummary(len(peers), verdicts, len(merged), str(chosen.out))
