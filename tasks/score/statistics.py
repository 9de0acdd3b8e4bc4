"""Leaderboard statistics: point estimates, bootstrap intervals and paired comparisons.

Input is the `instance_scores` frame: one row per (configuration, instance) with the
instance indicators of README.md "Metrics" (`f`, `a`, `r`, `s`) and the instance's
`source`. Every configuration must score the same instances (a paired design); that is
what makes the comparisons paired and lets one resample serve every configuration.

Every number here comes from one function, `_metrics_from_sums`: a metric is a ratio
sum(w · value) / sum(w · mask) over instances, so a weight matrix with one row per
"view" of the instances computes all of them at once. Weights of all ones give the
leaderboard, one indicator row per source gives the per-source table, and a
(replicates x instances) matrix of resample counts gives the bootstrap, all through the
same code, with no Python loop over replicates.

The bootstrap's sums are taken one source at a time (the resample counts restricted to a
source's instances): those are the per-source replicates, and their sum over sources is
the leaderboard's replicate, so per-source intervals come from the very same resampled
instances as the leaderboard's, for no more arithmetic than the leaderboard alone.

Reproducibility contract of the bootstrap (tests re-derive the draws from it): instances
are ordered by (source, instance_id); for each source in sorted order, one call
`rng.integers(0, n_source, size=(replicates, n_source))` on
`numpy.random.default_rng(seed)` gives that source's resampled positions. So the same seed
gives the same replicates in `bootstrap_statistics`, `bootstrap_intervals`,
`compare_to_leader`, `rank_stability`, `per_source_table` and `distinguishability_table`,
and their results describe the same resamples.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import polars as pl

from testprism.tasks.score.paired_tests import holm_adjust, mcnemar_exact

logger = logging.getLogger(__name__)

METRICS: tuple[str, ...] = ("grr", "car", "wdr", "f1", "ct_car", "ct_wdr", "ct_f1", "jvr")
"""Leaderboard metrics, in column order."""

DISTINGUISHABILITY = "distinguishability"
"""Mean over instances with at least one (valid, invalid) pair of d, the share of those
pairs the suite separates (accepts the valid, rejects the invalid). Not a leaderboard
column: it has its own table (`distinguishability_table`)."""

PER_SOURCE_LEADER_METRICS: tuple[str, ...] = ("jvr", "grr", "car", "wdr")
"""What `per_source_leaders` reports of each source's JVR leader (SWEPatchTest, Table 9)."""

# Per-instance components whose weighted sums make every metric. `a_pool` (`r_pool`) is 1
# where the instance has a valid (invalid) candidate: the denominator of CAR and CT-CAR
# (WDR and CT-WDR); `a_complete` (`r_complete`) is 1 where a = 1 (r = 1), the numerator
# of CT-CAR (CT-WDR). GRR and JVR divide by the weight total instead. `d` is the share of
# (valid, invalid) pairs separated and `d_pool` is 1 where the instance has a pair.
_COMPONENTS: tuple[str, ...] = (
    "f", "a", "a_pool", "a_complete", "r", "r_pool", "r_complete", "s", "d", "d_pool"
)
_ALL_METRICS: tuple[str, ...] = (*METRICS, DISTINGUISHABILITY)
_REQUIRED_COLUMNS: tuple[str, ...] = ("configuration", "instance_id", "source", "f", "a", "r", "s")
_PAIRED_DESIGN = (
    "instance_scores must hold exactly one row per (configuration, instance), "
    "the same instances with the same source for every configuration"
)


@dataclass(frozen=True)
class _ScoreTable:
    """`instance_scores` as dense arrays, instances ordered by (source, instance_id)."""

    configurations: list[str]
    sources: np.ndarray  # (instances,) source name of each instance
    components: np.ndarray  # (instances, len(_COMPONENTS) * configurations)

    def component(self, name: str) -> np.ndarray:
        """One component as an (instances x configurations) matrix."""
        n_configurations = len(self.configurations)
        start = _COMPONENTS.index(name) * n_configurations
        return self.components[:, start : start + n_configurations]


