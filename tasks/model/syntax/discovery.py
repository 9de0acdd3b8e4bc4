"""Test discovery: each test framework's rule of which functions of a parsed file are tests,
and the name its runner reports each by (`Language.tests`; tasks/model/pytest_ids.py reads
them). Each rule is given its own record, so that it reads the node types the record names."""

from __future__ import annotations

import re
from collections.abc import Iterator

import tree_sitter

from testprism.tasks.model.syntax.record import Language, TestFunction
from testprism.tasks.model.syntax.trees import first_line, gtest_name, last_line, text, walk


_GO_TEST = re.compile(r"Test(?![a-z])")


def go_tests(language: Language, root: tree_sitter.Node) -> Iterator[TestFunction]:
    """`go test`'s rule: top-level `func TestX(t *testing.T)`, X not starting in lower case."""
    for node in root.children:
        name = node.child_by_field_name("name")
        params = node.child_by_field_name("parameters")
        if (node.type == "function_declaration" and name is not None and params is not None
                and _GO_TEST.match(text(name)) and re.fullmatch(r"\(\s*\w+\s+\*testing\.T\s*\)", text(params))):
            yield text(name), first_line(node), last_line(node)


_JS_TEST_CALLEES = {"test", "it"}
_JS_GROUP_CALLEES = {"describe"}


def _js_callee(call: tree_sitter.Node) -> str | None:
    """The base name of a test-framework call: `it(…)`, `test.only(…)`, `test.each(t)(…)`."""
    function = call.child_by_field_name("function")
    while function is not None:
        if function.type == "identifier":
            return text(function)
        if function.type == "member_expression":
            function = function.child_by_field_name("object")
        elif function.type == "call_expression":
            function = function.child_by_field_name("function")
        else:
            return None
    return None


def _js_title(call: tree_sitter.Node) -> str | None:
    arguments = call.child_by_field_name("arguments")
    first = arguments.named_children[0] if arguments is not None and arguments.named_children else None
    if first is None or first.type not in ("string", "template_string"):
        return None
    return text(first)[1:-1]


def js_tests(language: Language, root: tree_sitter.Node) -> Iterator[TestFunction]:
    """Jest/Mocha/Vitest's rule: `test(title, …)`/`it(title, …)` calls with a string title
    (`.only`, `.skip`, `.each(table)` variants too), named through their `describe` blocks."""

    def visit(node: tree_sitter.Node, prefix: str) -> Iterator[TestFunction]:
        for child in node.named_children:
            if child.type == "call_expression":
                callee, title = _js_callee(child), _js_title(child)
                if title is not None and callee in _JS_TEST_CALLEES:
                    yield prefix + title, first_line(child), last_line(child)
                    continue
                if title is not None and callee in _JS_GROUP_CALLEES:
                    yield from visit(child, f"{prefix}{title}::")
                    continue
            yield from visit(child, prefix)

    yield from visit(root, "")


_JAVA_TEST_ANNOTATIONS = {"Test", "ParameterizedTest"}


def java_tests(language: Language, root: tree_sitter.Node) -> Iterator[TestFunction]:
    """JUnit's rule: methods annotated `@Test` or `@ParameterizedTest` (any package),
    named `Class::method` through their (nested) classes."""

    def annotated(method: tree_sitter.Node) -> bool:
        modifiers = next((c for c in method.children if c.type == "modifiers"), None)
        names = [text(a.child_by_field_name("name")).rsplit(".", 1)[-1] for a in (modifiers.children if modifiers else ())
                 if a.type in ("marker_annotation", "annotation") and a.child_by_field_name("name") is not None]
        return any(n in _JAVA_TEST_ANNOTATIONS for n in names)

    def visit(node: tree_sitter.Node, prefix: str) -> Iterator[TestFunction]:
        for child in node.named_children:
            name = child.child_by_field_name("name")
            if child.type == "method_declaration" and name is not None and annotated(child):
                yield prefix + text(name), first_line(child), last_line(child)
            elif child.type in language.classes and name is not None:
                yield from visit(child, f"{prefix}{text(name)}::")
            else:
                yield from visit(child, prefix)

    yield from visit(root, "")


_RUST_TEST_ATTRIBUTE = re.compile(r"#\[\s*(?:[\w:]+::)?test\s*(?:\(|\])")


