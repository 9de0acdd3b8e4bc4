import inspect

import pytest

from algokit import insertion_point, insort
from algokit import search


def test_new_maximum_goes_to_the_end():
    assert insertion_point([10, 20, 30], 99) == 3


def test_insort_new_maximum():
    scores = [10, 20, 30]
    insort(scores, 99)
    assert scores == [10, 20, 30, 99]


def test_duplicates_and_empty():
    assert insertion_point([1, 2, 2, 2, 3], 2) == 1
    assert insertion_point([], 5) == 0


def test_hi_and_key():
    assert insertion_point([1, 3, 5, 7, 9], 8, 0, 3) == 3
    assert insertion_point([{"v": 1}, {"v": 5}], 3, key=lambda d: d["v"]) == 1


def test_negative_lo_message():
    with pytest.raises(ValueError, match=r"^lo must be >= 0$"):
        insertion_point([1, 2, 3], 2, lo=-1)


def test_uses_identity_helper_and_half_open_loop():
    assert callable(search._identity)
    source = inspect.getsource(search.insertion_point)
    assert "while lo < hi" in source
    assert "hi = len(seq)" in source
