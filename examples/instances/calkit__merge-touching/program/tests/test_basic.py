from calkit import merge_ranges, total_busy


def pairs(ranges):
    return [tuple(r) for r in ranges]


def test_overlapping_ranges_merge():
    assert pairs(merge_ranges([[1, 4], [2, 6], [8, 9]])) == [(1, 6), (8, 9)]


def test_single_range():
    assert pairs(merge_ranges([[3, 7]])) == [(3, 7)]


def test_total_busy_counts_overlap_once():
    assert total_busy([[0, 30], [15, 45], [60, 90]]) == 75
