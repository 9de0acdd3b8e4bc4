from algokit.search import insertion_point


def expected_end(seq):
    return len(seq)


def test_new_maximum_goes_to_the_end():
    seq = [1, 2, 3]
    assert insertion_point(seq, 4) == expect_end(seq)
