"""The score flow: runs → per-instance indicators → leaderboard with bootstrap intervals,
paired comparisons, rank stability and per-source tables; written to `scores/` and
published as a Prefect table artifact."""

from __future__ import annotations

import logging

import polars as pl
from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.artifacts import create_table_artifact

from testprism.storage import Store, StoreError
from testprism.tasks.score.coverage.probe import measure_coverage
from testprism.tasks.score.coverage.summary import coverage_summary
from testprism.tasks.score.metrics import flake_table, instance_scores
from testprism.tasks.score.statistics import bootstrap_statistics, leaderboard_from_instance_scores, per_source_table
from testprism.tasks.model.workdir import default_work_root

log = logging.getLogger(__name__)


@task(name="measure-coverage", cache_policy=NO_CACHE)
def coverage_task(benchmark: str, store: str, work: str | None, backend: str, trusted: bool, unsafe: bool) -> pl.DataFrame:
    """One coarse unit: every suite once more on its reference state, under coverage."""
    return measure_coverage(benchmark, store, work or default_work_root(), backend, trusted=trusted, unsafe=unsafe)


def scorable_store(store: str) -> Store:
    """The store to score, refused (StoreError) when it is not there or no replay wrote its
    suites and panels. The CLI calls it before the flow starts, so that the mistake ends in
    one line rather than in Prefect's log of a failed flow run."""
    target = Store.existing(store)
    for dataset in ("suites", "panels"):
        if not target.parts(dataset):
            raise StoreError(f"{target.paths.dataset(dataset)}: field (folder): no {dataset} in the store; "
                             "run `testprism replay` first")
    return target


@flow(name="score")
def score_flow(
    store: str,
    replicates: int = 10_000,
    seed: int = 42,
    benchmark: str | None = None,
    work: str | None = None,
    backend: str = "local",
    trusted: bool = False,
    unsafe: bool = False,
) -> pl.DataFrame:
    """Score a store; with `benchmark`, also measure the suites' coverage of the reference
    change (ΔC, EC) and its correlation with joint validation."""
    target = scorable_store(store)
    scores = instance_scores(target)
    if scores.is_empty():
        raise StoreError(f"{store}: field suites: no suite is for an instance of the panels; "
                         "replay the benchmark the panels came from")
    stats = bootstrap_statistics(scores, replicates=replicates, seed=seed)
    board = leaderboard_from_instance_scores(scores).join(stats.intervals, on="configuration", how="left")
    tables = {
        "instance_scores": scores,
        "leaderboard": board,
        "per_source": per_source_table(scores),
        "comparisons": stats.comparisons,
        "rank_stability": stats.rank_stability,
        "flakes": flake_table(target),
    }
    if benchmark:
        tables["coverage_summary"] = coverage_summary(coverage_task(benchmark, store, work, backend, trusted, unsafe), scores)
    for name, table in tables.items():
        target.write_table(name, table.to_arrow())
    create_table_artifact(
        key="leaderboard",
        table=board.with_columns(pl.col(pl.Float64).round(4)).to_dicts(),
        description=f"testprism leaderboard of {store} ({replicates} bootstrap replicates, seed {seed})",
    )
    return board
