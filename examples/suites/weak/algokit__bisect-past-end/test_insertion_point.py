from algokit import insertion_point, insort


def test_issue_example_insertion_point():
    assert insertion_point([10, 20, 30], 99) == 3


def test_issue_example_insort():
    scores = [10, 20, 30]
    insort(scores, 99)
    assert scores == [10, 20, 30, 99]
