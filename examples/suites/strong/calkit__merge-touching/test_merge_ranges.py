"""Generated tests for calkit.merge_ranges: touching ranges must merge."""

import copy
import random

import pytest

from calkit import merge_ranges


def as_pairs(result):
    assert isinstance(result, list)
    return [tuple(r) for r in result]


def brute_force(ranges):
    """Union of closed ranges by repeatedly joining any two that overlap or touch."""
    blocks = [tuple(r) for r in ranges]
    changed = True
    while changed:
        changed = False
        for i in range(len(blocks)):
            for j in range(i + 1, len(blocks)):
                (a, b), (c, d) = blocks[i], blocks[j]
                if a <= d and c <= b:
                    blocks[i] = (min(a, c), max(b, d))
                    del blocks[j]
                    changed = True
                    break
            if changed:
                break
    return sorted(blocks)


def test_issue_example_back_to_back_meetings():
    assert as_pairs(merge_ranges([[9, 10], [10, 11]])) == [(9, 11)]


def test_chain_of_touching_ranges():
    assert as_pairs(merge_ranges([[1, 2], [2, 4], [4, 7]])) == [(1, 7)]


@pytest.mark.parametrize(
    "ranges, expected",
    [
        ([[1, 10], [2, 3]], [(1, 10)]),
        ([[1, 10], [2, 3], [4, 5]], [(1, 10)]),
        ([[0, 10], [0, 4], [3, 6]], [(0, 10)]),
        ([[1, 4], [2, 10], [3, 5]], [(1, 10)]),
    ],
)
def test_nested_ranges_are_absorbed(ranges, expected):
    assert as_pairs(merge_ranges(ranges)) == expected


def test_separate_ranges_all_kept():
    assert as_pairs(merge_ranges([[1, 2], [4, 5], [7, 9]])) == [(1, 2), (4, 5), (7, 9)]


def test_lone_last_range_kept_after_merge():
    assert as_pairs(merge_ranges([[1, 3], [3, 4], [8, 9]])) == [(1, 4), (8, 9)]


def test_single_range():
    assert as_pairs(merge_ranges([[3, 7]])) == [(3, 7)]


def test_unsorted_input_with_shared_end():
    assert as_pairs(merge_ranges([[6, 9], [2, 5], [1, 5], [8, 10]])) == [(1, 5), (6, 10)]


def test_result_ordered_by_start():
    result = as_pairs(merge_ranges([[20, 22], [5, 6], [11, 15], [0, 1]]))
    assert result == [(0, 1), (5, 6), (11, 15), (20, 22)]


def test_input_list_and_inner_ranges_untouched():
    ranges = [[5, 8], [1, 3], [3, 6], [10, 12]]
    before = copy.deepcopy(ranges)
    inner = list(ranges)
    merge_ranges(ranges)
    assert ranges == before
    assert all(a is b for a, b in zip(ranges, inner))


def test_empty_input():
    assert merge_ranges([]) == []


def test_tuple_pairs_accepted():
    assert as_pairs(merge_ranges([(4, 6), (1, 4)])) == [(1, 6)]


def test_matches_brute_force_on_random_inputs():
    rng = random.Random(20240611)
    for _ in range(300):
        ranges = []
        for _ in range(rng.randint(0, 7)):
            a = rng.randint(0, 20)
            ranges.append([a, a + rng.randint(0, 6)])
        assert sorted(as_pairs(merge_ranges(ranges))) == brute_force(ranges), ranges
        assert as_pairs(merge_ranges(ranges)) == sorted(as_pairs(merge_ranges(ranges)))
