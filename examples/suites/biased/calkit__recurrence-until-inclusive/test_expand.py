"""Generated tests for calkit.expand."""

from datetime import date

import pytest

from calkit.recurrence import expand


def test_until_is_inclusive():
    assert expand(date(2024, 3, 1), 7, date(2024, 3, 29)) == [
        date(2024, 3, 1), date(2024, 3, 8), date(2024, 3, 15), date(2024, 3, 22), date(2024, 3, 29)]


def test_returns_list():
    assert type(expand(date(2024, 3, 1), 1, date(2024, 3, 3))) is list


def test_one_off():
    assert expand(date(2024, 3, 5), 3, date(2024, 3, 5)) == [date(2024, 3, 5)]


def test_invalid_interval_message():
    with pytest.raises(ValueError, match="^every_days must be a positive integer$"):
        expand(date(2024, 3, 1), 0, date(2024, 3, 29))


def test_until_off_grid():
    assert expand(date(2024, 3, 1), 7, date(2024, 3, 20)) == [date(2024, 3, 1), date(2024, 3, 8), date(2024, 3, 15)]


def test_until_before_start():
    assert expand(date(2024, 3, 10), 7, date(2024, 3, 1)) == []


def test_exclude():
    assert expand(date(2024, 3, 1), 7, date(2024, 3, 22), exclude=[date(2024, 3, 8)]) == [
        date(2024, 3, 1), date(2024, 3, 15), date(2024, 3, 22)]


def test_year_end():
    assert expand(date(2023, 12, 30), 2, date(2024, 1, 3)) == [
        date(2023, 12, 30), date(2024, 1, 1), date(2024, 1, 3)]
