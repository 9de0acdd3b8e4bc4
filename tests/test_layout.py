"""The house's floors (docs/architecture.md): storage/ below tasks/, tasks/ below flows/, and
no circle of imports anywhere, lazy imports inside functions included."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FLOORS = {"storage": 0, "tasks": 1, "flows": 2}


def module_of(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["testprism", *parts] if parts[0] in FLOORS else parts)


def imports() -> dict[str, set[str]]:
    """Every testprism module and the testprism modules it imports (anywhere in it)."""
    graph: dict[str, set[str]] = {}
    for floor in FLOORS:
        for path in sorted((ROOT / floor).rglob("*.py")):
            name = module_of(path)
            package = name if path.name == "__init__.py" else name.rpartition(".")[0]
            found: set[str] = set()
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    found |= {a.name for a in node.names}
                elif isinstance(node, ast.ImportFrom):
                    base = node.module or ""
                    if node.level:
                        base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
                    found.add(base)
                    found |= {f"{base}.{a.name}" for a in node.names}
            graph[name] = {m for m in found if m.startswith("testprism.")}
    known = set(graph)
    return {name: {m for m in targets if m in known and m != name} for name, targets in graph.items()}


def floor_of(module: str) -> int:
    return FLOORS[module.split(".")[1]]


def test_floors_only_import_downwards():
    wrong = [
        f"{source} imports {target}"
        for source, targets in imports().items() for target in targets
        if floor_of(target) > floor_of(source)
    ]
    assert not wrong, "\n".join(wrong)


def test_no_circle_of_imports():
    graph = imports()
    # Packages' __init__ modules are not edges of their own: importing a.b.c runs a.b, but
    # a.b importing nothing of a.b.c cannot close a circle through it.
    state: dict[str, int] = {}
    circles: list[list[str]] = []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                circles.append(trail[trail.index(nxt):] + [nxt] if nxt in trail else [node, nxt])
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert not circles, "\n".join(" -> ".join(c) for c in circles)


@pytest.mark.parametrize("floor", ["tasks", "flows"])
def test_the_checker_sees_the_code(floor):
    """The two checks above would pass on an empty graph: make sure they read real edges."""
    graph = imports()
    assert any(floor_of(t) < FLOORS[floor] for s, ts in graph.items() if s.split(".")[1] == floor for t in ts)
    assert "testprism.tasks.execution.batch" in graph["testprism.tasks.replay.runs"]
