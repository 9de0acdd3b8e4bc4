"""Generated tests for calkit.merge_ranges."""

import copy

import calkit.ranges
from calkit.ranges import merge_ranges


def test_touching_ranges_merge():
    assert merge_ranges([[9, 10], [10, 11]]) == [[9, 11]]


def test_chain_merges():
    assert merge_ranges([[1, 2], [2, 4], [4, 7]]) == [[1, 7]]


def test_sorts_with_internal_helper(monkeypatch):
    calls = []
    original = calkit.ranges._sorted_by_start

    def spy(ranges):
        calls.append(ranges)
        return original(ranges)

    monkeypatch.setattr(calkit.ranges, "_sorted_by_start", spy)
    merge_ranges([[3, 4], [1, 3]])
    assert len(calls) == 1


def test_blocks_are_lists():
    result = merge_ranges([[1, 3], [3, 5], [7, 8]])
    assert type(result) is list
    assert all(type(block) is list for block in result)


def test_nested_range_absorbed():
    assert merge_ranges([[1, 10], [2, 3]]) == [[1, 10]]


def test_disjoint_ranges_kept():
    assert merge_ranges([[1, 2], [4, 5]]) == [[1, 2], [4, 5]]


def test_unsorted_input():
    assert merge_ranges([[6, 9], [2, 5], [1, 5]]) == [[1, 5], [6, 9]]


def test_input_not_modified():
    ranges = [[5, 8], [1, 3]]
    before = copy.deepcopy(ranges)
    merge_ranges(ranges)
    assert ranges == before


def test_empty():
    assert merge_ranges([]) == []
