"""The collect flow: candidate patches → labelled, deduplicated pools → panels.

Thin wiring (docs/collect.md): ingest and normalise (tasks/collect/candidate.py) → set exact
duplicates and copies of the reference aside → gold validation (tasks/collect/verification.py,
label.py; rows the release gate failed quarantined too, tasks/gate/) → label the candidates
of validated instances → with `--mutants N`, mutants for the thin pools, labelled
the same way (tasks/collect/mutants.py) → set near duplicates aside within each label class →
choose panels (tasks/collect/panel.py) → store `candidates` and `funnel` (the verification batches
write `verifications` as they go) → write the panels as a benchmark folder that
`testprism replay` runs unchanged.

Verifications run through the stage driver (flows/driver.py): coarse Prefect tasks (batches
of whole instances, a bounded thread pool inside each), on threads or a Dask cluster, as
replay's runs do.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import quote

from testprism.flows.driver import drive
from testprism.flows.runner import Placement, open_inputs
from testprism.storage import Store
from testprism.tasks.model.benchmark import Benchmark, Instance
from testprism.tasks.collect.candidate import (
    CandidatePatch,
    ingest,
    reference_keys,
    set_aside_duplicates,
    set_aside_near_duplicates,
)
from testprism.tasks.model.funnel import Excluded, Funnel, Stage
from testprism.tasks.model.outcome import Reason
from testprism.tasks.collect import mutants, stages
from testprism.tasks.collect.label import GOLD_POLICY, LABEL_POLICY, GoldVerdict, gold_plan, gold_verdicts, label_plan, labelled
from testprism.tasks.collect.verification import Verification, VerifyJob, stored_keys, stored_rows
from testprism.tasks.collect.panel import PanelChoice, PanelMode, PanelRule, select_panels, write_panel_benchmark
from testprism.tasks.collect.settings import CollectSettings
from testprism.tasks.execution.batch import ExecutionOptions
from testprism.tasks.execution.cluster import DaskCluster
from testprism.tasks.gate.store import gated_verdicts
from testprism.tasks.model.patch_fuzz import DEFAULT_FUZZ
from testprism.tasks.model.workdir import WorkPaths, default_work_root

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


def verify(specs: Sequence[Verification], options: ExecutionOptions, store: Store, place: Placement
            ) -> tuple[dict[str, dict], int]:
    """Run the verifications the store lacks (the stage driver); every planned row, and how
    many ran. The gate's runs go through it too (flows/check.py)."""
    unique = {s.key: s for s in specs}
    stored = stored_keys(store)
    drive("verify", list(unique.values()), VerifyJob, options, place, key=lambda s: s.key, settled=stored)
    return stored_rows(store, list(unique)), sum(key not in stored for key in unique)


def _gold(bench: Benchmark, options: ExecutionOptions, store: Store, place: Placement
          ) -> tuple[list[GoldVerdict], int, int]:
    specs = {i.id: gold_plan(i, options) for i in bench.instances.values()}
    rows, ran = verify([s for group in specs.values() for s in group], options, store, place)
    verdicts = gold_verdicts(bench.instances, specs, rows)
    for verdict in verdicts:
        if not verdict.validated:
            log.warning("%s quarantined: %s: %s", verdict.instance_id, verdict.reason, verdict.detail)
    return verdicts, ran, len(rows) - ran


def _label(pool: list[CandidatePatch], validated: Sequence[Instance], options: ExecutionOptions, store: Store,
           place: Placement) -> tuple[list[CandidatePatch], int, int]:
    specs = label_plan(pool, validated, options)
    rows, ran = verify(specs, options, store, place)
    return labelled(pool, specs, rows), ran, len(rows) - ran


