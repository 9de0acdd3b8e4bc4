"""The test functions of a test file, read from its syntax tree: the one reader of which
tests a file holds (suite import's selected tests, curation's test count, the adapters'
fail-to-pass ids). Python follows pytest's default collection rule (with `ast`); other
languages follow their record's test rule in tasks/model/syntax/discovery.py (tree-sitter)."""

from __future__ import annotations

import ast

from testprism.tasks.model import syntax


def find_test_functions(source: str, language: str = "python") -> list[tuple[str, int, int]]:
    """(qualified name, first line, last line) of the test functions of a file in `language`.

    Python: the `test*` functions pytest collects by default, at module level and in classes
    named `Test*` or derived from a base (unittest.TestCase); decorators count as part of the
    function. Other languages: their record's rule (`go test`'s `TestX(t *testing.T)`,
    Jest's `test`/`it` calls named through `describe`, JUnit's `@Test` methods).
    Raises SyntaxError for a file that does not parse (tree-sitter: any error node), so a
    count is never taken from half a file, and ValueError for a language with no test rule."""
    if language == syntax.PYTHON.name:
        return _python_tests(source)
    record = syntax.named(language)
    if record.tests is None:
        raise ValueError(f"no test rule for {language}")
    root = syntax.parse(record, source)
    if root.has_error:
        raise SyntaxError(f"{language} source does not parse")
    return list(record.tests(record, root))


def _python_tests(source: str) -> list[tuple[str, int, int]]:
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
