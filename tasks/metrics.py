"""Per-instance indicators of the joint metrics (DESIGN.md, Metrics), from the store's runs.

The leaderboard and its statistics are computed from these by `tasks.statistics`.

Denominators are the released pools: the grid of expected runs is `suites` × `panels`, and
a run that is missing or unresolved (`E`) counts as neither acceptance nor rejection but
never leaves its denominator.
"""

from __future__ import annotations

import logging

import polars as pl

from testprism.storage import Store

log = logging.getLogger(__name__)


def _state_key() -> pl.Expr:
    return pl.col("state") + pl.lit(":") + pl.col("candidate_id").fill_null("")


def expected_grid(store: Store) -> pl.LazyFrame:
    """Every (configuration, instance, state) the leaderboard is owed."""
    panels = store.scan("panels").unique(["instance_id", "state", "candidate_id"])
    suites = store.scan("suites").select("configuration", "instance_id").unique()
    return suites.join(panels, on="instance_id").with_columns(state_key=_state_key())


def latest_runs(store: Store) -> pl.LazyFrame:
    """One row per (configuration, instance, state): the newest, ties broken by run key, so
    duplicates from concurrent writers or older policies resolve the same way every time."""
    return (
        store.scan("runs")
        .with_columns(state_key=_state_key())
        .sort(["started_at", "run_key"], descending=[True, False])
        .unique(["configuration", "instance_id", "state_key"], keep="first")
        .select("configuration", "instance_id", "state_key", "outcome")
    )


def instance_scores(store: Store) -> pl.DataFrame:
    """Per configuration × instance: f, a, r, s and the pool sizes."""
    grid = expected_grid(store).join(latest_runs(store), on=["configuration", "instance_id", "state_key"], how="left")
    accepted = (pl.col("outcome") == "P").fill_null(False).cast(pl.Float64)
    rejected = (pl.col("outcome") == "F").fill_null(False).cast(pl.Float64)
    valid, invalid = pl.col("label") == "valid", pl.col("label") == "invalid"
    scores = (
        grid.group_by("configuration", "instance_id", "source")
        .agg(
            f=(rejected.filter(pl.col("state") == "buggy").sum() * accepted.filter(pl.col("state") == "reference").sum()),
            a=accepted.filter(valid).mean(),
            r=rejected.filter(invalid).mean(),
            all_valid=accepted.filter(valid).min().fill_null(1.0),
            all_invalid=rejected.filter(invalid).min().fill_null(1.0),
            n_valid=valid.sum().cast(pl.Int32),
            n_invalid=invalid.sum().cast(pl.Int32),
            missing=pl.col("outcome").is_null().sum(),
        )
        .with_columns(s=pl.col("f") * pl.col("all_valid") * pl.col("all_invalid"))
        .sort("configuration", "instance_id")
        .collect()
    )
    missing = int(scores["missing"].sum())
    if missing:
        log.warning("%d expected runs are not in the store: counted as unresolved (E)", missing)
    return scores.select("configuration", "instance_id", "source", "f", "a", "r", "s", "n_valid", "n_invalid")

