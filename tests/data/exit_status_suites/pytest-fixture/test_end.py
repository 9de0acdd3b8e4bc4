import pytest

from algokit.search import insertion_point


@pytest.fixture
def sorted_values():
    return [1, 2, 3]


def test_new_maximum_goes_to_the_end(sorted_value):
    assert insertion_point(sorted_value, 4) == 3
