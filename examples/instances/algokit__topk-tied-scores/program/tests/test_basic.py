from algokit import largest, top_k


def test_top_three_numbers():
    assert top_k([4, 1, 9, 7, 3], 3) == [9, 7, 4]


def test_top_k_with_key():
    words = ["pear", "fig", "banana", "kiwi"]
    assert top_k(words, 1, key=len) == ["banana"]


def test_largest_default():
    assert largest([], default=None) is None
