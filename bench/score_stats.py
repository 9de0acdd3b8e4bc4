"""Benchmark: the full leaderboard statistics at the SWEPatchTest scale.

Synthesises `instance_scores` for 12 configurations over 619 instances (sources of 342,
167 and 110, as in SWEPatchTest), then times every statistic the leaderboard reports at
10,000 replicates: all metric intervals, the comparisons with the leader and rank
stability. In the same run it times a naive implementation (one Python iteration per
replicate, resample by join, metrics by group-by) on a few replicates and extrapolates,
so the speed-up is measured on the same machine under the same load.

Run: `python bench/score_stats.py` (with testprism importable). Target: under 2 s.
"""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Callable

import numpy as np
import polars as pl

from testprism.tasks.score.statistics import bootstrap_statistics

logger = logging.getLogger("bench.score_stats")

SOURCES = {"swe-bench-pro": 342, "swe-bench-multilingual": 167, "deepswe": 110}
CONFIGURATIONS = 12
REPLICATES = 10_000
NAIVE_REPLICATES = 200
REPEATS = 3
TARGET_SECONDS = 2.0
SEED = 42


def synthesise(seed: int = SEED) -> pl.DataFrame:
    """Plausible instance scores: skill per configuration, difficulty per instance.

    Pools are sometimes empty (about 15% of instances without a valid candidate, 10%
    without an invalid one) so the null paths of CAR and WDR cost what they cost on
    real data; `s` is derived from `f`, `a` and `r` as README.md's Metrics define it.
    """
    rng = np.random.default_rng(seed)
    n_instances = sum(SOURCES.values())
    sources = np.repeat(list(SOURCES), list(SOURCES.values()))
    instance_ids = np.array([f"{source}__{k:04d}" for k, source in enumerate(sources)])
    skill = rng.normal(0.0, 0.5, size=(CONFIGURATIONS, 1))
    difficulty = rng.normal(0.0, 1.0, size=(1, n_instances))
    success = 1.0 / (1.0 + np.exp(difficulty - skill))
    shape = (CONFIGURATIONS, n_instances)

    f = (rng.random(shape) < success).astype(np.float64)
    valid = np.where(
        rng.random((1, n_instances)) < 0.15, 0, rng.integers(1, 6, size=(1, n_instances))
    )
    invalid = np.where(
        rng.random((1, n_instances)) < 0.10, 0, rng.integers(1, 11, size=(1, n_instances))
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        a = rng.binomial(np.broadcast_to(valid, shape), np.clip(success + 0.2, 0, 1)) / valid
        r = rng.binomial(np.broadcast_to(invalid, shape), np.clip(success + 0.3, 0, 1)) / invalid
    s = f * (np.isnan(a) | (a == 1.0)) * (np.isnan(r) | (r == 1.0))
    return pl.DataFrame(
        {
            "configuration": np.repeat(
                [f"config-{c:02d}" for c in range(CONFIGURATIONS)], n_instances
            ),
            "instance_id": np.tile(instance_ids, CONFIGURATIONS),
            "source": np.tile(sources, CONFIGURATIONS),
            "f": f.ravel(),
            "a": a.ravel(),
            "r": r.ravel(),
            "s": s.ravel(),
        }
    ).with_columns(pl.col("a", "r").fill_nan(None))


def full_statistics(instance_scores: pl.DataFrame, replicates: int) -> None:
    """Everything the leaderboard reports beyond point estimates, from one resample."""
    bootstrap_statistics(instance_scores, replicates=replicates, seed=SEED)


def _naive_metrics() -> list[pl.Expr]:
    a_complete = (pl.col("a") == 1.0).cast(pl.Float64)
    r_complete = (pl.col("r") == 1.0).cast(pl.Float64)
    return [
        pl.col("f").mean().alias("grr"),
        pl.col("a").mean().alias("car"),
        pl.col("r").mean().alias("wdr"),
        a_complete.mean().alias("ct_car"),
        r_complete.mean().alias("ct_wdr"),
        pl.col("s").mean().alias("jvr"),
    ]


def naive_statistics(instance_scores: pl.DataFrame, replicates: int) -> None:
    """The straightforward version: resample by join, recompute by group-by, repeat.

    It computes the per-replicate metrics, ranks and quantiles, the bulk of the work;
    its output is not checked (tests compare the real implementation with a reference).
    """
    rng = np.random.default_rng(SEED)
    instances = (
        instance_scores.select("source", "instance_id").unique().sort("source", "instance_id")
    )
    by_source = [
        group["instance_id"].to_numpy()
        for _, group in instances.group_by("source", maintain_order=True)
    ]
    rows = []
    for _ in range(replicates):
        drawn = np.concatenate([ids[rng.integers(0, ids.size, ids.size)] for ids in by_source])
        sample = pl.DataFrame({"instance_id": drawn}).join(instance_scores, on="instance_id")
        metrics = sample.group_by("configuration").agg(_naive_metrics()).sort("configuration")
        rows.append(
            metrics.with_columns(
                f1=2 * pl.col("car") * pl.col("wdr") / (pl.col("car") + pl.col("wdr")),
                ct_f1=2
                * pl.col("ct_car")
                * pl.col("ct_wdr")
                / (pl.col("ct_car") + pl.col("ct_wdr")),
                rank=pl.col("jvr").rank("min", descending=True),
            )
        )
    replicate_metrics = pl.concat(rows)
    replicate_metrics.group_by("configuration").agg(
        pl.all().exclude("rank").quantile(0.025).name.suffix("_lo"),
        pl.all().exclude("rank").quantile(0.975).name.suffix("_hi"),
        (pl.col("rank") == 1).mean().alias("first_place"),
    )


def _timed(function: Callable[..., None], *args: object) -> float:
    start = time.perf_counter()
    function(*args)
    return time.perf_counter() - start


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    instance_scores = synthesise()
    logger.info(
        "instance_scores: %d configurations x %d instances (%s)",
        CONFIGURATIONS,
        sum(SOURCES.values()),
        ", ".join(f"{name} {size}" for name, size in SOURCES.items()),
    )
    full_statistics(instance_scores, 100)  # warm-up: imports, BLAS threads, allocator

    seconds = [_timed(full_statistics, instance_scores, REPLICATES) for _ in range(REPEATS)]
    best, median = min(seconds), statistics.median(seconds)
    logger.info(
        "vectorised full statistics at %d replicates: best %.3f s, median %.3f s over %d runs",
        REPLICATES,
        best,
        median,
        REPEATS,
    )

    naive = _timed(naive_statistics, instance_scores, NAIVE_REPLICATES)
    extrapolated = naive * REPLICATES / NAIVE_REPLICATES
    logger.info(
        "naive per-replicate loop: %.3f s for %d replicates, %.1f s extrapolated to %d; "
        "speed-up %.0fx (against the median)",
        naive,
        NAIVE_REPLICATES,
        extrapolated,
        REPLICATES,
        extrapolated / median,
    )
    if median >= TARGET_SECONDS:
        logger.warning("median %.3f s misses the %.1f s target", median, TARGET_SECONDS)
    else:
        logger.info("median %.3f s meets the %.1f s target", median, TARGET_SECONDS)


if __name__ == "__main__":
    main()
