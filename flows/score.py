"""The score flow: runs → per-instance indicators → leaderboard with bootstrap intervals,
paired comparisons, rank stability and per-source tables; written to `scores/` and
published as a Prefect table artifact."""

from __future__ import annotations

import logging

import polars as pl
from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.artifacts import create_table_artifact

from testprism.tasks.score.coverage.candidates import measure_candidate_coverage
from testprism.tasks.score.coverage.probe import measure_coverage
from testprism.tasks.score.coverage.summary import coverage_summary
from testprism.tasks.score.scores import scorable_store, score_tables, write_scores
from testprism.tasks.model.workdir import default_work_root

log = logging.getLogger(__name__)


@task(name="measure-coverage", cache_policy=NO_CACHE)
def coverage_task(benchmark: str, store: str, work: str | None, backend: str, trusted: bool, unsafe: bool) -> pl.DataFrame:
    """One coarse unit: every suite once more on its reference state, under coverage."""
    return measure_coverage(benchmark, store, work or default_work_root(), backend, trusted=trusted, unsafe=unsafe)


@task(name="measure-candidate-coverage", cache_policy=NO_CACHE)
def candidate_coverage_task(benchmark: str, store: str, work: str | None, backend: str, trusted: bool,
                            unsafe: bool) -> pl.DataFrame:
    """One coarse unit: each suite under coverage on every invalid candidate it accepted
    (the failure taxonomy's coverage-gap rule)."""
    return measure_candidate_coverage(benchmark, store, work or default_work_root(), backend, trusted=trusted,
                                      unsafe=unsafe)


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
    panel_benchmark: str | None = None,
) -> pl.DataFrame:
    """Score a store; with `benchmark`, also measure the suites' coverage of the reference
    change (ΔC, EC), its correlation with joint validation, and, on each invalid candidate a
    suite accepted, of the lines where it differs from the reference; then place every
    S_i = 0 in the failure taxonomy from those and the benchmark's diffs. The panel-size curves and the
    taxonomy read patches from `panel_benchmark` (default: `benchmark`); nothing is run for
    them."""
    target = scorable_store(store)
    coverage = coverage_task(benchmark, store, work, backend, trusted, unsafe) if benchmark else None
    if benchmark:
        candidate_coverage_task(benchmark, store, work, backend, trusted, unsafe)
    # the taxonomy reads the coverage just written
    tables = score_tables(target, replicates, seed, panel_benchmark or benchmark)
    if coverage is not None:
        tables["coverage_summary"] = coverage_summary(coverage, tables["instance_scores"])
    write_scores(target, tables)
    board = tables["leaderboard"]
    create_table_artifact(
        key="leaderboard",
        table=board.with_columns(pl.col(pl.Float64).round(4)).to_dicts(),
        description=f"testprism leaderboard of {store} ({replicates} bootstrap replicates, seed {seed})",
    )
    return board
