"""The test functions of a Python test file, by pytest's default collection rule, read from
its syntax tree: the one reader of which tests a file holds (suite import's selected tests,
curation's test count, the adapters' fail-to-pass ids)."""

from __future__ import annotations

import ast


def find_test_functions(source: str) -> list[tuple[str, int, int]]:
    """(qualified name, first line, last line) of the test functions pytest collects by
    default: `test*` functions at module level and in classes named `Test*` or derived from
    a base (unittest.TestCase). Decorators count as part of the function."""
    found: list[tuple[str, int, int]] = []

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                found.append((prefix + node.name, first, node.end_lineno or node.lineno))
            elif isinstance(node, ast.ClassDef) and (node.name.startswith("Test") or node.bases):
                visit(node.body, f"{prefix}{node.name}::")

    visit(ast.parse(source).body, "")
    return found


def test_ids(path: str, source: str) -> list[str]:
    """pytest node ids (`path::name`, `path::Class::name`) of the file's test functions."""
    return [f"{path}::{name}" for name, _, _ in find_test_functions(source)]
