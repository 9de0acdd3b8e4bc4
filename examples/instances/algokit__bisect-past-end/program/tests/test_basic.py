from algokit import contains, insertion_point, insort


def test_insertion_point_in_the_middle():
    assert insertion_point([1, 3, 5, 7], 4) == 2


def test_contains():
    assert contains([1, 3, 5, 7], 5)
    assert not contains([1, 3, 5, 7], 6)


def test_insort_keeps_list_sorted():
    data = [1, 4, 9]
    insort(data, 5)
    assert data == [1, 4, 5, 9]
