"""Generated tests for calkit.expand."""

from datetime import date

import pytest

from calkit import expand


@pytest.fixture
def weekly_strat():
    return date(2024, 3, 1)


def test_until_is_inclusive(weekly_start):
    result = list(expand(weekly_start, 7, date(2024, 3, 29)))
    assert result[-1] == date(2024, 3, 29)


def test_five_fridays(weekly_start):
    assert len(list(expand(weekly_start, 7, date(2024, 3, 29)))) == 5


def test_one_off():
    assert list(expand(date(2024, 3, 5), 3, date(2024, 3, 5))) == [date(2024, 3, 5)]
