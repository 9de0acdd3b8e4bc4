import copy

import pytest

from algokit import CycleError, toposort


def assert_valid_order(graph, order):
    nodes = set(graph) | {dep for deps in graph.values() for dep in deps}
    assert sorted(order) == sorted(nodes)
    assert len(order) == len(set(order))
    for node, deps in graph.items():
        for dep in deps:
            assert order.index(dep) < order.index(node), (dep, node, order)


@pytest.mark.parametrize(
    "graph",
    [
        {"app": ["lib", "log"], "lib": ["core"]},
        {"a": ["b", "c"], "b": ["d"], "c": ["d"]},
        {"x": ["y", "y", "z"], "z": ["y"]},
        {"solo": []},
        {"t": ["u"], "v": ["w"], "w": ["u"]},
        {1: [2, 3], 2: [3], 3: []},
    ],
)
def test_valid_orders(graph):
    assert_valid_order(graph, toposort(graph))


def test_issue_example_returns_list():
    order = toposort({"app": ["lib", "log"], "lib": ["core"]})
    assert isinstance(order, list)
    assert order[-1] == "app"


@pytest.mark.parametrize(
    "graph",
    [
        {"a": ["a"]},
        {"a": ["b"], "b": ["c"], "c": ["a"]},
        {"ok": ["leaf"], "p": ["q"], "q": ["p"]},
    ],
)
def test_cycles(graph):
    with pytest.raises(CycleError):
        toposort(graph)
    assert issubclass(CycleError, ValueError)


def test_graph_left_untouched():
    graph = {"app": ["lib", "log"], "lib": ["core"]}
    before = copy.deepcopy(graph)
    toposort(graph)
    assert graph == before
    assert list(graph) == ["app", "lib"]
