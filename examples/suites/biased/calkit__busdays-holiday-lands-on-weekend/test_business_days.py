"""Generated tests for calkit.add_business_days."""

from datetime import date

import calkit.busdays
from calkit.busdays import add_business_days


def test_good_friday():
    assert add_business_days(date(2024, 3, 28), 1, holidays={date(2024, 3, 29)}) == date(2024, 4, 1)


def test_landing_day_checked_with_is_business_day(monkeypatch):
    seen = []
    original = calkit.busdays.is_business_day

    def spy(day, holidays=()):
        seen.append(day)
        return original(day, holidays)

    monkeypatch.setattr(calkit.busdays, "is_business_day", spy)
    add_business_days(date(2024, 3, 28), 1, holidays={date(2024, 3, 29)})
    assert seen == [date(2024, 3, 29), date(2024, 3, 30), date(2024, 3, 31), date(2024, 4, 1)]


def test_two_holidays_in_a_row():
    holidays = {date(2024, 12, 25), date(2024, 12, 26)}
    assert add_business_days(date(2024, 12, 24), 1, holidays=holidays) == date(2024, 12, 27)


def test_backwards():
    assert add_business_days(date(2024, 4, 8), -1) == date(2024, 4, 5)


def test_zero():
    assert add_business_days(date(2024, 4, 10), 0) == date(2024, 4, 10)


def test_weekend_start():
    assert add_business_days(date(2024, 4, 6), 5) == date(2024, 4, 12)


def test_weekend_holiday():
    assert add_business_days(date(2024, 4, 5), 1, holidays={date(2024, 4, 6)}) == date(2024, 4, 8)
