"""Generated tests for calkit.expand (recurring events, inclusive end)."""

import random
from datetime import date, timedelta

import pytest

from calkit import expand


def expected_series(start, every, until, exclude=()):
    out, k = [], 0
    while start + timedelta(days=k * every) <= until:
        day = start + timedelta(days=k * every)
        if day not in exclude:
            out.append(day)
        k += 1
    return out


def test_issue_example_weekly_retro():
    result = list(expand(date(2024, 3, 1), 7, date(2024, 3, 29)))
    assert result == [date(2024, 3, d) for d in (1, 8, 15, 22, 29)]


def test_one_off_event():
    assert list(expand(date(2024, 6, 30), 10, date(2024, 6, 30))) == [date(2024, 6, 30)]


def test_daily_over_leap_day():
    assert list(expand(date(2024, 2, 27), 1, date(2024, 3, 1))) == [
        date(2024, 2, 27), date(2024, 2, 28), date(2024, 2, 29), date(2024, 3, 1)]


def test_across_year_end():
    assert list(expand(date(2023, 12, 30), 2, date(2024, 1, 5))) == [
        date(2023, 12, 30), date(2024, 1, 1), date(2024, 1, 3), date(2024, 1, 5)]


def test_across_month_end_until_off_grid():
    assert list(expand(date(2024, 1, 25), 5, date(2024, 2, 12))) == [
        date(2024, 1, 25), date(2024, 1, 30), date(2024, 2, 4), date(2024, 2, 9)]


def test_until_between_occurrences():
    assert list(expand(date(2024, 3, 1), 7, date(2024, 3, 20))) == [
        date(2024, 3, 1), date(2024, 3, 8), date(2024, 3, 15)]


def test_interval_longer_than_span():
    assert list(expand(date(2024, 3, 1), 30, date(2024, 3, 20))) == [date(2024, 3, 1)]


@pytest.mark.parametrize("until", [date(2024, 3, 9), date(2023, 12, 1)])
def test_until_before_start(until):
    assert list(expand(date(2024, 3, 10), 7, until)) == []


@pytest.mark.parametrize("every_days", [0, -1, -14])
def test_non_positive_interval(every_days):
    with pytest.raises(ValueError):
        expand(date(2024, 3, 1), every_days, date(2024, 4, 1))


def test_exclusions_keep_the_grid():
    result = expand(date(2024, 3, 1), 7, date(2024, 3, 29), exclude={date(2024, 3, 8), date(2024, 3, 29)})
    assert list(result) == [date(2024, 3, 1), date(2024, 3, 15), date(2024, 3, 22)]


def test_exclusion_off_the_grid_has_no_effect():
    result = expand(date(2024, 3, 1), 7, date(2024, 3, 15), exclude=[date(2024, 3, 2)])
    assert list(result) == [date(2024, 3, 1), date(2024, 3, 8), date(2024, 3, 15)]


def test_random_series_match_reference_model():
    rng = random.Random(42)
    for _ in range(200):
        start = date(2023, 11, 1) + timedelta(days=rng.randint(0, 120))
        every = rng.randint(1, 15)
        until = start + timedelta(days=rng.randint(-5, 90))
        exclude = {start + timedelta(days=rng.randint(0, 60)) for _ in range(rng.randint(0, 3))}
        assert list(expand(start, every, until, exclude=exclude)) == expected_series(start, every, until, exclude)
