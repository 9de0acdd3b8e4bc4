"""Code structure per language (tasks/model/syntax.py): AST distance of panels, tokens of
near duplicates, changed functions for coverage and test discovery, for Python (whose
numbers must not move) and the tree-sitter languages."""

from __future__ import annotations

import shutil
from itertools import combinations
from pathlib import Path

import pytest

from testprism.tasks.collect.candidate import normalise_patch
from testprism.tasks.collect.panel import TreeNode, ast_distance, patch_tree
from testprism.tasks.model.benchmark import Instance, load_benchmark
from testprism.tasks.model.state import apply_patch

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

# -- Python: the bundled benchmark's distances, as computed before tree-sitter came in ----------

#: ast_distance of every pair of valid candidates of three bundled instances, computed on
#: the code before this module existed (commit ca9656e): Python's path must not move.
PYTHON_DISTANCES = {
    ("algokit__bisect-past-end", "closed-interval", "galloping"): 0.4797297297297297,
    ("algokit__bisect-past-end", "closed-interval", "recursive-halving"): 0.5645161290322581,
    ("algokit__bisect-past-end", "closed-interval", "stdlib-bisect"): 0.780952380952381,
    ("algokit__bisect-past-end", "galloping", "recursive-halving"): 0.6081081081081081,
    ("algokit__bisect-past-end", "galloping", "stdlib-bisect"): 0.831081081081081,
    ("algokit__bisect-past-end", "recursive-halving", "stdlib-bisect"): 0.7983870967741935,
    ("calkit__merge-touching", "event-sweep", "prefix-max-split"): 1.0,
    ("calkit__merge-touching", "event-sweep", "reduce-fold"): 1.0,
    ("calkit__merge-touching", "event-sweep", "tuple-sweep"): 0.9101123595505618,
    ("calkit__merge-touching", "prefix-max-split", "reduce-fold"): 1.0,
    ("calkit__merge-touching", "prefix-max-split", "tuple-sweep"): 0.9795918367346939,
    ("calkit__merge-touching", "reduce-fold", "tuple-sweep"): 0.8641975308641975,
    ("textkit__wrap-exact-width", "index-slices", "regex-findall"): 0.875,
    ("textkit__wrap-exact-width", "index-slices", "string-accumulator"): 0.6826923076923077,
    ("textkit__wrap-exact-width", "index-slices", "textwrap-stdlib"): 0.875,
    ("textkit__wrap-exact-width", "regex-findall", "string-accumulator"): 0.84,
    ("textkit__wrap-exact-width", "regex-findall", "textwrap-stdlib"): 0.4489795918367347,
    ("textkit__wrap-exact-width", "string-accumulator", "textwrap-stdlib"): 0.8133333333333334,
}


def _valid_trees(instance: Instance, tmp_path: Path) -> dict[str, TreeNode]:
    """The panel tree of each valid candidate, read from the program with it applied."""
    trees = {}
    for cand in instance.candidates:
        if cand.label != "valid":
            continue
        patch = normalise_patch(cand.patch.decode())
        tree = tmp_path / instance.id / cand.id
        shutil.copytree(instance.program, tree)
        assert apply_patch(tree, patch.encode()).applied
        trees[cand.id] = patch_tree(patch, lambda rel, t=tree: (t / rel).read_text() if (t / rel).is_file() else None)
    return trees


def test_python_distances_on_the_bundled_benchmark_are_unchanged(tmp_path):
    bench = load_benchmark(EXAMPLES)
    found = {}
    for instance_id in sorted({key[0] for key in PYTHON_DISTANCES}):
        trees = _valid_trees(bench.instances[instance_id], tmp_path)
        for a, b in combinations(sorted(trees), 2):
            found[(instance_id, a, b)] = ast_distance(trees[a], trees[b])
    assert found == PYTHON_DISTANCES
