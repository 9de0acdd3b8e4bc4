"""The paired tests of the comparisons with the leader: exact McNemar on the instances where
exactly one of two configurations succeeds jointly, and Holm's adjustment over all of them.

The bootstrap (tasks/score/statistics.py) gives each difference's interval; these give
its p-value, exact tests on counts, plain functions of numbers tested on their own
(tests/test_statistics.py).
"""

from __future__ import annotations

import numpy as np
from scipy.stats import binomtest


def mcnemar_exact(leader_only: int, other_only: int) -> float:
    """Exact two-sided McNemar p-value: a binomial test (p = 1/2) on the discordant pairs.

    Only instances where exactly one side succeeds carry information about which is
    better; with none, nothing speaks against equality and p = 1.
    """
    discordant = leader_only + other_only
    if discordant == 0:
        return 1.0
    return float(binomtest(leader_only, discordant, p=0.5, alternative="two-sided").pvalue)


def holm_adjust(p_values: np.ndarray) -> np.ndarray:
    """Holm step-down adjustment: k-th smallest p times (m - k + 1), made monotone, ≤ 1.

    Controls the family-wise error over all comparisons with the leader without
    Bonferroni's loss of power. Returns the adjusted values in the input order.
    """
    p_values = np.asarray(p_values, dtype=np.float64)
    order = np.argsort(p_values, kind="stable")
    scaled = p_values[order] * (p_values.size - np.arange(p_values.size))
    adjusted = np.empty_like(p_values)
    adjusted[order] = np.minimum(np.maximum.accumulate(scaled), 1.0)
    return adjusted
