"""Free-time search between busy intervals.

Busy intervals are ``(start, end)`` pairs of :class:`datetime.datetime` taken
from a calendar feed: they come in no particular order, may overlap each other
and may stick out of the window being searched.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Iterable

Interval = tuple[datetime, datetime]


def _clip(interval: Interval, lo: datetime, hi: datetime) -> Interval | None:
    """Cut ``interval`` down to ``[lo, hi]``; None when nothing of it is left."""
    start, end = max(interval[0], lo), min(interval[1], hi)
    return (start, end) if start < end else None


def free_slots(
    busy: Iterable[Interval],
    window_start: datetime,
    window_end: datetime,
    min_length: timedelta = timedelta(0),
) -> list[Interval]:
    """Return the free ``(start, end)`` slots inside ``[window_start, window_end]``.

    Slots are in chronological order. Slots shorter than ``min_length`` are
    left out, and a slot is never empty (back-to-back meetings leave no gap).
    """
    if window_end < window_start:
        raise ValueError("window_end is before window_start")
    slots = []
    cursor = window_start
    for interval in sorted(busy):
        clipped = _clip(interval, window_start, window_end)
        if clipped is None:
            continue
        start, end = clipped
        if start > cursor:
            slots.append((cursor, start))
        cursor = end
    if cursor < window_end:
        slots.append((cursor, window_end))
    return [(s, e) for s, e in slots if e - s >= min_length]


def is_free(busy: Iterable[Interval], start: datetime, end: datetime) -> bool:
    """True when no busy interval overlaps ``[start, end)``."""
    return all(b_end <= start or b_start >= end for b_start, b_end in busy)
