"""Per-instance indicators of the joint metrics (README.md, Metrics), from the store's runs.

The leaderboard and its statistics are computed from these by `tasks.statistics`.

Denominators are the released pools: the grid of expected runs is `suites` × `panels`, and
a run that is missing or unresolved (`E`) counts as neither acceptance nor rejection but
never leaves its denominator.
"""

from __future__ import annotations

import logging

import polars as pl
from scipy.stats import binomtest

from testprism.storage import Store
from testprism.storage.readers import latest_runs

log = logging.getLogger(__name__)


def mutant_candidates(store: Store) -> pl.DataFrame:
    """(instance_id, candidate_id) of every panel candidate collect made as a mutant."""
    return (store.scan("panels").filter(pl.col("provenance") == "mutant")
            .select("instance_id", "candidate_id").unique().sort("instance_id", "candidate_id").collect())


def pools(store: Store, without_mutants: bool = False) -> pl.LazyFrame:
    """Every (configuration, instance) the leaderboard is owed, with its pool sizes: the
    released pools are the denominators, whatever the runs say. `without_mutants`: the
    pools as if collect had made no mutant (their candidates leave the denominators)."""
    panels = store.scan("panels").unique(["instance_id", "state", "candidate_id"])
    if without_mutants:
        panels = panels.filter(pl.col("provenance").fill_null("") != "mutant")
    sizes = panels.group_by("instance_id").agg(
        pl.first("source"),
        n_valid=(pl.col("label") == "valid").sum().cast(pl.Int32),
        n_invalid=(pl.col("label") == "invalid").sum().cast(pl.Int32),
    )
    suites = store.scan("suites").select("configuration", "instance_id").unique()
    return suites.join(sizes, on="instance_id")


def instance_scores(store: Store, runs: pl.DataFrame | None = None, without_mutants: bool = False) -> pl.DataFrame:
    """Per configuration × instance: f, a, r, s, d and the pool sizes (`runs`: `latest_runs`,
    when the caller already has it). `without_mutants`: the runs on mutant candidates and
    their places in the pools left out, so the same runs score the panels without them.

    Counts over the runs only (no grid of expected runs is materialised): a missing run
    adds to no count, so it acts as `E` while its pool size stays in the denominator.
    d, the share of (valid, invalid) candidate pairs the suite separates (accepts the
    valid one, rejects the invalid one), is a product of counts, no pair is enumerated:
    (valid `P`) × (invalid `F`) / (n_valid × n_invalid), null when either pool is empty."""
    outcome, state, label = pl.col("outcome"), pl.col("state"), pl.col("label")
    runs = latest_runs(store) if runs is None else runs
    if without_mutants:  # buggy and reference runs have no candidate id, so no null key matches
        runs = runs.join(mutant_candidates(store), on=["instance_id", "candidate_id"], how="anti")
    counts = runs.lazy().group_by("configuration", "instance_id").agg(
        buggy_f=((state == "buggy") & (outcome == "F")).sum(),
        reference_p=((state == "reference") & (outcome == "P")).sum(),
        valid_p=((label == "valid") & (outcome == "P")).sum(),
        invalid_f=((label == "invalid") & (outcome == "F")).sum(),
        present=pl.len(),
    )
    nv, ni = pl.col("n_valid"), pl.col("n_invalid")
    scores = (
        pools(store, without_mutants)
        .join(counts, on=["configuration", "instance_id"], how="left")
        .with_columns(pl.col("buggy_f", "reference_p", "valid_p", "invalid_f", "present").fill_null(0))
        .with_columns(
            f=((pl.col("buggy_f") > 0) & (pl.col("reference_p") > 0)).cast(pl.Float64),
            a=pl.when(nv > 0).then(pl.col("valid_p") / nv),
            r=pl.when(ni > 0).then(pl.col("invalid_f") / ni),
            d=pl.when((nv > 0) & (ni > 0)).then(
                pl.col("valid_p").cast(pl.Float64) * pl.col("invalid_f") / (nv.cast(pl.Float64) * ni)
            ),
            missing=2 + nv + ni - pl.col("present"),
        )
        .with_columns(s=pl.col("f") * (pl.col("valid_p") == nv).cast(pl.Float64) * (pl.col("invalid_f") == ni).cast(pl.Float64))
        .sort("configuration", "instance_id")
        .collect()
    )
    missing = int(scores["missing"].sum())
    if missing:
        log.warning("%d expected runs are not in the store: counted as unresolved (E)", missing)
    return scores.select("configuration", "instance_id", "source", "f", "a", "r", "s", "d", "n_valid", "n_invalid")


def flake_table(store: Store) -> pl.DataFrame:
    """Per configuration and confirmation policy (Policy.confirmation: the report says
    which produced the numbers): settled runs, runs whose replays disagreed (`unstable`)
    and their share — a suite that flips on the same state is measuring noise, not the
    patch; and the flake detection itself, measured: failures replayed to confirm them,
    failures the policy let stand unreplayed (a cheaper policy's), and among the replayed
    the observed flake rate with its exact (Clopper–Pearson) 95% interval, which bounds
    how many of the unreplayed `F` would have been `unstable`; and the runs early stop
    left out (their newest row `E`/early_stopped)."""
    table = (
        store.scan("runs")
        .group_by("configuration", "confirmation")
        .agg(runs=pl.len().cast(pl.Int64), unstable=(pl.col("reason") == "unstable").sum().cast(pl.Int64),
             replayed=(pl.col("replayed") == True).sum().cast(pl.Int64),  # noqa: E712 - a null is neither
             unreplayed=(pl.col("replayed") == False).sum().cast(pl.Int64))  # noqa: E712
        .with_columns(rate=pl.col("unstable") / pl.col("runs"))
        .sort("configuration", "confirmation")
        .collect()
    )
    # runs whose newest row is early stop's: E by design, so only JVR is a full replay's
    stopped = (
        store.scan("runs").select("run_key", "configuration", "confirmation", "reason", "started_at")
        .sort("started_at").unique("run_key", keep="last")
        .group_by("configuration", "confirmation")
        .agg(early_stopped=(pl.col("reason") == "early_stopped").sum().cast(pl.Int64))
        .collect()
    )
    table = table.join(stopped, on=["configuration", "confirmation"], how="left", nulls_equal=True).with_columns(
        pl.col("early_stopped").fill_null(0))
    if table["early_stopped"].sum():
        log.warning("%d runs were left out by early stop (E/early_stopped): of the leaderboard only JVR is what a "
                    "full replay gives; a replay without --early-stop runs them", table["early_stopped"].sum())
    intervals = [_flake_interval(k, n) for k, n in zip(table["unstable"], table["replayed"], strict=True)]
    return table.with_columns(
        flake_rate=pl.Series([i[0] for i in intervals], dtype=pl.Float64),
        flake_low=pl.Series([i[1] for i in intervals], dtype=pl.Float64),
        flake_high=pl.Series([i[2] for i in intervals], dtype=pl.Float64),
    )


def _flake_interval(unstable: int, replayed: int) -> tuple[float | None, float | None, float | None]:
    """The share of replayed failures that did not fail again, with its exact 95% interval
    (None without a replayed failure). Rows from before schema 4 carry no `replayed`: an
    unstable run was replayed, so at least those count."""
    replayed = max(replayed, unstable)
    if replayed == 0:
        return None, None, None
    ci = binomtest(unstable, replayed).proportion_ci(confidence_level=0.95, method="exact")
    return unstable / replayed, float(ci.low), float(ci.high)
