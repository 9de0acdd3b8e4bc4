"""Dependency ordering for small build graphs.

A graph maps each node to the nodes it depends on::

    {"app": ["lib", "log"], "lib": ["core"]}

:func:`toposort` lists the nodes so that every node comes after all of its
dependencies.
"""

from __future__ import annotations

from collections import deque
from typing import Dict, Hashable, Iterable, List, Mapping

Graph = Mapping[Hashable, Iterable[Hashable]]


class CycleError(ValueError):
    """Raised when the dependencies form a cycle; ``nodes`` lists the nodes involved."""

    def __init__(self, nodes: Iterable[Hashable]) -> None:
        self.nodes = list(nodes)
        super().__init__("dependency cycle among: " + ", ".join(map(repr, self.nodes)))


def toposort(graph: Graph) -> List[Hashable]:
    """Return the nodes of ``graph``, each one after all of its dependencies.

    Uses Kahn's algorithm: repeatedly emit a node whose dependencies have all
    been emitted.  Raises :class:`CycleError` if that gets stuck.
    """
    indegree: Dict[Hashable, int] = {node: 0 for node in graph}
    dependents: Dict[Hashable, List[Hashable]] = {node: [] for node in graph}
    for node, deps in graph.items():
        for dep in deps:
            indegree[node] += 1
            dependents.setdefault(dep, []).append(node)
    ready = deque(node for node, count in indegree.items() if count == 0)
    order: List[Hashable] = []
    while ready:
        node = ready.popleft()
        order.append(node)
        for dependent in dependents[node]:
            indegree[dependent] -= 1
            if indegree[dependent] == 0:
                ready.append(dependent)
    if len(order) != len(indegree):
        raise CycleError(node for node, count in indegree.items() if count > 0)
    return order
