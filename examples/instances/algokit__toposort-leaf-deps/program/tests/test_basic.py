import pytest

from algokit import CycleError, toposort


def test_chain():
    assert toposort({"c": ["b"], "b": ["a"], "a": []}) == ["a", "b", "c"]


def test_cycle():
    with pytest.raises(CycleError):
        toposort({"a": ["b"], "b": ["a"]})