def rust_tests(language: Language, root: tree_sitter.Node) -> Iterator[TestFunction]:
    """libtest's rule: functions with a `#[test]` attribute (or a runtime's `#[tokio::test]`)
    among the attributes right before them, named `module::name` through the file's inline
    `mod` blocks, as libtest names them below the file's own module path; their extent
    starts at their first attribute (as a Java method's at its annotations)."""

    def visit(node: tree_sitter.Node, prefix: str) -> Iterator[TestFunction]:
        attributes: list[tree_sitter.Node] = []
        for child in node.named_children:
            if child.type == "attribute_item":
                attributes.append(child)
                continue
            name = child.child_by_field_name("name")
            tested = any(_RUST_TEST_ATTRIBUTE.match(text(a)) for a in attributes)
            if child.type == "function_item" and name is not None and tested:
                yield prefix + text(name), first_line(attributes[0]), last_line(child)
            elif child.type == "mod_item" and name is not None:
                yield from visit(child.child_by_field_name("body") or child, f"{prefix}{text(name)}::")
            if child.type not in language.comments:
                attributes = []

    yield from visit(root, "")


def gtest_tests(language: Language, root: tree_sitter.Node) -> Iterator[TestFunction]:
    """GoogleTest's rule: `TEST(Suite, Name)`, `TEST_F`, `TEST_P` and typed tests at any
    depth (a namespace may hold them), named `Suite.Name` as its runner and `--gtest_filter`
    name them."""
    for node in walk(root):
        declarator = node.child_by_field_name("declarator") if node.type == "function_definition" else None
        name = gtest_name(declarator) if declarator is not None else None
        if name is not None:
            yield name, first_line(node), last_line(node)


_PHP_TEST_MARKS = re.compile(r"@test\b")


def php_tests(language: Language, root: tree_sitter.Node) -> Iterator[TestFunction]:
    """PHPUnit's rule: methods of a class named `test*`, or marked with a `@test` doc
    comment or a `#[Test]` attribute, named `Class::method`."""

    def marked(method: tree_sitter.Node) -> bool:
        before = method.prev_named_sibling
        attributes = [text(n) for n in walk(method) if n.type == "attribute"]
        return (before is not None and before.type == "comment" and bool(_PHP_TEST_MARKS.search(text(before)))) \
            or any(a.rsplit("\\", 1)[-1] == "Test" for a in attributes)

    for node in walk(root):
        name = node.child_by_field_name("name")
        if node.type != "class_declaration" or name is None:
            continue
        body = node.child_by_field_name("body")
        for method in body.named_children if body is not None else ():
            method_name = method.child_by_field_name("name")
            if method.type == "method_declaration" and method_name is not None \
                    and (text(method_name).startswith("test") or marked(method)):
                yield f"{text(name)}::{text(method_name)}", first_line(method), last_line(method)


_RSPEC_GROUPS = {"describe", "context", "feature", "shared_examples", "example_group"}
_RSPEC_EXAMPLES = {"it", "specify", "example", "scenario", "its"}


def _rspec_words(call: tree_sitter.Node) -> str | None:
    """An RSpec call's description: its constant and string arguments as RSpec writes them
    (`describe Foo::Bar, ".baz"` is `Foo::Bar.baz`), None without one."""
    arguments = call.child_by_field_name("arguments")
    words = [text(a)[1:-1] if a.type == "string" else text(a) for a in (arguments.named_children if arguments else ())
             if a.type in ("string", "constant", "scope_resolution")]
    return _rspec_join(tuple(words)) or None


def _rspec_join(descriptions: tuple[str, ...]) -> str:
    """RSpec's full description: the descriptions joined by spaces, none before one that
    starts with `.`, `#` or `::` (a method of the described constant)."""
    joined = ""
    for description in descriptions:
        if description:
            joined += description if not joined or description.startswith((".", "#", "::")) else f" {description}"
    return joined


def ruby_tests(language: Language, root: tree_sitter.Node) -> Iterator[TestFunction]:
    """RSpec's rule: `it`/`specify`/`example` calls with a block, named by their full
    description (the enclosing `describe`/`context` descriptions, as RSpec joins them);
    Minitest's: `test_*` methods of a class, named `Class#test_name`."""

    def visit(node: tree_sitter.Node, groups: tuple[str, ...], klass: str | None) -> Iterator[TestFunction]:
        for child in node.named_children:
            callee = child.child_by_field_name("method")
            if child.type == "call" and callee is not None and child.child_by_field_name("block") is not None:
                method, words = text(callee), _rspec_words(child)
                if method in _RSPEC_EXAMPLES:
                    yield _rspec_join((*groups, words or "")), first_line(child), last_line(child)
                    continue
                if method in _RSPEC_GROUPS and words is not None:
                    yield from visit(child, (*groups, words), klass)
                    continue
            if child.type == "class" and child.child_by_field_name("name") is not None:
                yield from visit(child, groups, text(child.child_by_field_name("name")))
                continue
            name = child.child_by_field_name("name")
            if child.type == "method" and klass is not None and name is not None and text(name).startswith("test_"):
                yield f"{klass}#{text(name)}", first_line(child), last_line(child)
                continue
            yield from visit(child, groups, klass)

    yield from visit(root, (), None)