def _score_table(instance_scores: pl.DataFrame) -> _ScoreTable:
    """Check the paired design and turn the long frame into dense component matrices.

    Nulls in `a` and `r` become a zero value with a zero mask, so an instance without a
    valid (invalid) candidate drops out of CAR's (WDR's) denominator but still counts in
    GRR and JVR, as README.md's Metrics require. `d` (optional: `metrics.instance_scores` writes it
    from the run counts) is a · r when absent: valid accepted × invalid rejected over
    n_valid × n_invalid; null (no pair) when either pool is empty.
    """
    missing = [c for c in _REQUIRED_COLUMNS if c not in instance_scores.columns]
    if missing:
        raise ValueError(f"instance_scores lacks columns {missing}")
    if instance_scores.height == 0:
        raise ValueError("instance_scores is empty")
    given = [*_REQUIRED_COLUMNS, *(["d"] if "d" in instance_scores.columns else [])]
    frame = instance_scores.select(given).sort("configuration", "source", "instance_id")
    if (
        frame.select(pl.col("configuration", "instance_id", "source").null_count())
        .sum_horizontal()
        .item()
    ):
        raise ValueError("configuration, instance_id and source must not be null")
    for column in ("f", "s"):
        values = frame[column]
        if values.null_count() or not values.is_in([0.0, 1.0]).all():
            raise ValueError(f"column {column!r} must be 0 or 1 on every row")
    if "d" not in frame.columns:
        frame = frame.with_columns(d=pl.col("a") * pl.col("r"))
    for column in ("a", "r", "d"):
        values = frame[column].drop_nulls()
        if values.is_nan().any() or (values < 0).any() or (values > 1).any():
            raise ValueError(f"column {column!r} must be null or within [0, 1]")

    configurations = frame["configuration"].unique(maintain_order=True).to_list()
    n_configurations = len(configurations)
    n_instances = frame.height // n_configurations
    if n_instances * n_configurations != frame.height:
        raise ValueError(_PAIRED_DESIGN)
    instance_ids = frame["instance_id"].to_numpy().reshape(n_configurations, n_instances)
    sources = frame["source"].to_numpy().reshape(n_configurations, n_instances)
    if (
        len(set(instance_ids[0])) != n_instances
        or not (instance_ids == instance_ids[0]).all()
        or not (sources == sources[0]).all()
    ):
        raise ValueError(_PAIRED_DESIGN)

    def matrix(expression: pl.Expr) -> np.ndarray:
        column = frame.select(expression.cast(pl.Float64)).to_series().to_numpy()
        return column.reshape(n_configurations, n_instances).T

    parts = {
        "f": matrix(pl.col("f")),
        "a": matrix(pl.col("a").fill_null(0.0)),
        "a_pool": matrix(pl.col("a").is_not_null()),
        "a_complete": matrix(pl.col("a").fill_null(0.0) == 1.0),
        "r": matrix(pl.col("r").fill_null(0.0)),
        "r_pool": matrix(pl.col("r").is_not_null()),
        "r_complete": matrix(pl.col("r").fill_null(0.0) == 1.0),
        "s": matrix(pl.col("s")),
        "d": matrix(pl.col("d").fill_null(0.0)),
        "d_pool": matrix(pl.col("d").is_not_null()),
    }
    return _ScoreTable(
        configurations=configurations,
        sources=sources[0],
        components=np.hstack([parts[name] for name in _COMPONENTS]),
    )


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, NaN where the denominator is empty (reported as null)."""
    return np.divide(
        numerator, denominator, out=np.full(numerator.shape, np.nan), where=denominator > 0
    )


def _harmonic_mean(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Harmonic mean, 0 when both are 0 and NaN when either is undefined."""
    total = x + y
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = 2.0 * x * y / total
    return np.where(total == 0.0, 0.0, mean)


def _component_sums(components: np.ndarray, weights: np.ndarray, n_configurations: int) -> np.ndarray:
    """(views x len(_COMPONENTS) x configurations): weighted sums of every component."""
    return (weights @ components).reshape(weights.shape[0], len(_COMPONENTS), n_configurations)


def _metrics_from_sums(sums: np.ndarray, total: np.ndarray) -> dict[str, np.ndarray]:
    """Every metric for every configuration from component sums.

    `sums` is (views x len(_COMPONENTS) x configurations), `total` (views,) the weight of
    each view. Returns metric name → (views x configurations), NaN where the denominator
    is empty. This is the only place metrics are defined, so point estimates, per-source
    values and bootstrap replicates cannot drift apart.
    """
    total = np.broadcast_to(total[:, None], sums[:, 0, :].shape)
    part = {name: sums[:, index, :] for index, name in enumerate(_COMPONENTS)}
    metrics = {
        "grr": _ratio(part["f"], total),
        "car": _ratio(part["a"], part["a_pool"]),
        "wdr": _ratio(part["r"], part["r_pool"]),
        "ct_car": _ratio(part["a_complete"], part["a_pool"]),
        "ct_wdr": _ratio(part["r_complete"], part["r_pool"]),
        "jvr": _ratio(part["s"], total),
        DISTINGUISHABILITY: _ratio(part["d"], part["d_pool"]),
    }
    metrics["f1"] = _harmonic_mean(metrics["car"], metrics["wdr"])
    metrics["ct_f1"] = _harmonic_mean(metrics["ct_car"], metrics["ct_wdr"])
    return {name: metrics[name] for name in _ALL_METRICS}


