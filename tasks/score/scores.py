"""The score step: a replayed store → every score table, written together.

One writer for `scores/`: the tables of one scoring are computed from the same runs and
written as a set, so a leaderboard never sits beside intervals of another scoring.
(`scores/coverage` and `scores/candidate_coverage` are the coverage passes' own:
tasks/score/coverage/probe.py, candidates.py.)
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from testprism.storage import SCHEMAS, Store, StoreError
from testprism.tasks.gate.store import kept_by_gate
from testprism.tasks.score.curves import panel_curves, panel_distances
from testprism.storage.readers import latest_runs
from testprism.tasks.score.metrics import flake_table, instance_scores, mutant_candidates
from testprism.tasks.score.taxonomy import candidate_overlaps, failure_taxonomy, taxonomy_shares
from testprism.tasks.score.statistics import bootstrap_intervals, bootstrap_statistics, leaderboard_from_instance_scores


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


def leaderboard_by_provenance(store: Store, runs: pl.DataFrame, board: pl.DataFrame, replicates: int,
                              seed: int) -> pl.DataFrame:
    """The leaderboard with and without the mutants collect put into the panels, from the
    same runs and the same bootstrap seed: how much of a configuration's standing rests on
    rejecting generated faults rather than agents' wrong fixes. Empty when no panel holds
    a mutant (the leaderboard is then the only one)."""
    if mutant_candidates(store).is_empty():
        return pl.from_arrow(SCHEMAS["leaderboard_by_provenance"].empty_table())
    scores = instance_scores(store, runs, without_mutants=True)
    intervals = bootstrap_intervals(scores, replicates=replicates, seed=seed)
    without = leaderboard_from_instance_scores(scores).join(intervals, on="configuration", how="left")
    return pl.concat([board.select(pl.lit("with_mutants").alias("panel"), pl.all()),
                      without.select(pl.lit("without_mutants").alias("panel"), pl.all())], how="diagonal_relaxed")


def score_tables(store: Store, replicates: int, seed: int, benchmark: Path | str | None = None,
                 include_failed_gate: bool = False) -> dict[str, pl.DataFrame]:
    """Per-instance indicators, the leaderboard with its bootstrap intervals, paired
    comparisons, rank stability, per-source tables with their intervals, each source's
    JVR leader, the leaderboard with and without mutant candidates, distinguishability,
    flakes (every interval from one resample), panel-size curves and the failure taxonomy
    of every S_i = 0 (from `scores/coverage` and `scores/candidate_coverage` when the
    coverage passes wrote them: tasks/score/taxonomy.py). `benchmark`: the folder the store
    was replayed from, read for the candidates' patches (the curves' valid diversity, the
    taxonomy's overlaps); without it those are null. Instances whose newest release gate
    verdict is not ok are left out unless `include_failed_gate` (tasks/gate/store.py)."""
    runs = latest_runs(store)
    scores = instance_scores(store, runs)
    if scores.is_empty():
        raise StoreError(f"{store.paths.root}: field suites: no suite is for an instance of the panels; "
                         "replay the benchmark the panels came from")
    kept = kept_by_gate(store, scores["instance_id"].unique().to_list(), include_failed_gate, "score")
    scores = scores.filter(pl.col("instance_id").is_in(list(kept)))
    if scores.is_empty():
        raise StoreError(f"{store.paths.dataset('gate')}: field verdict: every scored instance failed the release "
                         "gate; fix the rows, or score with --include-failed-gate")
    stats = bootstrap_statistics(scores, replicates=replicates, seed=seed)
    board = leaderboard_from_instance_scores(scores).join(stats.intervals, on="configuration", how="left")
    coverage, own = (store.read_table(name) if store.paths.score_table(name).is_file() else None
                     for name in ("coverage", "candidate_coverage"))
    overlaps = candidate_overlaps(benchmark, scores["instance_id"].unique().to_list()) if benchmark else None
    taxonomy = failure_taxonomy(store, scores, coverage, overlaps, own, runs)
    return {
        "instance_scores": scores,
        "leaderboard": board,
        "leaderboard_by_provenance": leaderboard_by_provenance(store, runs, board, replicates, seed),
        "per_source": stats.per_source,
        "per_source_leaders": stats.per_source_leaders,
        "distinguishability": stats.distinguishability,
        "comparisons": stats.comparisons,
        "rank_stability": stats.rank_stability,
        "flakes": flake_table(store),
        "panel_curves": panel_curves(store, scores, runs, panel_distances(store, benchmark)),
        "failure_taxonomy": taxonomy,
        "failure_taxonomy_shares": taxonomy_shares(taxonomy),
    }


def write_scores(store: Store, tables: dict[str, pl.DataFrame]) -> None:
    for name, table in tables.items():
        store.write_table(name, table.to_arrow())
