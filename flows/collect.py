"""The collect flow: candidate patches → labelled, deduplicated pools → panels.

Thin wiring (docs/collect.md): the funnel itself is tasks/collect/collection.py, plain
functions; this flow opens the inputs, hands it how verifications run (the stage driver,
flows/driver.py: coarse Prefect tasks, batches of whole instances with a bounded thread pool
inside each, on threads or a Dask cluster, as replay's runs do), how panels are chosen
(`select-panels` tasks) and the release gate's say (tasks/gate/), then stores `candidates`
and `funnel` (the verification batches write `verifications` as they go) and writes the
panels as a benchmark folder that `testprism replay` runs unchanged.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import quote

from testprism.flows.driver import drive
from testprism.flows.runner import Placement, open_stage
from testprism.storage import Store
from testprism.tasks.collect import stages
from testprism.tasks.collect.candidate import CandidatePatch
from testprism.tasks.collect.collection import collect
from testprism.tasks.collect.panel import PanelChoice, PanelMode, PanelRule, select_panels, write_panel_benchmark
from testprism.tasks.collect.settings import CollectSettings
from testprism.tasks.collect.verification import Verification, VerifyJob, stored_keys, stored_rows
from testprism.tasks.execution.batch import ExecutionOptions
from testprism.tasks.execution.run_settings import RunSettings
from testprism.tasks.gate.store import gated_verdicts
from testprism.tasks.model.benchmark import Instance

log = logging.getLogger(__name__)

#: Instances per panel-selection task: APTED takes up to seconds per pair of candidates.
PANEL_BATCH = 8


@dataclass(frozen=True)
class CollectSummary:
    flow_run: str
    funnel: list[str]  # one line per stage
    executed: int  # verifications run now; the others came from the store
    reused: int
    panels: int
    agreement: tuple[int, int]  # (agreeing, compared) with the sources' labels
    out: str | None


@task(name="select-panels", retries=0, cache_policy=NO_CACHE)
def panel_batch(instances: list[Instance], candidates: list[CandidatePatch], mode: PanelMode, rule: PanelRule,
                work_root: Path) -> list[PanelChoice]:
    return select_panels(instances, candidates, mode, rule, work_root)


def verify(specs: Sequence[Verification], options: ExecutionOptions, store: Store, place: Placement,
           settings: object = None, run: RunSettings | None = None) -> tuple[dict[str, dict], int]:
    """Run the verifications the store lacks (the stage driver); every planned row, and how
    many ran. The gate's runs go through it too (flows/check.py); `settings` and `run`, the
    calling stage's, are stored with what the runs were given."""
    unique = {s.key: s for s in specs}
    stored = stored_keys(store)
    drive("verify", list(unique.values()), VerifyJob, options, place, key=lambda s: s.key, settled=stored,
          settings=settings, run=run)
    return stored_rows(store, list(unique)), sum(key not in stored for key in unique)


def _panels(validated: Sequence[Instance], pool: list[CandidatePatch], mode: PanelMode, rule: PanelRule,
            work_root: Path, place: Placement) -> list[PanelChoice]:
    groups = [list(validated[i:i + PANEL_BATCH]) for i in range(0, len(validated), PANEL_BATCH)]
    with place.task_runner() as runner:
        futures = [runner.submit(panel_batch, {"instances": quote(g), "candidates": quote(pool), "mode": mode,
                                               "rule": rule, "work_root": work_root}) for g in groups]
        return [choice for future in futures for choice in future.result()]


@flow(name="collect", log_prints=False)
def collect_flow(
    benchmark: str,
    store: str,
    predictions: list[str] | None = None,
    diffs: list[str] | None = None,
    out: str | None = None,
    settings: CollectSettings = CollectSettings(),
    run: RunSettings = RunSettings(),
    trusted: bool = False,
) -> CollectSummary:
    """`settings`: what the collect does (tasks/collect/settings.py, each field's description
    in Prefect's run form); `predictions`, `diffs`: the candidates it reads besides the
    benchmark's own; `run`: where it runs, as for every stage. `settings.mutant_limit` > 0:
    up to that many mutants of each instance whose pool holds fewer invalid candidates than
    the TestPrism panel needs (tasks/collect/mutants.py)."""
    stage = open_stage(benchmark, store, run, trusted=trusted, limits=settings.limits())
    place, options, bench, target = stage.place, stage.options, stage.inputs.benchmark, stage.inputs.store
    collection = collect(
        bench, [Path(p) for p in predictions or ()], [Path(d) for d in diffs or ()], settings, options,
        f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}",
        verify=lambda specs, opts: verify(specs, opts, target, place, settings, run),
        gate=lambda verdicts: gated_verdicts(target, verdicts, settings.include_failed_gate),
        choose_panels=lambda validated, pool, mode, rule: _panels(validated, pool, mode, rule, run.work_root, place),
    )
    funnel, pool, choices = collection.funnel, collection.pool, collection.choices
    stages.record(target, bench, pool, choices, funnel)
    stages.restored(pool)
    for stage in funnel.stages:
        log.info("%s", stage.summary())
    if out:
        write_panel_benchmark(bench, choices, pool, Path(out))
    return CollectSummary(funnel.flow_run, [s.summary() for s in funnel.stages], collection.executed,
                          collection.reused, sum(c.reason is None for c in choices), stages.agreement(pool), out)