def _metrics_from_weights(table: _ScoreTable, weights: np.ndarray) -> dict[str, np.ndarray]:
    """Every metric for every configuration under each row of `weights`.

    `weights` is (views x instances): how many times each instance counts in each view.
    Returns metric name → (views x configurations), NaN where the denominator is empty.
    """
    sums = _component_sums(table.components, weights, len(table.configurations))
    return _metrics_from_sums(sums, weights.sum(axis=1))


def _resample_blocks(sources: np.ndarray, replicates: int, seed: int) -> list[np.ndarray]:
    """Per source (sorted order), the (replicates x n_source) counts of its instances in a
    source-stratified resample with replacement; contiguous, for the sums' products.

    `sources` must be sorted (instances grouped by source), as `_score_table` leaves
    them. Each source draws its own positions, so a source keeps its size in every
    replicate and no instance stands in for another source's instance.
    """
    rng = np.random.default_rng(seed)
    _, sizes = np.unique(sources, return_counts=True)
    row_offsets = np.arange(replicates)[:, None]
    blocks = []
    for size in sizes:
        positions = rng.integers(0, size, size=(replicates, size))
        flat = np.bincount((positions + row_offsets * size).ravel(), minlength=replicates * size)
        blocks.append(flat.reshape(replicates, size).astype(np.float64))
    logger.debug(
        "resampled %d replicates of %d instances in %d sources", replicates, sources.size, sizes.size
    )
    return blocks


def _resample_counts(sources: np.ndarray, replicates: int, seed: int) -> np.ndarray:
    """(replicates x instances) counts of a source-stratified resample with replacement:
    `_resample_blocks` side by side, in the instances' order."""
    return np.hstack(_resample_blocks(sources, replicates, seed))


def _point_metrics(table: _ScoreTable) -> dict[str, np.ndarray]:
    """Metric name → (configurations,) point estimates: every instance counted once."""
    return {
        name: values[0]
        for name, values in _metrics_from_weights(table, np.ones((1, table.sources.size))).items()
    }


@dataclass(frozen=True)
class _Replicates:
    """Metrics over one seeded stratified resample: name → array.

    `overall` is (replicates x configurations), the leaderboard's replicates;
    `per_source` is (replicates x sources x configurations), source k's view being the
    same resample restricted to k's instances (sources in sorted order)."""

    overall: dict[str, np.ndarray]
    per_source: dict[str, np.ndarray]


