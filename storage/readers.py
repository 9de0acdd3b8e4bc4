"""Readers of the store's tables that several stages share, so that none of those stages
reaches into another's folder for them (curate, score, report and coverage each read the
newest run of every cell)."""

from __future__ import annotations

import polars as pl

from testprism.storage.store import Store


def latest_runs(store: Store) -> pl.DataFrame:
    """One row per (configuration, instance, state): the newest, so duplicates from
    concurrent writers, retried errors or older policies resolve the same way every time.

    Duplicates are rare, and deduplicating a million rows on four string columns costs
    seconds, so the rows are checked on a 64-bit hash of those columns first and only
    sorted and deduplicated when some repeat."""
    runs = (
        store.scan("runs")
        .select("configuration", "instance_id", "state", "candidate_id", "label", "outcome", "started_at")
        .with_columns(key=pl.struct("configuration", "instance_id", "state", "candidate_id").hash(seed=0))
        .collect()
    )
    if runs["key"].n_unique() == runs.height:
        return runs
    return runs.sort("started_at", maintain_order=True).unique("key", keep="last", maintain_order=True)
