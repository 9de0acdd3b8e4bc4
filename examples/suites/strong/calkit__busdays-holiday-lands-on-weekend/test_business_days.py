"""Generated tests for calkit.add_business_days."""

import random
from datetime import date, timedelta

import pytest

from calkit import add_business_days

GOOD_FRIDAY = date(2024, 3, 29)
EASTER_MONDAY = date(2024, 4, 1)


def model(start, days, holidays):
    """Walk one calendar day at a time, counting open days."""
    step = 1 if days >= 0 else -1
    day, left = start, abs(days)
    while left:
        day += timedelta(days=step)
        if day.weekday() < 5 and day not in holidays:
            left -= 1
    return day


def test_issue_example_good_friday():
    assert add_business_days(date(2024, 3, 28), 1, holidays={GOOD_FRIDAY}) == date(2024, 4, 1)


def test_friday_and_monday_holidays():
    holidays = {GOOD_FRIDAY, EASTER_MONDAY}
    assert add_business_days(date(2024, 3, 28), 1, holidays=holidays) == date(2024, 4, 2)
    assert add_business_days(date(2024, 4, 2), -1, holidays=holidays) == date(2024, 3, 28)


def test_christmas_run_of_holidays():
    holidays = [date(2024, 12, 25), date(2024, 12, 26), date(2025, 1, 1)]
    assert add_business_days(date(2024, 12, 24), 1, holidays=holidays) == date(2024, 12, 27)
    assert add_business_days(date(2024, 12, 24), 3, holidays=holidays) == date(2024, 12, 31)
    assert add_business_days(date(2024, 12, 24), 4, holidays=holidays) == date(2025, 1, 2)


def test_plain_weekend():
    assert add_business_days(date(2024, 4, 5), 1) == date(2024, 4, 8)
    assert add_business_days(date(2024, 4, 8), 10) == date(2024, 4, 22)


@pytest.mark.parametrize(
    "start, days, expected",
    [
        (date(2024, 4, 8), -1, date(2024, 4, 5)),
        (date(2024, 4, 10), -3, date(2024, 4, 5)),
        (date(2024, 4, 7), -1, date(2024, 4, 5)),
    ],
)
def test_backwards(start, days, expected):
    assert add_business_days(start, days) == expected


def test_backwards_over_holiday_and_weekend():
    assert add_business_days(date(2024, 4, 2), -1, holidays={EASTER_MONDAY}) == GOOD_FRIDAY


@pytest.mark.parametrize("start", [date(2024, 4, 10), date(2024, 4, 6), GOOD_FRIDAY])
def test_zero_days(start):
    assert add_business_days(start, 0, holidays={GOOD_FRIDAY}) == start


def test_weekend_start():
    assert add_business_days(date(2024, 4, 6), 5) == date(2024, 4, 12)
    assert add_business_days(date(2024, 4, 7), 1) == date(2024, 4, 8)


def test_weekend_holiday_is_ignored():
    assert add_business_days(date(2024, 4, 5), 1, holidays={date(2024, 4, 6)}) == date(2024, 4, 8)
    assert add_business_days(date(2024, 4, 4), 2, holidays={date(2024, 4, 7)}) == date(2024, 4, 8)


def test_holidays_as_generator():
    holidays = (date(2024, 3, 29) + timedelta(days=k) for k in range(1))
    assert add_business_days(date(2024, 3, 28), 1, holidays=holidays) == date(2024, 4, 1)


def test_random_against_model():
    rng = random.Random(7)
    base = date(2024, 1, 1)
    for _ in range(300):
        holidays = {base + timedelta(days=rng.randint(0, 120)) for _ in range(rng.randint(0, 25))}
        start = base + timedelta(days=rng.randint(20, 100))
        days = rng.randint(-15, 15)
        assert add_business_days(start, days, holidays=holidays) == model(start, days, holidays), (start, days)
