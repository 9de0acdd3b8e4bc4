from algokit.search import bisect_left


def test_new_maximum_goes_to_the_end():
    assert bisect_left([1, 2, 3], 4) == 3
