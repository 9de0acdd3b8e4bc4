"""Expansion of simple recurring events ("every N days until ...").

A series is described by its first date, its interval in days and an end
date. Cancelled occurrences can be listed as exceptions; they do not move
the rest of the series.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Iterable


def _check_interval(every_days: int) -> None:
    if every_days < 1:
        raise ValueError("every_days must be a positive integer")


def expand(
    start: date,
    every_days: int,
    until: date,
    *,
    exclude: Iterable[date] = (),
) -> list[date]:
    """Return the dates of a series, in order.

    The event happens on ``start`` and then every ``every_days`` days, up to
    and including ``until``. Dates listed in ``exclude`` are cancelled
    occurrences: they are left out and the series carries on as planned.
    """
    _check_interval(every_days)
    cancelled = set(exclude)
    step = timedelta(days=every_days)
    occurrences = []
    current = start
    while current < until:
        if current not in cancelled:
            occurrences.append(current)
        current += step
    return occurrences


def next_occurrence(start: date, every_days: int, after: date) -> date:
    """First date of the series strictly after ``after``."""
    _check_interval(every_days)
    if after < start:
        return start
    periods = (after - start).days // every_days + 1
    return start + timedelta(days=periods * every_days)
