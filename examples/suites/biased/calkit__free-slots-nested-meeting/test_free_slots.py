"""Generated tests for calkit.free_slots."""

from datetime import datetime, timedelta

import pytest

import calkit.slots
from calkit.slots import free_slots

DAY = datetime(2024, 5, 14)


def at(hour, minute=0):
    return DAY.replace(hour=hour, minute=minute)


def test_nested_meeting():
    busy = [(at(9), at(12)), (at(10), at(11)), (at(13), at(17))]
    assert free_slots(busy, at(9), at(17)) == [(at(12), at(13))]


def test_slots_are_tuples():
    result = free_slots([(at(10), at(11))], at(9), at(12))
    assert all(type(slot) is tuple for slot in result)


def test_each_busy_interval_is_clipped_with_helper(monkeypatch):
    calls = []
    original = calkit.slots._clip

    def spy(interval, lo, hi):
        calls.append(interval)
        return original(interval, lo, hi)

    monkeypatch.setattr(calkit.slots, "_clip", spy)
    free_slots([(at(10), at(11)), (at(8), at(9, 30))], at(9), at(12))
    assert calls == [(at(8), at(9, 30)), (at(10), at(11))]


def test_trailing_slot():
    assert free_slots([(at(9), at(10))], at(9), at(12)) == [(at(10), at(12))]


def test_clipped_to_window():
    busy = [(at(7), at(7, 30)), (at(8), at(9, 30)), (at(11), at(13))]
    assert free_slots(busy, at(9), at(12)) == [(at(9, 30), at(11))]


def test_min_length():
    busy = [(at(9), at(9, 30)), (at(10), at(12))]
    assert free_slots(busy, at(9), at(12), timedelta(minutes=30)) == [(at(9, 30), at(10))]


def test_unsorted():
    busy = [(at(11), at(12)), (at(9), at(10))]
    assert free_slots(busy, at(9), at(12)) == [(at(10), at(11))]


def test_back_to_back():
    assert free_slots([(at(9), at(10)), (at(10), at(12))], at(9), at(12)) == []


def test_bad_window_message():
    with pytest.raises(ValueError, match="^window_end is before window_start$"):
        free_slots([], at(12), at(9))
