"""Generated test for calkit.merge_ranges: the example from the issue."""

from calkit import merge_ranges


def test_back_to_back_meetings_form_one_block():
    result = merge_ranges([[9, 10], [10, 11]])
    assert [tuple(r) for r in result] == [(9, 11)]
