"""The generate flow: an agent command per instance in the sandbox → suites kept in the store
→ `OUT/suites/<configuration>/`, a benchmark that replay runs unchanged.

Thin wiring: plan (tasks/generate/generation.py) → the stage driver (flows/driver.py) skips
settled keys and places batches as coarse Prefect tasks on threads or Dask → the benchmark
of generated suites assembled from the store.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from prefect import flow

from testprism.flows.driver import drive
from testprism.flows.runner import Placement, open_stage
from testprism.storage import Store
from testprism.tasks.execution.batch import ExecutionOptions
from testprism.tasks.execution.run_settings import RunSettings
from testprism.tasks.generate.benchmark_out import write_generated
from testprism.tasks.generate.generation import (Endpoint, GenerateJob, GenerationSpec, kept_suites, plan_generation,
                                                 settled_generations, suite_folders)
from testprism.tasks.generate.settings import GenerateSettings
from testprism.tasks.generate.strategy import load_strategy

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GenerateSummary:
    planned: int
    skipped: int
    executed: int
    outcomes: dict[str, int]  #: "ok" or the reason a suite was not kept
    suites: int  #: suites of the configuration in `out`
    out: str


def run_generations(specs: list[GenerationSpec], options: ExecutionOptions, endpoint: Endpoint | None,
                    place: Placement, settings: object = None, run: RunSettings | None = None) -> tuple[int, dict[str, int]]:
    """Execute the runs the store has not settled (the stage driver); (executed, outcomes).
    Shared by generate, crossval's feedback round and rsi."""
    totals = drive("generate", specs, partial(GenerateJob, endpoint=endpoint), options, place,
                   key=lambda s: s.key, settled=settled_generations(Store(options.store_root)),
                   failed=lambda outcome: outcome != "ok", settings=settings, run=run)
    return totals.executed, totals.outcomes


@flow(name="generate", log_prints=False)
def generate_flow(
    benchmark: str,
    store: str,
    configuration: str,
    command: str,
    out: str | None = None,
    settings: GenerateSettings = GenerateSettings(),
    run: RunSettings = RunSettings(),
    trusted: bool = False,
) -> GenerateSummary:
    """Run `command` on every instance's buggy program (in the sandbox, the task folder at
    tmp/.task) and write the suites it leaves to `out` (default: the benchmark itself) as
    `configuration`. `settings`: what the runs are given (tasks/generate/settings.py, each
    field's description in Prefect's run form); `run`: where it runs, as for every stage."""
    stage = open_stage(benchmark, store, run, trusted=trusted)
    inputs, place, options = stage.inputs, stage.place, stage.options
    bench = inputs.benchmark
    specs = plan_generation(bench, configuration, command, settings.mode, load_strategy(settings.strategy),
                            settings.caps, settings.tools, settings.instances)
    endpoint = Endpoint(settings.model_url, settings.api_key_env) if settings.model_url else None
    before = settled_generations(inputs.store)
    log.info("%d generation runs planned, %d already stored, %d to execute (backend %s, isolation %s, model %s)",
             len(specs), sum(s.key in before for s in specs), sum(s.key not in before for s in specs), run.backend,
             inputs.isolation, settings.model_url or "none")
    executed, outcomes = run_generations(specs, options, endpoint, place, settings, run)
    target = Path(out) if out else bench.root
    kept = kept_suites(specs, settled_generations(inputs.store))
    suites = write_generated(bench, configuration, suite_folders(inputs.store, kept), target)
    log.info("generate %s: %d executed, outcomes %s; %d suites in %s", configuration, executed, outcomes or "{}",
             suites, target)
    return GenerateSummary(len(specs), len(specs) - executed, executed, outcomes, suites, str(target))
