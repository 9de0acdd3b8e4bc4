from algokit.search import insertion_point


def test_new_maximum_goes_to_the_end():
    assert insertion_point([1, 2, 3], 4) == 3


def test_between_elements():
    assert insertion_point([1, 2, 3], 2) == 2  # the leftmost index is 1
