"""Measure: how many times each stage option is declared, and the longest functions of flows/.

Why (issue 30, "must show"): an option declared once (a field of the stage's settings
object) is one place to add or change it; a flow that only wires stays short. Read from
the source with `ast`, so it runs on any revision's tree (`--root`):

- declarations of an option: function parameters and class fields (annotated names in a
  class body) with the option's name where a stage is entered: flows/ (CLI commands,
  flows), the pipeline config (tasks/pipeline/), the stages' settings (tasks/*/settings.py)
  and crossval's config file (tasks/generate/crossval_config.py). A parameter the typer
  decorator makes from a field is not in the source, so it is not counted: that is the
  point. Domain functions further down take the value, they do not declare the option;
- the longest functions of flows/ (lines from `def` to the last line of the body).

Run: `python bench/house_figures.py [--root TREE]`.
"""

from __future__ import annotations

import argparse
import ast
import json
from collections import defaultdict
from pathlib import Path

#: each stage's own options (replay's, collect's, generate's), by their field names
OPTIONS = {
    "replay": ("configurations", "timeout_s", "retry_errors", "concurrency", "confirm_audit", "audit_seed",
               "shared_disk", "early_stop", "patch_fuzz"),
    "collect": ("predictions", "diffs", "panel", "near_duplicate", "rule", "timeout_s", "mutant_limit", "patch_fuzz"),
    "generate": ("configuration", "command", "mode", "strategy", "caps", "tools", "instances", "model_url",
                 "api_key_env"),
}

#: the same option under another name in the source (the CLI's flag names, a nested model's
#: fields spelt out): counted as the option
ALIASES = {"timeout": "timeout_s", "mutants": "mutant_limit", "min_valid_distance": "rule",
           "max_invalid_jaccard": "rule", "wall_clock": "caps", "wall_clock_s": "caps", "run_tokens": "caps",
           "run_steps": "caps", "tool": "tools", "instance": "instances", "configuration_": "configurations"}


def declarations(root: Path) -> dict[str, list[str]]:
    """Every place (file:line) a parameter or class field of each name is declared."""
    found: dict[str, list[str]] = defaultdict(list)
    names = {n for group in OPTIONS.values() for n in group} | set(ALIASES)
    entries = [*(root / "flows").rglob("*.py"), *(root / "tasks" / "pipeline").rglob("*.py"),
               *(root / "tasks").glob("*/settings.py"), root / "tasks" / "generate" / "crossval_config.py"]
    for path in sorted(p for p in entries if p.is_file()):
        tree = ast.parse(path.read_text())
        where = str(path.relative_to(root))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args
                for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
                    if arg.arg in names:
                        found[ALIASES.get(arg.arg, arg.arg)].append(f"{where}:{node.lineno} {node.name}({arg.arg})")
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) \
                            and item.target.id in names:
                        found[ALIASES.get(item.target.id, item.target.id)].append(
                            f"{where}:{item.lineno} {node.name}.{item.target.id}")
    return found


def longest_functions(root: Path, top: int = 5) -> list[tuple[int, str]]:
    lengths = []
    for path in sorted((root / "flows").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                lengths.append((node.end_lineno - first + 1, f"{path.relative_to(root)}:{node.name}"))
    return sorted(lengths, reverse=True)[:top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--verbose", action="store_true", help="list every declaration")
    args = parser.parse_args()
    found = declarations(args.root)
    figures = {stage: {name: len(found[name]) for name in names} for stage, names in OPTIONS.items()}
    for stage, counts in figures.items():
        print(f"{stage}: " + ", ".join(f"{n} {c}" for n, c in counts.items()))
    if args.verbose:
        for name, places in sorted(found.items()):
            print(f"  {name}: " + "; ".join(places))
    longest = longest_functions(args.root)
    print("longest functions of flows/: " + ", ".join(f"{name} {n}" for n, name in longest))
    if args.json:
        args.json.write_text(json.dumps({"declarations": figures, "longest": longest}, indent=1))


if __name__ == "__main__":
    main()