def _source_blocks(sources: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sorted source names, the position of each one's first instance, and its size."""
    return np.unique(sources, return_index=True, return_counts=True)


def _bootstrap(table: _ScoreTable, replicates: int, seed: int) -> _Replicates:
    """Every metric over the seeded stratified resample, overall and within each source.

    The sums are taken source by source (the resample counts of that source's columns
    against its instances' components); the leaderboard's sums are their total, so the
    per-source views cost nothing beyond the leaderboard's own product.
    """
    if replicates < 1:
        raise ValueError(f"replicates must be at least 1, got {replicates}")
    n_configurations = len(table.configurations)
    _, starts, sizes = _source_blocks(table.sources)
    width = table.components.shape[1]
    blocks = np.empty((replicates, sizes.size, width))
    for index, (counts, start, size) in enumerate(
        zip(_resample_blocks(table.sources, replicates, seed), starts, sizes, strict=True)
    ):
        np.matmul(counts, table.components[start : start + size], out=blocks[:, index, :])
    blocks = blocks.reshape(replicates, sizes.size, len(_COMPONENTS), n_configurations)
    # Stratified: every replicate holds each source's size, so its weight total is theirs.
    overall = _metrics_from_sums(blocks.sum(axis=1), np.full(replicates, float(sizes.sum())))
    # Within a source every replicate keeps the source's size: that is its weight total.
    within = _metrics_from_sums(
        blocks.reshape(replicates * sizes.size, len(_COMPONENTS), n_configurations),
        np.tile(sizes.astype(np.float64), replicates),
    )
    per_source = {
        name: values.reshape(replicates, sizes.size, n_configurations)
        for name, values in within.items()
    }
    return _Replicates(overall=overall, per_source=per_source)


def _bootstrap_metrics(table: _ScoreTable, replicates: int, seed: int) -> dict[str, np.ndarray]:
    """Metric name → (replicates x configurations) over the seeded stratified resample."""
    return _bootstrap(table, replicates, seed).overall


def _percentile_interval(samples: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval per column (linear interpolation, numpy's default).

    Replicates where the metric is undefined (an empty pool drawn) are left out; a column
    undefined in every replicate has no interval (NaN). Columns without undefined
    replicates, nearly all of them, take numpy's fast path.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be within (0, 1), got {level}")
    tail = (1.0 - level) / 2.0
    quantiles = np.full((2, samples.shape[1]), np.nan)
    undefined = np.isnan(samples)
    complete = ~undefined.any(axis=0)
    partial = ~complete & ~undefined.all(axis=0)
    quantiles[:, complete] = np.quantile(samples[:, complete], [tail, 1.0 - tail], axis=0)
    if partial.any():
        quantiles[:, partial] = np.nanquantile(samples[:, partial], [tail, 1.0 - tail], axis=0)
    return quantiles[0], quantiles[1]


def _frame(columns: dict[str, object]) -> pl.DataFrame:
    """A frame whose undefined (NaN) values are nulls, as the rest of testprism expects."""
    return pl.DataFrame(columns).with_columns(pl.col(pl.Float64).fill_nan(None))


def _competition_ranks(jvr: np.ndarray) -> np.ndarray:
    """1 + number of configurations with a strictly higher JVR, along the last axis."""
    return 1 + (jvr[..., None, :] > jvr[..., :, None]).sum(axis=-1)


def _intervals(table: _ScoreTable, samples: dict[str, np.ndarray], level: float) -> pl.DataFrame:
    """The `bootstrap_intervals` table from replicate metrics."""
    columns: dict[str, object] = {"configuration": table.configurations}
    for name in METRICS:
        columns[f"{name}_lo"], columns[f"{name}_hi"] = _percentile_interval(samples[name], level)
    return _frame(columns)


def _comparisons(
    table: _ScoreTable, jvr: np.ndarray, samples: np.ndarray, level: float
) -> pl.DataFrame:
    """The `compare_to_leader` table from point and replicate JVRs."""
    # lexsort's last key is primary: highest JVR first, then the smallest name.
    leader = int(np.lexsort((np.array(table.configurations), -jvr))[0])
    others = [index for index in range(len(table.configurations)) if index != leader]
    lower, upper = _percentile_interval(samples[:, [leader]] - samples[:, others], level)
    success = table.component("s") == 1.0
    leader_only = (success[:, [leader]] & ~success[:, others]).sum(axis=0)
    other_only = (~success[:, [leader]] & success[:, others]).sum(axis=0)
    p_values = np.array(
        [mcnemar_exact(int(b), int(c)) for b, c in zip(leader_only, other_only, strict=True)]
    )
    return _frame(
        {
            "configuration": pl.Series(
                [table.configurations[index] for index in others], dtype=pl.String
            ),
            "leader": pl.Series([table.configurations[leader]] * len(others), dtype=pl.String),
            "delta_jvr": pl.Series(jvr[leader] - jvr[others], dtype=pl.Float64),
            "delta_jvr_lo": pl.Series(lower, dtype=pl.Float64),
            "delta_jvr_hi": pl.Series(upper, dtype=pl.Float64),
            "leader_only": pl.Series(leader_only, dtype=pl.Int64),
            "other_only": pl.Series(other_only, dtype=pl.Int64),
            "mcnemar_p": pl.Series(p_values, dtype=pl.Float64),
            "mcnemar_p_holm": pl.Series(holm_adjust(p_values), dtype=pl.Float64),
        }
    )


def _rank_stability(table: _ScoreTable, jvr: np.ndarray, samples: np.ndarray) -> pl.DataFrame:
    """The `rank_stability` table from point and replicate JVRs."""
    point_rank = _competition_ranks(jvr)
    winners = samples == samples.max(axis=1, keepdims=True)
    return _frame(
        {
            "configuration": table.configurations,
            "point_rank": pl.Series(point_rank, dtype=pl.Int64),
            "rank_stability": (_competition_ranks(samples) == point_rank).mean(axis=0),
            "first_place_probability": (winners / winners.sum(axis=1, keepdims=True)).mean(axis=0),
        }
    )


def leaderboard_from_instance_scores(instance_scores: pl.DataFrame) -> pl.DataFrame:
    """Point estimates: `configuration, n_instances, <METRICS>`, sorted by configuration.

    Computed by the same weighted sums as the bootstrap (weights all 1), so a bootstrap
    interval is always an interval around exactly this number.
    """
    table = _score_table(instance_scores)
    metrics = _point_metrics(table)
    return _frame(
        {
            "configuration": table.configurations,
            "n_instances": [table.sources.size] * len(table.configurations),
            **{name: metrics[name] for name in METRICS},
        }
    )


def _per_source(table: _ScoreTable, resample: _Replicates, level: float) -> pl.DataFrame:
    """The `per_source_table` from the per-source views of one resample."""
    names, _, sizes = _source_blocks(table.sources)
    weights = (table.sources[None, :] == names[:, None]).astype(np.float64)
    metrics = _metrics_from_weights(table, weights)
    n_configurations = len(table.configurations)
    columns: dict[str, object] = {
        "source": np.repeat(names, n_configurations).tolist(),
        "configuration": table.configurations * names.size,
        "n_instances": np.repeat(sizes.astype(np.int64), n_configurations),
        **{name: metrics[name].ravel() for name in METRICS},
    }
    for name in METRICS:
        samples = resample.per_source[name].reshape(-1, names.size * n_configurations)
        columns[f"{name}_lo"], columns[f"{name}_hi"] = _percentile_interval(samples, level)
    return _frame(columns)


def per_source_table(
    instance_scores: pl.DataFrame,
    replicates: int = 10_000,
    seed: int = 42,
    level: float = 0.95,
) -> pl.DataFrame:
    """Every metric within each source, with its interval:
    `source, configuration, n_instances, <METRICS>, <metric>_lo, <metric>_hi`.

    One indicator weight row per source, so within-source values use the leaderboard's
    definitions exactly. The intervals come from the leaderboard's resample (same seed,
    same draws), restricted to the source's instances: the stratified resample draws each
    source's instances on its own, so within a source it is a bootstrap of that source.
    Sorted by source, then configuration.
    """
    table = _score_table(instance_scores)
    return _per_source(table, _bootstrap(table, replicates, seed), level)


def per_source_leaders(per_source: pl.DataFrame) -> pl.DataFrame:
    """Per source, its JVR leader with the leader's component rates (SWEPatchTest, Table 9):
    `source, n_instances, configuration, jvr, jvr_lo, jvr_hi, grr, car, wdr`.

    `per_source` is a `per_source_table`. The leader has the highest JVR within the
    source, ties broken by configuration name, as the leaderboard's ranking and
    `compare_to_leader` break them. Sorted by source.
    """
    columns = ["source", "n_instances", "configuration", "jvr", "jvr_lo", "jvr_hi", "grr", "car", "wdr"]
    return (
        per_source.sort(["source", "jvr", "configuration"], descending=[False, True, False], nulls_last=True)
        .group_by("source", maintain_order=True)
        .first()
        .select(columns)
    )


def _distinguishability(table: _ScoreTable, resample: _Replicates, level: float) -> pl.DataFrame:
    """The `distinguishability_table` from point values and one resample's replicates."""
    point = _point_metrics(table)[DISTINGUISHABILITY]
    lower, upper = _percentile_interval(resample.overall[DISTINGUISHABILITY], level)
    return _frame(
        {
            "configuration": table.configurations,
            "n_with_pairs": table.component("d_pool").sum(axis=0).astype(np.int64),
            DISTINGUISHABILITY: point,
            f"{DISTINGUISHABILITY}_lo": lower,
            f"{DISTINGUISHABILITY}_hi": upper,
        }
    )


def distinguishability_table(
    instance_scores: pl.DataFrame,
    replicates: int = 10_000,
    seed: int = 42,
    level: float = 0.95,
) -> pl.DataFrame:
    """How well each configuration's suites tell valid from invalid candidates (R2E-Gym):
    `configuration, n_with_pairs, distinguishability, distinguishability_lo, _hi`.

    Per instance, d = (valid accepted × invalid rejected) / (n_valid × n_invalid): the
    share of (valid, invalid) candidate pairs the suite separates, counted from the runs
    (a pair with an `E` or missing run is not separated; the released pools are the
    denominators). `distinguishability` is the mean of d over the `n_with_pairs`
    instances that have both a valid and an invalid candidate (null without any), with
    its percentile interval from the leaderboard's resample (same seed, same draws).
    Sorted by configuration.
    """
    table = _score_table(instance_scores)
    return _distinguishability(table, _bootstrap(table, replicates, seed), level)


@dataclass(frozen=True)
class BootstrapStatistics:
    """The bootstrap tables of one resample (see the functions of the same names)."""

    intervals: pl.DataFrame
    comparisons: pl.DataFrame
    rank_stability: pl.DataFrame
    per_source: pl.DataFrame
    per_source_leaders: pl.DataFrame
    distinguishability: pl.DataFrame


def bootstrap_statistics(
    instance_scores: pl.DataFrame,
    replicates: int = 10_000,
    seed: int = 42,
    level: float = 0.95,
) -> BootstrapStatistics:
    """Intervals, comparisons with the leader, rank stability, per-source tables and
    distinguishability from a single resample.

    The same tables as `bootstrap_intervals`, `compare_to_leader`, `rank_stability`,
    `per_source_table`, `per_source_leaders` and `distinguishability_table` with the same
    seed, for the price of one: the resample and the metrics over it are the bulk of the
    work, and the leaderboard reports all of them.
    """
    table = _score_table(instance_scores)
    jvr = _point_metrics(table)["jvr"]
    resample = _bootstrap(table, replicates, seed)
    samples = resample.overall
    per_source = _per_source(table, resample, level)
    return BootstrapStatistics(
        intervals=_intervals(table, samples, level),
        comparisons=_comparisons(table, jvr, samples["jvr"], level),
        rank_stability=_rank_stability(table, jvr, samples["jvr"]),
        per_source=per_source,
        per_source_leaders=per_source_leaders(per_source),
        distinguishability=_distinguishability(table, resample, level),
    )


def bootstrap_intervals(
    instance_scores: pl.DataFrame,
    replicates: int = 10_000,
    seed: int = 42,
    level: float = 0.95,
) -> pl.DataFrame:
    """Percentile intervals of every metric from the paired, source-stratified bootstrap.

    Returns `configuration, <metric>_lo, <metric>_hi` for each metric of `METRICS`,
    sorted by configuration; null where a metric is undefined in every replicate.
    Resampling inside each source keeps the benchmark's composition, and one resample for
    all configurations keeps the intervals comparable (README.md "Metrics").
    """
    table = _score_table(instance_scores)
    return _intervals(table, _bootstrap_metrics(table, replicates, seed), level)


def compare_to_leader(
    instance_scores: pl.DataFrame,
    replicates: int = 10_000,
    seed: int = 42,
    level: float = 0.95,
) -> pl.DataFrame:
    """Paired JVR comparison of every configuration with the leader (`comparisons`).

    The leader has the highest point JVR, ties broken by configuration name. One row per
    other configuration, sorted by configuration: `configuration, leader, delta_jvr`
    (leader minus configuration), `delta_jvr_lo, delta_jvr_hi` (percentile interval of
    the paired difference on the same resamples as `bootstrap_intervals`),
    `leader_only, other_only` (instances where only one side has s = 1), `mcnemar_p`
    (exact two-sided) and `mcnemar_p_holm` (Holm over the rows). Pairing matters: the
    two JVRs share instances, so their difference varies far less than either alone.
    The leader's first-place probability is in `rank_stability`.
    """
    table = _score_table(instance_scores)
    jvr = _point_metrics(table)["jvr"]
    return _comparisons(table, jvr, _bootstrap_metrics(table, replicates, seed)["jvr"], level)


def rank_stability(
    instance_scores: pl.DataFrame,
    replicates: int = 10_000,
    seed: int = 42,
) -> pl.DataFrame:
    """How firmly the point JVR ordering holds across the bootstrap replicates.

    One row per configuration (leader included), sorted by configuration:
    `point_rank` is the competition rank of the point JVR (1 + number of configurations
    strictly ahead, so ties share a rank); `rank_stability` is the share of replicates in
    which the configuration's rank, computed the same way, equals its point rank;
    `first_place_probability` is the share of replicates in which it has the highest
    JVR, a tie for first splitting that replicate equally. Replicates are those of
    `bootstrap_intervals` for the same seed.
    """
    table = _score_table(instance_scores)
    jvr = _point_metrics(table)["jvr"]
    return _rank_stability(table, jvr, _bootstrap_metrics(table, replicates, seed)["jvr"])
