import inspect

import pytest

from algokit import CycleError, toposort
from algokit import graphs


def test_issue_example_exact_order():
    assert toposort({"app": ["lib", "log"], "lib": ["core"]}) == ["log", "core", "lib", "app"]


def test_diamond_exact_order():
    assert toposort({"a": ["b", "c"], "b": ["d"], "c": ["d"]}) == ["d", "b", "c", "a"]


def test_cycle_message():
    with pytest.raises(CycleError, match=r"^dependency cycle among: 'a', 'b'$"):
        toposort({"a": ["b"], "b": ["a"], "c": []})


def test_uses_kahn_queue():
    assert "deque" in inspect.getsource(graphs.toposort)


def test_empty_and_untouched():
    graph = {"app": ["lib"]}
    toposort(graph)
    assert graph == {"app": ["lib"]}
    assert toposort({}) == []
