"""Business-day arithmetic.

Business days are Monday to Friday, minus an optional collection of
holidays (``datetime.date`` objects, e.g. loaded from the company calendar).
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Iterable


def is_business_day(day: date, holidays: Iterable[date] = ()) -> bool:
    """True for a weekday that is not a holiday."""
    return day.weekday() < 5 and day not in holidays


def add_business_days(start: date, days: int, holidays: Iterable[date] = ()) -> date:
    """Return the date ``days`` business days after ``start``.

    A negative ``days`` counts backwards. ``start`` itself does not need to
    be a business day and is never counted; ``days == 0`` returns ``start``.
    """
    holidays = frozenset(holidays)
    step = timedelta(days=1 if days >= 0 else -1)
    current = start
    for _ in range(abs(days)):
        current += step
        while current.weekday() >= 5:
            current += step
        if current in holidays:
            current += step
    return current
