from datetime import datetime, timedelta

from calkit import free_slots, is_free

DAY = datetime(2024, 5, 14)


def at(hour, minute=0):
    return DAY.replace(hour=hour, minute=minute)


def test_gap_between_two_meetings():
    busy = [(at(9), at(10)), (at(11), at(12))]
    assert [tuple(s) for s in free_slots(busy, at(9), at(12))] == [(at(10), at(11))]


def test_min_length_filters_short_gaps():
    busy = [(at(9), at(10)), (at(10, 10), at(12))]
    assert free_slots(busy, at(9), at(12), min_length=timedelta(minutes=15)) == []


def test_is_free():
    busy = [(at(9), at(10))]
    assert is_free(busy, at(10), at(11))
    assert not is_free(busy, at(9, 30), at(10, 30))
