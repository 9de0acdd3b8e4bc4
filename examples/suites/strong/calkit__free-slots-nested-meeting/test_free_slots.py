"""Generated tests for calkit.free_slots."""

import random
from datetime import datetime, timedelta

import pytest

from calkit import free_slots

DAY = datetime(2024, 5, 14)


def at(hour, minute=0):
    return DAY + timedelta(hours=hour, minutes=minute)


def norm(result):
    assert isinstance(result, list)
    return [tuple(s) for s in result]


def brute_force(busy, lo, hi, min_length):
    """Free 5-minute cells of the window, joined into runs (all test times are multiples of 5 min)."""
    step = timedelta(minutes=5)
    cells = []
    t = lo
    while t < hi:
        cells.append((t, not any(s <= t and t + step <= e for s, e in busy)))
        t += step
    runs, start = [], None
    for t, free in cells + [(hi, False)]:
        if free and start is None:
            start = t
        elif not free and start is not None:
            runs.append((start, t))
            start = None
    return [r for r in runs if r[1] - r[0] >= min_length]


def test_issue_example_nested_call_in_workshop():
    busy = [(at(9), at(12)), (at(10), at(11)), (at(13), at(17))]
    assert norm(free_slots(busy, at(9), at(17))) == [(at(12), at(13))]


def test_several_meetings_inside_a_long_one():
    busy = [(at(9), at(16)), (at(9, 30), at(10)), (at(11), at(11, 30)), (at(14), at(15))]
    assert norm(free_slots(busy, at(8), at(17))) == [(at(8), at(9)), (at(16), at(17))]


def test_trailing_and_leading_slots():
    busy = [(at(10), at(11)), (at(13), at(14))]
    assert norm(free_slots(busy, at(9), at(17))) == [(at(9), at(10)), (at(11), at(13)), (at(14), at(17))]


def test_intervals_outside_or_straddling_window():
    busy = [(at(6), at(7)), (at(7, 30), at(8)), (at(8, 30), at(9, 30)), (at(11), at(13)), (at(18), at(19))]
    assert norm(free_slots(busy, at(9), at(12))) == [(at(9, 30), at(11))]


def test_interval_covering_whole_window():
    assert norm(free_slots([(at(8), at(18))], at(9), at(17))) == []


@pytest.mark.parametrize("minutes, expected", [(29, 2), (30, 2), (31, 0)])
def test_min_length_boundary(minutes, expected):
    busy = [(at(9), at(9, 30)), (at(10), at(10, 15)), (at(10, 45), at(12))]
    result = free_slots(busy, at(9), at(12), min_length=timedelta(minutes=minutes))
    assert len(result) == expected


def test_unsorted_and_overlapping():
    busy = [(at(15), at(16)), (at(9), at(11)), (at(10), at(10, 30)), (at(12), at(13))]
    assert norm(free_slots(busy, at(9), at(17))) == [(at(11), at(12)), (at(13), at(15)), (at(16), at(17))]


def test_back_to_back_meetings():
    busy = [(at(9), at(10)), (at(10), at(11)), (at(11), at(12))]
    assert norm(free_slots(busy, at(9), at(12))) == []


def test_back_to_back_then_gap():
    busy = [(at(9), at(10)), (at(10), at(11))]
    assert norm(free_slots(busy, at(9), at(12))) == [(at(11), at(12))]


def test_empty_calendar():
    assert norm(free_slots([], at(9), at(17))) == [(at(9), at(17))]


def test_window_end_before_start_rejected():
    with pytest.raises(ValueError):
        free_slots([], at(17), at(9))


def test_random_calendars_match_brute_force():
    rng = random.Random(514)
    for _ in range(150):
        busy = []
        for _ in range(rng.randint(0, 6)):
            start = at(7) + timedelta(minutes=15 * rng.randint(0, 44))
            busy.append((start, start + timedelta(minutes=15 * rng.randint(1, 12))))
        lo, hi = at(9), at(17)
        min_length = timedelta(minutes=15 * rng.randint(0, 4))
        assert norm(free_slots(busy, lo, hi, min_length)) == brute_force(busy, lo, hi, min_length), busy