def _mutants(pool: list[CandidatePatch], validated: Sequence[Instance], limit: int, need: int, bench: Benchmark,
             options: ExecutionOptions, store: Store, place: Placement
             ) -> tuple[list[CandidatePatch], Stage, int, int]:
    """Mutants for the thin pools (fewer than `need` invalid candidates), through the same
    deduplication and labelling as every candidate; those the checks do not kill are set
    aside as possibly equivalent. Returns the whole pool (mutants last), the funnel's
    `mutation` stage, and how many verifications ran and were reused."""
    made = [mutants.generate(i, WorkPaths(options.work_root), limit)
            for i in mutants.thin_instances(pool, validated, need)]
    notes = [Excluded(g.instance_id, Reason.NO_MUTANTS, g.note) for g in made if not g.candidates]
    for note in notes:
        log.warning("%s: thin pool, no mutants: %s", note.item, note.detail)
    fresh = [c for g in made for c in g.candidates]
    merged = set_aside_duplicates([*pool, *fresh], reference_keys(bench))
    specs = label_plan(merged[len(pool):], validated, options)
    rows, ran = verify(specs, options, store, place)
    merged = mutants.set_aside_equivalent(labelled(merged, specs, rows))
    return merged, stages.mutation_stage(merged[len(pool):], notes), ran, len(rows) - ran


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
    backend: str = "local",
    workers: int = 1,
    dask_address: str | None = None,
    work: str | None = None,
    trusted: bool = False,
    unsafe: bool = False,
    patch_fuzz: int = DEFAULT_FUZZ,
    dask_cluster: DaskCluster | None = None,
) -> CollectSummary:
    """`settings`: what the collect does (tasks/collect/settings.py, each field's description
    in Prefect's run form); `predictions`, `diffs`: the candidates it reads besides the
    benchmark's own; the rest: where it runs, as for every stage. `settings.mutant_limit` > 0:
    up to that many mutants of each instance whose pool holds fewer invalid candidates than
    the TestPrism panel needs (tasks/collect/mutants.py)."""
    place = Placement(workers, dask_address, dask_cluster)
    work_root = Path(work) if work else default_work_root()
    inputs = open_inputs(benchmark, store, (), backend, work_root, trusted=trusted, unsafe=unsafe)
    bench, target = inputs.benchmark, inputs.store
    flow_run = f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"
    funnel = Funnel("collect", flow_run)
    options = ExecutionOptions(
        backend=backend, work_root=work_root, store_root=Path(store), limits=settings.limits(),
        concurrency=place.concurrency(inputs.backend.default_concurrency()),
        trusted=trusted, unsafe=unsafe, replay_started=datetime.now(UTC),
    )

    ingested = ingest(bench, [Path(p) for p in predictions or ()], [Path(d) for d in diffs or ()])
    funnel.add(stages.ingest_stage(ingested))
    pool = set_aside_duplicates(ingested.candidates, reference_keys(bench))
    funnel.add(stages.exact_dedup_stage(pool))

    gold_options = replace(options, policy=replace(GOLD_POLICY, patch_fuzz=patch_fuzz))
    verdicts, ran, reused = _gold(bench, gold_options, target, place)
    verdicts = gated_verdicts(target, verdicts, settings.include_failed_gate)
    funnel.add(stages.gold_stage(verdicts))
    validated = [bench.instances[v.instance_id] for v in verdicts if v.validated]
    pool = stages.quarantine(pool, verdicts)

    label_options = replace(options, policy=replace(LABEL_POLICY, patch_fuzz=patch_fuzz))
    pool, label_ran, label_reused = _label(pool, validated, label_options, target, place)
    funnel.add(stages.verification_stage(pool))
    rule = settings.rule()
    if settings.mutant_limit:
        pool, stage, mutant_ran, mutant_reused = _mutants(pool, validated, settings.mutant_limit, rule.invalid, bench,
                                                          label_options, target, place)
        funnel.add(stage)
        label_ran, label_reused = label_ran + mutant_ran, label_reused + mutant_reused
    pool = set_aside_near_duplicates(pool, settings.near_duplicate)
    funnel.add(stages.near_dedup_stage(pool))

    choices = _panels(validated, pool, settings.panel, rule, work_root, place)
    funnel.add(stages.panel_stage(choices, settings.panel))

    stages.record(target, bench, pool, choices, funnel)
    stages.restored(pool)
    for stage in funnel.stages:
        log.info("%s", stage.summary())
    if out:
        write_panel_benchmark(bench, choices, pool, Path(out))
    return CollectSummary(flow_run, [s.summary() for s in funnel.stages], ran + label_ran, reused + label_reused,
                          sum(c.reason is None for c in choices), stages.agreement(pool), out)
