"""The house (docs/house.json, drawn in docs/architecture.md): storage/ below tasks/, tasks/
below flows/, tasks/' stage folders in the pipeline's order, and no circle of imports
anywhere, lazy imports inside functions included."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HOUSE = json.loads((ROOT / "docs" / "house.json").read_text())
FLOORS = {name: rank for rank, name in enumerate(HOUSE["floors"])}
STAGES = {name: rank for rank, name in enumerate(HOUSE["stages"])}


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


def stage_of(module: str) -> str | None:
    """`testprism.tasks.<stage>...` → its stage folder; None for the tasks package itself."""
    parts = module.split(".")
    return parts[2] if parts[1] == "tasks" and len(parts) > 2 else None


def test_every_stage_folder_is_in_the_house():
    folders = {p.name for p in (ROOT / "tasks").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders == set(STAGES)


def test_stages_only_import_earlier_stages():
    """collect → score (mutants read changed lines) and score → collect (curves read panel
    distances) once made a circle of stage folders; what two stages share sits below both."""
    wrong = [
        f"{source} imports {target}"
        for source, targets in imports().items() for target in targets
        if (a := stage_of(source)) and (b := stage_of(target)) and STAGES[b] > STAGES[a]
    ]
    assert not wrong, "\n".join(wrong)


def test_the_stage_checker_sees_arrows_both_ways():
    """Its control: the graph holds arrows between stage folders, and an arrow against the
    order would be caught (replay → execution is down; the reverse would be wrong)."""
    graph = imports()
    down = [(s, t) for s, ts in graph.items() for t in ts
            if stage_of(s) and stage_of(t) and stage_of(s) != stage_of(t)]
    assert ("testprism.tasks.replay.runs", "testprism.tasks.execution.batch") in down
    assert STAGES["execution"] < STAGES["replay"]
