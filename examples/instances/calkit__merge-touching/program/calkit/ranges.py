"""Range utilities for calendar blocks.

A *range* is a pair ``[start, end]`` of comparable values (minutes since
midnight, hours, datetimes...) with ``start <= end``. Ranges are closed:
a meeting ``[9, 10]`` and a meeting ``[10, 11]`` form one busy block.
"""

from __future__ import annotations

from typing import Iterable, Sequence


def _sorted_by_start(ranges: Iterable[Sequence]) -> list[list]:
    """Return copies of ``ranges`` as ``[start, end]`` lists, sorted by start."""
    return sorted((list(r) for r in ranges), key=lambda r: r[0])


def merge_ranges(ranges):
    """Merge overlapping ranges into busy blocks.

    Returns a new list of ``[start, end]`` ranges, ordered by start, in which
    no two ranges overlap or touch. The input is left untouched.

    >>> merge_ranges([[1, 4], [2, 6], [8, 9]])
    [[1, 6], [8, 9]]
    """
    if not ranges:
        return []
    ordered = _sorted_by_start(ranges)
    merged = [ordered[0]]
    for start, end in ordered[1:]:
        last = merged[-1]
        if start < last[1]:
            last[1] = max(last[1], end)
        else:
            merged.append([start, end])
    return merged


def total_busy(ranges) -> float:
    """Total length covered by ``ranges``, counting overlaps once."""
    return sum(end - start for start, end in merge_ranges(ranges))
