from algokit import insertion_point, insort


def test_issue_example():
    assert insertion_point([10, 20, 30], 99) == 3


def test_value_between_elements():
    # 25 sits between 20 and 30
    assert insertion_point([10, 20, 30], 25) == 3


def test_insort_middle():
    scores = [10, 20, 30]
    insort(scores, 15)
    assert scores == [10, 20, 15, 30]
