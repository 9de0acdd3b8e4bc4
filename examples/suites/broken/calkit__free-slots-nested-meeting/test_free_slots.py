"""Generated tests for calkit.free_slots."""

from datetime import datetime, timedelta

from calkit import free_slots

DAY = datetime(2024, 5, 14)


def at(hour, minute=0):
    return DAY.replace(hour=hour, minute=minute)


def test_nested_meeting():
    busy = [(at(9), at(12)), (at(10), at(11)), (at(13), at(17))]
    # one hour between the workshop and the afternoon meeting
    assert [tuple(s) for s in free_slots(busy, at(9), at(17))] == [(at(12), at(12) + timedelta(hours=1))]


def test_free_after_last_meeting():
    busy = [(at(9), at(10, 30))]
    # 90 minutes of meetings leaves 1.5 hours in a 3-hour window
    start = at(10, 30)
    assert [tuple(s) for s in free_slots(busy, at(9), at(12))] == [(start, start + timedelta(hours=1, minutes=50))]


def test_min_length_keeps_long_slot():
    busy = [(at(9), at(9, 30)), (at(10), at(12))]
    result = free_slots(busy, at(9), at(12), min_length=timedelta(minutes=30))
    assert [tuple(s) for s in result] == [(at(9, 30), at(10))]
