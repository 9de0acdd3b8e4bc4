import bisect
import random

import pytest

from algokit import contains, insertion_point, insort


def test_new_maximum_goes_to_the_end():
    assert insertion_point([10, 20, 30], 99) == 3
    assert insertion_point([1], 2) == 1


def test_insort_new_maximum_keeps_list_sorted():
    scores = [10, 20, 30]
    assert insort(scores, 99) == 3
    assert scores == [10, 20, 30, 99]


def test_new_minimum_goes_to_the_front():
    assert insertion_point([10, 20, 30], -5) == 0


def test_leftmost_among_duplicates():
    assert insertion_point([1, 2, 2, 2, 3], 2) == 1
    assert insertion_point([4, 4], 4) == 0
    assert insertion_point([1, 2, 2], 2) == 1


def test_empty_inputs():
    assert insertion_point([], 1) == 0
    assert insertion_point((), 1) == 0
    data = []
    insort(data, 3)
    assert data == [3]


def test_key_is_applied_to_elements_not_to_x():
    people = [{"age": 20}, {"age": 30}, {"age": 40}]
    by_age = lambda p: p["age"]
    assert insertion_point(people, 35, key=by_age) == 2
    assert insertion_point(people, 41, key=by_age) == 3
    assert contains(people, 30, key=by_age)


def test_lo_hi_window():
    seq = [1, 3, 5, 7, 9]
    assert insertion_point(seq, 8, 0, 3) == 3
    assert insertion_point(seq, 100, 1, 4) == 4
    assert insertion_point(seq, 0, 2) == 2
    assert insertion_point(seq, 100, 2) == 5


def test_negative_lo_raises_value_error():
    with pytest.raises(ValueError):
        insertion_point([1, 2, 3], 1, -1)


def test_other_sequence_types():
    assert insertion_point(range(0, 10, 2), 11) == 5
    assert insertion_point((1, 2, 3), 3) == 2


def test_agrees_with_bisect_left_on_random_inputs():
    rng = random.Random(1234)
    for _ in range(300):
        seq = sorted(rng.randint(0, 8) for _ in range(rng.randint(0, 9)))
        x = rng.randint(-1, 9)
        lo = rng.randint(0, len(seq))
        hi = rng.randint(lo, len(seq))
        assert insertion_point(seq, x) == bisect.bisect_left(seq, x), (seq, x)
        assert insertion_point(seq, x, lo, hi) == bisect.bisect_left(seq, x, lo, hi), (seq, x, lo, hi)
