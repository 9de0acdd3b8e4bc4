"""Generated tests for calkit.merge_ranges."""

from calkit.intervals import merge_ranges


def test_touching_ranges_merge():
    assert [tuple(r) for r in merge_ranges([[9, 10], [10, 11]])] == [(9, 11)]


def test_disjoint_ranges_kept():
    assert [tuple(r) for r in merge_ranges([[1, 2], [4, 5]])] == [(1, 2), (4, 5)]


def test_empty():
    assert merge_ranges([]) == []
