"""Reading a tree-sitter tree: the parser of a record, a tree's tokens, lines and named
functions (`units`), the same for every language with a grammar."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

import tree_sitter

from testprism.tasks.model.syntax.record import Language


@dataclass(frozen=True)
class Unit:
    """A named function or method: `name` is qualified by its enclosing types (`Type.method`),
    `lines` is its whole extent (annotations included), `body` the lines of its body."""

    name: str
    line: int
    lines: range
    body: range


@cache
def parser(language: Language) -> tree_sitter.Parser:
    """The tree-sitter parser of a language with a grammar (loaded once per process)."""
    if language.grammar is None:
        raise ValueError(f"{language.name} has no tree-sitter grammar here")
    return tree_sitter.Parser(tree_sitter.Language(language.grammar()))


def parse(language: Language, source: str | bytes) -> tree_sitter.Node:
    """The root of `source`'s tree. tree-sitter always returns one: callers that need a
    whole program check `root.has_error`."""
    data = source.encode("utf-8") if isinstance(source, str) else source
    return parser(language).parse(data).root_node


def text(node: tree_sitter.Node) -> str:
    return (node.text or b"").decode("utf-8", errors="replace")


def first_line(node: tree_sitter.Node) -> int:
    return node.start_point.row + 1


def last_line(node: tree_sitter.Node) -> int:
    """The node's last line; a node ending at column 0 (a trailing newline) ends the line before."""
    end = node.end_point
    return max(end.row if end.column == 0 else end.row + 1, first_line(node))


def walk(node: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    """Every node under `node`, `node` first, in source order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def leaves(language: Language, node: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    """The tokens of a tree in source order: leaves and literals whole, comments left out."""
    if node.type in language.comments:
        return
    if node.child_count == 0 or node.type in language.literals:
        if node.end_byte > node.start_byte:
            yield node
        return
    for child in node.children:
        yield from leaves(language, child)


def tokens(language: Language, source: str) -> list[str]:
    """The token texts of a piece of code (a whole file or the lines a patch adds: tree-sitter
    reads fragments too), so that layout and comments change nothing."""
    return [text(leaf) for leaf in leaves(language, parse(language, source))]


# -- names -----------------------------------------------------------------------------------


def _name(node: tree_sitter.Node) -> str | None:
    """A function's or type's own name: its `name` field, a Go method's receiver type
    prefixed, an anonymous function's variable (`const f = () => …`)."""
    name = node.child_by_field_name("name")
    if name is None and node.type == "function_definition":  # C, C++: the name is inside the declarator
        return _c_function_name(node)
    if name is None and node.parent is not None and node.parent.type in ("variable_declarator", "pair"):
        name = node.parent.child_by_field_name("name") or node.parent.child_by_field_name("key")
    if name is None:
        return None
    receiver = node.child_by_field_name("receiver")
    if receiver is not None:
        types = [text(n) for n in walk(receiver) if n.type == "type_identifier"]
        if types:
            return f"{types[0]}.{text(name)}"
    return text(name)


#: GoogleTest's test macros: `TEST(Suite, Name) {…}` parses as a function named TEST
GTEST_MACROS = {"TEST", "TEST_F", "TEST_P", "TYPED_TEST", "TYPED_TEST_P"}


def gtest_name(declarator: tree_sitter.Node) -> str | None:
    """`Suite.Name` when a declarator is GoogleTest's `TEST(Suite, Name)` (or TEST_F…)."""
    if declarator.type != "function_declarator" or text(declarator.child_by_field_name("declarator")) not in GTEST_MACROS:
        return None
    params = [text(p) for p in declarator.child_by_field_name("parameters").named_children]
    return ".".join(params) if len(params) == 2 else None


def _c_function_name(function: tree_sitter.Node) -> str | None:
    """A C or C++ function definition's name, read through its declarators (pointers,
    references, the parameter list): `lru::Cache::get` as `lru.Cache.get`, like a method
    defined in its class; a GoogleTest `TEST(Suite, Name)` as `Suite.Name`, its runner's id."""
    declarator = function.child_by_field_name("declarator")
    while declarator is not None and declarator.type not in (
            "identifier", "field_identifier", "qualified_identifier", "destructor_name", "operator_name"):
        if gtest_name(declarator) is not None:
            return gtest_name(declarator)
        declarator = declarator.child_by_field_name("declarator")
    return None if declarator is None else text(declarator).replace("::", ".")


def _body_lines(language: Language, function: tree_sitter.Node) -> range:
    """A function's body: its first statement's line to its last statement's (as Python's
    `body[0]` to its end: the lines of the braces run nothing of the function's own — the
    closing `};` of `const f = () => {…};` belongs to the enclosing statement, which runs
    when the module loads), the body's own lines when it is empty."""
    body = function.child_by_field_name("body") or function
    inner = [c for c in body.named_children if c.type not in language.comments]
    if not inner:
        return range(first_line(body), last_line(body) + 1)
    return range(first_line(inner[0]), last_line(inner[-1]) + 1)


def units(language: Language, root: tree_sitter.Node) -> Iterator[Unit]:
    """Every named function and method, qualified by its enclosing classes and functions."""

    def visit(node: tree_sitter.Node, prefix: str) -> Iterator[Unit]:
        for child in node.children:
            inner = prefix
            if language.is_function(child) or child.type in language.classes:
                name = _name(child)
                if name is not None:
                    inner = f"{prefix}{name}."
                    if language.is_function(child):
                        yield Unit(f"{prefix}{name}", first_line(child), range(first_line(child), last_line(child) + 1),
                                   _body_lines(language, child))
            yield from visit(child, inner)

    yield from visit(root, "")
