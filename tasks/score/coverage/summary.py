"""Per configuration: mean ΔC and EC and their correlations with S_i (`scores/coverage_summary`)."""

from __future__ import annotations

import math
import warnings

import polars as pl
import pyarrow as pa
from scipy.stats import ConstantInputWarning, pearsonr, spearmanr

from testprism.storage import SCHEMAS

def _correlation(x: list[float], y: list[float]) -> dict[str, float | None]:
    """Spearman and Pearson (point-biserial, S being 0/1) correlations with their p-values;
    null with fewer than three pairs or a constant side, where they are undefined."""
    empty = {"spearman": None, "spearman_p": None, "pearson": None, "pearson_p": None}
    if len(x) < 3 or len(set(x)) < 2 or len(set(y)) < 2:
        return empty
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantInputWarning)
        rho = spearmanr(x, y)
        r = pearsonr(x, y)

    def clean(value: float) -> float | None:
        return None if value is None or math.isnan(value) else float(value)

    return {"spearman": clean(rho.statistic), "spearman_p": clean(rho.pvalue),
            "pearson": clean(r.statistic), "pearson_p": clean(r.pvalue)}


def summarise(frame: pl.DataFrame) -> dict[str, object]:
    """Means of ΔC and EC, JVR, and each one's correlation with S_i, over the rows of
    `frame` (`delta_c`, `ec`, `s`; one row per instance and configuration) where each is
    defined."""
    row: dict[str, object] = {
        "n_instances": int(frame["delta_c"].is_not_null().sum()),
        "delta_c": frame["delta_c"].mean(),
        "ec": frame["ec"].mean(),
        "jvr": frame["s"].mean() if frame.height else None,
    }
    for metric in ("delta_c", "ec"):
        pairs = frame.select(metric, "s").drop_nulls()
        stats = _correlation(pairs[metric].to_list(), pairs["s"].to_list())
        row.update({f"{metric}_{name}": value for name, value in stats.items()})
    return row


def coverage_summary(coverage: pl.DataFrame, instance_scores: pl.DataFrame) -> pl.DataFrame:
    """`scores/coverage_summary`: per configuration, mean ΔC and EC and their Spearman and
    Pearson correlations with the per-instance JVR indicator S_i."""
    joined = coverage.join(
        instance_scores.select("configuration", "instance_id", "s"), on=["configuration", "instance_id"], how="inner"
    )
    rows = [
        {"configuration": name, **summarise(group)}
        for (name,), group in sorted(joined.group_by("configuration"), key=lambda item: item[0])
    ]
    return pl.from_arrow(pa.Table.from_pylist(rows, schema=SCHEMAS["coverage_summary"]))
