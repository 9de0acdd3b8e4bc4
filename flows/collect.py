"""The collect flow: candidate patches → labelled, deduplicated pools → panels.

Thin wiring (docs/collect.md): ingest and normalise (tasks.candidate) → set exact
duplicates and copies of the reference aside → gold validation (tasks.label) → label the
candidates of validated instances → set near duplicates aside within each label class →
choose panels (tasks.panel) → store `candidates` and `funnel` (the verification batches
write `verifications` as they go) → write the panels as a benchmark folder that
`testprism replay` runs unchanged.

Verifications run in coarse Prefect tasks (batches of whole instances, a bounded thread
pool inside each), on threads or a Dask cluster, as replay's runs do.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Optional

import pyarrow as pa
import typer
from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import quote

from testprism.flows import progress
from testprism.flows.errors import known_backend
from testprism.flows.replay import PatchFuzzOpt, batch_target, open_inputs, run_concurrency, task_runner
from testprism.storage import SCHEMAS, Store
from testprism.tasks.model.benchmark import Benchmark, Instance
from testprism.tasks.collect.candidate import (
    NEAR_DUPLICATE_COSINE,
    CandidatePatch,
    candidate_row,
    excluded,
    ingest,
    reference_keys,
    set_aside_duplicates,
    set_aside_near_duplicates,
)
from testprism.tasks.model.funnel import Excluded, Funnel, Stage
from testprism.tasks.model.outcome import Reason
from testprism.tasks.collect.label import GOLD_POLICY, LABEL_POLICY, GoldVerdict, apply_labels, gold_plan, gold_verdict, label_of
from testprism.tasks.collect.verification import Verification, candidate_states, execute, plan, stored_keys, stored_rows
from testprism.tasks.collect.panel import PanelChoice, PanelMode, PanelRule, select_panels, write_panel_benchmark
from testprism.tasks.execution.batch import Batch, ExecutionOptions, batches
from testprism.tasks.sandbox.base import Limits
from testprism.tasks.model.state import DEFAULT_FUZZ
from testprism.tasks.model.workdir import default_work_root

log = logging.getLogger(__name__)

#: Instances per panel-selection task: APTED takes up to seconds per pair of candidates.
PANEL_BATCH = 8
_UNLABELLED = (
    Reason.INSTANCE_QUARANTINED, Reason.PATCH_FAILED, Reason.CHECKS_PATCH_FAILED,
    Reason.TIMEOUT, Reason.OUTPUT_LIMIT, Reason.SANDBOX_ERROR, Reason.UNSTABLE,
    Reason.ENVIRONMENT_FAILED,
)


@dataclass(frozen=True)
class CollectSummary:
    flow_run: str
    funnel: list[str]  # one line per stage
    executed: int  # verifications run now; the others came from the store
    reused: int
    panels: int
    agreement: tuple[int, int]  # (agreeing, compared) with the sources' labels
    out: str | None


@task(name="verify-batch", retries=0, cache_policy=NO_CACHE)
def verify_batch(batch: Batch, options: ExecutionOptions) -> int:
    """One coarse unit: a batch of verifications on one worker, rows written as they finish."""
    return execute(batch.specs, options)


@task(name="select-panels", retries=0, cache_policy=NO_CACHE)
def panel_batch(instances: list[Instance], candidates: list[CandidatePatch], mode: PanelMode, rule: PanelRule,
                work_root: Path) -> list[PanelChoice]:
    return select_panels(instances, candidates, mode, rule, work_root)


def _verify(specs: Sequence[Verification], options: ExecutionOptions, store: Store, workers: int,
            dask_address: str | None) -> tuple[dict[str, dict], int]:
    """Run the verifications the store lacks; every planned row, and how many ran."""
    unique = {s.key: s for s in specs}
    stored = stored_keys(store)
    todo = [s for key, s in unique.items() if key not in stored]
    sink = progress.current()
    sink.start(len(todo), "verify")
    if todo:
        groups = batches(todo, batch_target(len(todo), workers))
        with task_runner(workers, dask_address) as runner:
            futures = [(runner.submit(verify_batch, {"batch": b, "options": options}), len(b)) for b in groups]
            for future, size in futures:
                future.result()
                sink.advance(size)
    return stored_rows(store, list(unique)), len(todo)


def _gold(bench: Benchmark, options: ExecutionOptions, store: Store, workers: int, dask_address: str | None
          ) -> tuple[list[GoldVerdict], int, int]:
    specs = {i.id: gold_plan(i, options) for i in bench.instances.values()}
    rows, ran = _verify([s for group in specs.values() for s in group], options, store, workers, dask_address)
    verdicts = [gold_verdict(bench.instances[iid], [rows[s.key] for s in group]) for iid, group in specs.items()]
    for verdict in verdicts:
        if not verdict.validated:
            log.warning("%s quarantined: %s: %s", verdict.instance_id, verdict.reason, verdict.detail)
    return verdicts, ran, len(rows) - ran


def _label(pool: list[CandidatePatch], validated: Sequence[Instance], options: ExecutionOptions, store: Store,
           workers: int, dask_address: str | None) -> tuple[list[CandidatePatch], int, int]:
    specs: list[Verification] = []
    for instance in validated:
        todo = {c.candidate_id: c.patch for c in pool if c.instance_id == instance.id and c.reason is None}
        specs += plan(instance, list(candidate_states(instance, todo).values()), options)
    rows, ran = _verify(specs, options, store, workers, dask_address)
    labels = {(s.instance.id, s.state.candidate_id or ""): label_of(s.instance, rows[s.key]) for s in specs}
    return apply_labels(pool, labels), ran, len(rows) - ran


def _panels(validated: Sequence[Instance], pool: list[CandidatePatch], mode: PanelMode, rule: PanelRule,
            work_root: Path, workers: int, dask_address: str | None) -> list[PanelChoice]:
    groups = [list(validated[i:i + PANEL_BATCH]) for i in range(0, len(validated), PANEL_BATCH)]
    with task_runner(workers, dask_address) as runner:
        futures = [runner.submit(panel_batch, {"instances": quote(g), "candidates": quote(pool), "mode": mode,
                                               "rule": rule, "work_root": work_root}) for g in groups]
        return [choice for future in futures for choice in future.result()]


def _agreement(pool: Sequence[CandidatePatch]) -> tuple[int, int]:
    compared = [c for c in pool if c.official_label and c.label]
    for cand in compared:
        if cand.label != cand.official_label:
            log.info("label differs from its source: %s/%s is %s, %s says %s (failed: %s)", cand.instance_id,
                     cand.candidate_id, cand.label, cand.origin, cand.official_label, ", ".join(cand.failed_checks))
    return sum(c.label == c.official_label for c in compared), len(compared)


@flow(name="collect", log_prints=False)
def collect_flow(
    benchmark: str,
    store: str,
    predictions: list[str] | None = None,
    diffs: list[str] | None = None,
    panel: PanelMode = PanelMode.TESTPRISM,
    out: str | None = None,
    backend: str = "local",
    workers: int = 1,
    dask_address: str | None = None,
    work: str | None = None,
    timeout_s: float = 300.0,
    near_duplicate: float = NEAR_DUPLICATE_COSINE,
    rule: PanelRule = PanelRule(),
    trusted: bool = False,
    unsafe: bool = False,
    patch_fuzz: int = DEFAULT_FUZZ,
) -> CollectSummary:
    work_root = Path(work) if work else default_work_root()
    inputs = open_inputs(benchmark, store, (), backend, work_root, trusted=trusted, unsafe=unsafe)
    bench, target = inputs.benchmark, inputs.store
    flow_run = f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"
    funnel = Funnel("collect", flow_run)
    options = ExecutionOptions(
        backend=backend, work_root=work_root, store_root=Path(store), limits=Limits(timeout_s=timeout_s),
        concurrency=run_concurrency(inputs.backend.default_concurrency(), workers, dask_address),
        trusted=trusted, unsafe=unsafe, replay_started=datetime.now(UTC),
    )

    ingested = ingest(bench, [Path(p) for p in predictions or ()], [Path(d) for d in diffs or ()])
    funnel.add(Stage("ingest", "candidate", len(ingested.candidates), tuple(
        Excluded(e.origin, e.kind, f"field {e.field}: {e.message}") for e in ingested.errors)))
    pool = set_aside_duplicates(ingested.candidates, reference_keys(bench))
    funnel.add(Stage("exact_dedup", "candidate", sum(c.reason is None for c in pool),
                     excluded(pool, (Reason.DUPLICATE, Reason.SAME_AS_REFERENCE))))

    verdicts, ran, reused = _gold(bench, replace(options, policy=replace(GOLD_POLICY, patch_fuzz=patch_fuzz)), target, workers, dask_address)
    funnel.add(Stage("gold_validation", "instance", sum(v.validated for v in verdicts), tuple(
        Excluded(v.instance_id, v.reason, v.detail) for v in verdicts if not v.validated)))
    validated = [bench.instances[v.instance_id] for v in verdicts if v.validated]
    quarantined = {v.instance_id for v in verdicts if not v.validated}
    pool = [replace(c, reason=Reason.INSTANCE_QUARANTINED) if c.reason is None and c.instance_id in quarantined
            else c for c in pool]

    pool, label_ran, label_reused = _label(pool, validated, replace(options, policy=replace(LABEL_POLICY, patch_fuzz=patch_fuzz)), target, workers,
                                           dask_address)
    funnel.add(Stage("verification", "candidate", sum(c.in_pool for c in pool), excluded(pool, _UNLABELLED)))
    pool = set_aside_near_duplicates(pool, near_duplicate)
    funnel.add(Stage("near_dedup", "candidate", sum(c.in_pool for c in pool),
                     excluded(pool, (Reason.NEAR_DUPLICATE,))))

    choices = _panels(validated, pool, PanelMode(panel), rule, work_root, workers, dask_address)
    funnel.add(Stage(f"panel_{PanelMode(panel).value}", "instance", sum(c.reason is None for c in choices), tuple(
        Excluded(c.instance_id, c.reason, c.detail) for c in choices if c.reason)))
    in_panel = {(c.instance_id, cid) for c in choices for cid in c.chosen}

    rows = []
    for instance in bench.instances.values():
        mine = [c for c in pool if c.instance_id == instance.id]
        states = candidate_states(instance, {c.candidate_id: c.patch for c in mine})
        rows += [candidate_row(c, flow_run, states[c.candidate_id].hash, (c.instance_id, c.candidate_id) in in_panel)
                 for c in mine]
    target.append("candidates", pa.Table.from_pylist(rows, schema=SCHEMAS["candidates"]))
    target.append("funnel", pa.Table.from_pylist(funnel.rows(), schema=SCHEMAS["funnel"]))
    for stage in funnel.stages:
        log.info("%s", stage.summary())
    if out:
        write_panel_benchmark(bench, choices, pool, Path(out))
    return CollectSummary(flow_run, [s.summary() for s in funnel.stages], ran + label_ran, reused + label_reused,
                          sum(c.reason is None for c in choices), _agreement(pool), out)


PredictionsOpt = Annotated[list[Path], typer.Option(
    help="SWE-bench prediction file (JSON lines, JSON list or preds.json); repeatable",
    exists=True, dir_okay=False, readable=True)]
DiffsOpt = Annotated[list[Path], typer.Option(help="folder of DIR/<instance_id>/<name>.diff; repeatable",
                                              exists=True, file_okay=False)]
PanelOpt = Annotated[PanelMode, typer.Option(
    help="testprism: reference + 4 valid + 5 invalid, chosen for diversity; pool: every deduplicated candidate")]
OutOpt = Annotated[Optional[Path], typer.Option(help="write the panels here as a benchmark folder to replay")]
NearOpt = Annotated[float, typer.Option(
    help="cosine of token counts at or above which two candidates of one label are near duplicates")]
DistanceOpt = Annotated[float, typer.Option(
    help="testprism panel: the valid candidates' mean pairwise AST distance must exceed it")]
JaccardOpt = Annotated[float, typer.Option(
    help="testprism panel: the most two invalid candidates' failed checks may overlap (Jaccard)")]


def collect_command(
    benchmark: Annotated[Path, typer.Argument(help="benchmark folder (instances/ with program, reference, checks)")],
    store: Annotated[Path, typer.Option(help="store root", file_okay=False)],
    predictions: PredictionsOpt = [],  # noqa: B006
    diffs: DiffsOpt = [],  # noqa: B006
    panel: PanelOpt = PanelMode.TESTPRISM,
    out: OutOpt = None,
    near_duplicate: NearOpt = NEAR_DUPLICATE_COSINE,
    min_valid_distance: DistanceOpt = PanelRule.min_valid_distance,
    max_invalid_jaccard: JaccardOpt = PanelRule.max_invalid_jaccard,
    backend: Annotated[str, typer.Option(help="sandbox backend: local (bubblewrap) or docker",
                                         callback=known_backend)] = "local",
    workers: Annotated[int, typer.Option(help="> 1: run batches on a local Dask cluster of this many workers")] = 1,
    dask_address: Annotated[Optional[str], typer.Option(help="scheduler address of an existing Dask cluster")] = None,
    work: Annotated[Optional[Path], typer.Option(help="working area for environments and states (a cache)")] = None,
    timeout: Annotated[float, typer.Option(help="wall-clock limit of one run of the checks, seconds")] = 300.0,
    unsafe_no_sandbox: Annotated[bool, typer.Option(help="run untrusted patches without isolation")] = False,
    patch_fuzz: PatchFuzzOpt = DEFAULT_FUZZ,
) -> None:
    """Ingest candidate patches, label them by the official checks, and choose panels."""
    from testprism.flows.cli import BUNDLED

    # Only the bundled benchmark's own code is trusted: patches from outside never are.
    trusted = benchmark.resolve() == BUNDLED and not predictions and not diffs
    open_inputs(str(benchmark), str(store), (), backend, work or default_work_root(), trusted=trusted,
                unsafe=unsafe_no_sandbox)
    summary = collect_flow(
        benchmark=str(benchmark), store=str(store), predictions=[str(p) for p in predictions],
        diffs=[str(d) for d in diffs], panel=panel, out=str(out) if out else None, backend=backend, workers=workers,
        dask_address=dask_address, work=str(work) if work else None, timeout_s=timeout, near_duplicate=near_duplicate,
        rule=PanelRule(min_valid_distance=min_valid_distance, max_invalid_jaccard=max_invalid_jaccard),
        trusted=trusted, unsafe=unsafe_no_sandbox, patch_fuzz=patch_fuzz,
    )
    agree, compared = summary.agreement
    log.info("collect %s: %d verifications run, %d reused from the store; %d panels%s", summary.flow_run,
             summary.executed, summary.reused, summary.panels, f" written to {summary.out}" if summary.out else "")
    if compared:
        log.info("labels agree with the sources' on %d of %d candidates (plausibility, not ground truth)",
                 agree, compared)
    if summary.out:
        log.info("next: testprism replay %s --store %s", summary.out, store)
