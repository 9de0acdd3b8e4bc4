"""The score flow: runs → per-instance indicators → leaderboard with bootstrap intervals,
paired comparisons, rank stability and per-source tables; written to `scores/` and
published as a Prefect table artifact."""

from __future__ import annotations

import logging

import polars as pl
from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.artifacts import create_table_artifact

from testprism.storage import Store
from testprism.tasks.coverage import coverage_summary, measure_coverage
from testprism.tasks.metrics import flake_table, instance_scores
from testprism.tasks.statistics import bootstrap_statistics, leaderboard_from_instance_scores, per_source_table
from testprism.tasks.workdir import default_work_root

log = logging.getLogger(__name__)


@task(name="measure-coverage", cache_policy=NO_CACHE)
def coverage_task(benchmark: str, store: str, work: str | None, backend: str, trusted: bool, unsafe: bool) -> pl.DataFrame:
    """One coarse unit: every suite once more on its reference state, under coverage."""
    return measure_coverage(benchmark, store, work or default_work_root(), backend, trusted=trusted, unsafe=unsafe)


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
    target = Store(store)
    scores = instance_scores(target)
    if scores.is_empty():
        raise ValueError(f"{store}: no suites or panels in the store; run `testprism replay` first")
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
