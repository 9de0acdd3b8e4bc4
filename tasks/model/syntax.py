"""The syntax of a language: the one place that knows how each language's code is shaped.

Panels (AST distance), near duplicates (tokens), coverage (changed functions and code
lines) and curation (test counts) all read code structure. Python is read with `ast`, whose
behaviour the bundled benchmark's numbers depend on; every other language with a
`Language` record here is read with its tree-sitter grammar. A file of a language without a
grammar is not measured by these readers (each caller says what it does instead).

A language is a record in `LANGUAGES`: its file extensions, its grammar, and which node types
are functions, classes, statements, literals and comments, plus its test rule, how the
provided agent writes and runs a test of it (`TestConvention`) and what the mutation
operators rewrite in its trees (`MutationSyntax`). Adding a language is adding a record.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import PurePosixPath

import tree_sitter
import tree_sitter_c
import tree_sitter_cpp
import tree_sitter_go
import tree_sitter_java
import tree_sitter_javascript
import tree_sitter_rust
import tree_sitter_php
import tree_sitter_ruby
import tree_sitter_typescript

TestFunction = tuple[str, int, int]
"""(qualified name, first line, last line), 1-based and inclusive, as pytest_ids reports them."""


@dataclass(frozen=True)
class Unit:
    """A named function or method: `name` is qualified by its enclosing types (`Type.method`),
    `lines` is its whole extent (annotations included), `body` the lines of its body."""

    name: str
    line: int
    lines: range
    body: range


@dataclass(frozen=True)
class TestConvention:
    """How the provided agent (tasks/generate/agent.py) writes and runs one test file of the
    language. The agent knows no test framework of its own: the harness hands it this record
    as `tmp/.task/language.json`, so a language gets generation by getting a record here.

    `run` is the argv that runs the one file from the program root and writes its JUnit
    report to `{junit}` (`{python}`: the interpreter the agent was given); `suite` is the
    same run as the generated suite's `tmp/run_tests.sh` line (reading `$TESTPRISM_JUNIT`).
    A failure is the test's own assertion (what proves the bug) when its JUnit text matches
    `assertion`; any other failure (a compile error, a crash, a missing import) is an error."""

    framework: str  #: what the prompt calls the test file: "pytest", "Go test", ...
    fence: tuple[str, ...]  #: the code-fence labels the agent takes the file from, the first asked for
    path: str  #: where the file goes, from the program root (under tmp/)
    run: tuple[str, ...]
    shown: str  #: the run as the prompt shows it
    suite: str
    assertion: str  #: a regular expression (searched in a failure's stripped text)
    guidance: str  #: how the file reaches the program and what it may use, for the prompt


@dataclass(frozen=True, eq=False)  # hashed by identity: its tables are dicts
class MutationSyntax:
    """What the mutation operators (tasks/collect/mutants.py) rewrite in a tree-sitter tree,
    each a replacement of one node's bytes: the tables map an operator token to the one it
    becomes. Node types name where each operator looks; a language adds operators by adding
    entries (Python is mutated with libcst and has none)."""

    binary: frozenset[str]  #: binary expressions, whose `operator` field is the token
    augmented: frozenset[str]  #: `x += y` and its kind, whose `operator` field is the token
    relational: dict[str, str]
    boundary: dict[str, str]
    arithmetic: dict[str, str]
    conditions: frozenset[str]  #: nodes whose `condition` field is a condition to negate
    parenthesized: frozenset[str]  #: a condition of this type keeps its parentheses outside the `!`
    removable: frozenset[str]  #: statements removed (when their parent is one of `blocks`)
    blocks: frozenset[str]
    empty: str  #: what a removed statement leaves
    returns: frozenset[str]  #: return statements (their value, or each of a value list, is replaced)
    value_lists: frozenset[str] = frozenset()  #: `return a, b` (Go): each value replaced on its own
    #: a removable statement whose expression is one of these stays (Rust's `if`, `match` and
    #: `return` are expression statements: removing a whole `if` is no single fault, a
    #: `return` no longer compiles)
    kept: frozenset[str] = frozenset()
    booleans: dict[str, str] = field(default_factory=lambda: {"true": "false", "false": "true"})
    null: str | None = None  #: a constant any returned value may become (untyped languages)
    result_field: str = ""  #: the function field holding its declared result type(s)
    #: (pattern, constant): a returned value of a declared type fully matching the pattern
    #: becomes the constant (the type's zero); a type matching none is left alone
    zero_values: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Language:
    """How one language's code is read. `grammar` is None for Python (read with `ast`)."""

    name: str
    extensions: tuple[str, ...]
    grammar: Callable[[], object] | None = None
    functions: frozenset[str] = frozenset()  #: named functions and methods
    classes: frozenset[str] = frozenset()  #: types whose methods are named `Type.method`
    statements: frozenset[str] = frozenset()  #: statements beyond the `*_statement` types
    literals: frozenset[str] = frozenset()  #: nodes read as one token (strings keep their spaces)
    comments: frozenset[str] = frozenset({"comment"})
    #: the test functions of a parsed file (None: the language has no test rule here)
    tests: Callable[[tree_sitter.Node], Iterator[TestFunction]] | None = None
    #: the files the language's test runner reads tests from
    test_file: Callable[[str], bool] = field(default=lambda path: True)
    #: how the provided agent writes and runs a test (None: it does not write this language)
    convention: TestConvention | None = None
    #: what the mutation operators rewrite (None: no mutants; Python's come from libcst)
    mutation: MutationSyntax | None = None

    def is_statement(self, node: tree_sitter.Node) -> bool:
        return node.type.endswith("_statement") or node.type in self.statements

    def is_function(self, node: tree_sitter.Node) -> bool:
        return node.type in self.functions


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
_GTEST_MACROS = {"TEST", "TEST_F", "TEST_P", "TYPED_TEST", "TYPED_TEST_P"}


def _gtest_name(declarator: tree_sitter.Node) -> str | None:
    """`Suite.Name` when a declarator is GoogleTest's `TEST(Suite, Name)` (or TEST_F…)."""
    if declarator.type != "function_declarator" or text(declarator.child_by_field_name("declarator")) not in _GTEST_MACROS:
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
        if _gtest_name(declarator) is not None:
            return _gtest_name(declarator)
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


# -- test rules ------------------------------------------------------------------------------

_GO_TEST = re.compile(r"Test(?![a-z])")


def _go_tests(root: tree_sitter.Node) -> Iterator[TestFunction]:
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


def _js_tests(root: tree_sitter.Node) -> Iterator[TestFunction]:
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


def _java_tests(root: tree_sitter.Node) -> Iterator[TestFunction]:
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
            elif child.type in JAVA.classes and name is not None:
                yield from visit(child, f"{prefix}{text(name)}::")
            else:
                yield from visit(child, prefix)

    yield from visit(root, "")


_RUST_TEST_ATTRIBUTE = re.compile(r"#\[\s*(?:[\w:]+::)?test\s*(?:\(|\])")


def _rust_tests(root: tree_sitter.Node) -> Iterator[TestFunction]:
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
            if child.type not in RUST.comments:
                attributes = []

    yield from visit(root, "")


def _gtest_tests(root: tree_sitter.Node) -> Iterator[TestFunction]:
    """GoogleTest's rule: `TEST(Suite, Name)`, `TEST_F`, `TEST_P` and typed tests at any
    depth (a namespace may hold them), named `Suite.Name` as its runner and `--gtest_filter`
    name them."""
    for node in walk(root):
        declarator = node.child_by_field_name("declarator") if node.type == "function_definition" else None
        name = _gtest_name(declarator) if declarator is not None else None
        if name is not None:
            yield name, first_line(node), last_line(node)


_PHP_TEST_MARKS = re.compile(r"@test\b")


def _php_tests(root: tree_sitter.Node) -> Iterator[TestFunction]:
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


def _ruby_tests(root: tree_sitter.Node) -> Iterator[TestFunction]:
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


# -- the records -----------------------------------------------------------------------------

#: the operator tables of the C family (Go, JavaScript, TypeScript, Java)
C_RELATIONAL = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "==": "!=", "!=": "=="}
C_BOUNDARY = {"<": "<=", "<=": "<", ">": ">=", ">=": ">"}
C_ARITHMETIC = {"+": "-", "-": "+", "*": "/", "/": "*", "%": "/",
                "+=": "-=", "-=": "+=", "*=": "/=", "/=": "*=", "%=": "/="}

PYTHON = Language(
    "python", (".py",),
    convention=TestConvention(
        "pytest", ("python", "py", "python3"), "tmp/test_generated.py",
        ("{python}", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tmp/test_generated.py", "--junitxml={junit}"),
        "python -m pytest tmp/test_generated.py",
        # tmp/.task is the harness's, not the suite's
        'python -m pytest -q -p no:cacheprovider tmp --ignore=tmp/.task --junitxml="$TESTPRISM_JUNIT"',
        r": AssertionError\Z",
        "so import the program's modules as from its root. Use only the standard library, pytest and the program"),
)
GO = Language(
    "go", (".go",), tree_sitter_go.language,
    functions=frozenset({"function_declaration", "method_declaration"}),
    statements=frozenset({"short_var_declaration", "var_declaration", "const_declaration", "type_declaration",
                          "function_declaration", "method_declaration", "import_declaration"}),
    literals=frozenset({"interpreted_string_literal", "raw_string_literal", "rune_literal"}),
    tests=_go_tests, test_file=lambda path: path.endswith("_test.go"),
    convention=TestConvention(
        "Go test", ("go", "golang"), "tmp/generated_test.go",
        ("gotestsum", "--junitfile", "{junit}", "--", "-count=1", "./tmp/"), "go test ./tmp/",
        'gotestsum --junitfile "$TESTPRISM_JUNIT" -- -count=1 ./tmp/',
        r"(?m)^\s*\S+_test\.go:\d+: ",  # t.Errorf/t.Fatalf's `file_test.go:12: message`, not a panic or build failure
        "in package `tmp_test` (the folder tmp/ of the module go.mod names), so import the program's packages by "
        "their module path, and fail with t.Errorf or t.Fatalf. Use only the standard library and the program "
        "(modules cannot be fetched)"),
    mutation=MutationSyntax(
        binary=frozenset({"binary_expression"}), augmented=frozenset({"assignment_statement"}),
        relational=C_RELATIONAL, boundary=C_BOUNDARY, arithmetic=C_ARITHMETIC,
        conditions=frozenset({"if_statement", "for_clause"}), parenthesized=frozenset(),
        removable=frozenset({"expression_statement", "assignment_statement", "inc_statement", "dec_statement"}),
        blocks=frozenset({"block", "statement_list"}), empty="",
        returns=frozenset({"return_statement"}), value_lists=frozenset({"expression_list"}), result_field="result",
        zero_values=((r"\[\].*|map\[.*|\*.*|func.*|chan.*|interface.*|error|any", "nil"), (r"bool", "false"),
                     (r"string", '""'), (r"u?int(8|16|32|64)?|uintptr|byte|rune|float(32|64)", "0"))),
)
JAVASCRIPT = Language(
    "javascript", (".js", ".mjs", ".cjs", ".jsx"), tree_sitter_javascript.language,
    functions=frozenset({"function_declaration", "generator_function_declaration", "method_definition",
                         "function_expression", "arrow_function"}),
    classes=frozenset({"class_declaration", "class"}),
    statements=frozenset({"lexical_declaration", "variable_declaration", "function_declaration",
                          "generator_function_declaration", "class_declaration", "method_definition",
                          "field_definition"}),
    literals=frozenset({"string", "template_string", "regex"}),
    tests=_js_tests,
    convention=TestConvention(
        "node:test", ("javascript", "js"), "tmp/generated.test.js",
        ("node", "--test", "--test-reporter=junit", "--test-reporter-destination={junit}", "tmp/generated.test.js"),
        "node --test tmp/generated.test.js",
        'node --test --test-reporter=junit --test-reporter-destination="$TESTPRISM_JUNIT" --test-reporter=spec '
        '--test-reporter-destination=stdout tmp/generated.test.js',
        r"AssertionError \[ERR_ASSERTION\]",
        "with Node's own runner and assertions (`require('node:test')`, `require('node:assert/strict')`), requiring "
        "the program's modules by their path from tmp/ (`../src/...`). Use only Node's built-in modules and the "
        "program (no npm package is installed)"),
    mutation=MutationSyntax(
        binary=frozenset({"binary_expression"}), augmented=frozenset({"augmented_assignment_expression"}),
        relational=C_RELATIONAL | {"===": "!==", "!==": "==="}, boundary=C_BOUNDARY, arithmetic=C_ARITHMETIC,
        conditions=frozenset({"if_statement", "while_statement", "do_statement", "for_statement",
                              "ternary_expression"}),
        parenthesized=frozenset({"parenthesized_expression"}),
        removable=frozenset({"expression_statement"}), blocks=frozenset({"statement_block"}), empty=";",
        returns=frozenset({"return_statement"}), null="null"),
)
TYPESCRIPT = replace(
    JAVASCRIPT, name="typescript", extensions=(".ts", ".mts", ".cts"), grammar=tree_sitter_typescript.language_typescript,
    classes=JAVASCRIPT.classes | {"abstract_class_declaration", "interface_declaration"},
    # node runs no .ts file: Vitest does (examples/environments/typescript), and strips the types
    convention=TestConvention(
        "Vitest", ("typescript", "ts"), "tmp/generated.test.ts",
        ("vitest", "run", "--reporter=junit", "--outputFile.junit={junit}", "tmp/generated.test.ts"),
        "vitest run tmp/generated.test.ts",
        'vitest run --reporter=default --reporter=junit --outputFile.junit="$TESTPRISM_JUNIT" tmp/',
        r"AssertionError",  # expect()'s failures; a TypeError or a thrown error of the program is not one
        "with Vitest (`import { expect, it } from 'vitest'`), importing the program's modules by their path from "
        "tmp/ (`../src/...`). Use only Vitest and the program (no other npm package is installed)"),
    statements=JAVASCRIPT.statements | {"abstract_class_declaration", "interface_declaration", "type_alias_declaration",
                                        "enum_declaration", "public_field_definition"},
)
TSX = replace(TYPESCRIPT, name="tsx", extensions=(".tsx",), grammar=tree_sitter_typescript.language_tsx)
JAVA = Language(
    "java", (".java",), tree_sitter_java.language,
    functions=frozenset({"method_declaration", "constructor_declaration"}),
    classes=frozenset({"class_declaration", "interface_declaration", "enum_declaration", "record_declaration"}),
    statements=frozenset({"local_variable_declaration", "field_declaration", "method_declaration",
                          "constructor_declaration", "class_declaration", "interface_declaration",
                          "enum_declaration", "record_declaration", "import_declaration", "package_declaration"}),
    literals=frozenset({"string_literal", "character_literal", "text_block"}),
    comments=frozenset({"line_comment", "block_comment"}),
    tests=_java_tests,
    # Maven's layout: the class is copied into src/test/java and Surefire runs it offline
    convention=TestConvention(
        "JUnit 5", ("java",), "tmp/GeneratedTest.java",
        ("bash", "-c", "cp tmp/GeneratedTest.java src/test/java/ && mvn -B -o -q test -Dtest=GeneratedTest; s=$?; "
         "cat target/surefire-reports/TEST-*GeneratedTest.xml > {junit} 2>/dev/null; exit $s"),
        "mvn -o test -Dtest=GeneratedTest",
        # one command: run_tests.sh `exec`s the suite line
        "bash -c 'cp tmp/GeneratedTest.java src/test/java/ && mvn -B -o -q test -Dtest=GeneratedTest; s=$?; "
        "cat target/surefire-reports/TEST-*GeneratedTest.xml > \"$TESTPRISM_JUNIT\" 2>/dev/null; exit $s'",
        r"AssertionFailedError|expected: <",
        "as one JUnit 5 class `GeneratedTest` in the package of the code it tests (`package ...;` as in its "
        "sources), with `org.junit.jupiter.api.Test` and `org.junit.jupiter.api.Assertions`. Use only JUnit 5 and "
        "the program (Maven runs offline)"),
    mutation=MutationSyntax(
        binary=frozenset({"binary_expression"}), augmented=frozenset({"assignment_expression"}),
        relational=C_RELATIONAL, boundary=C_BOUNDARY, arithmetic=C_ARITHMETIC,
        conditions=frozenset({"if_statement", "while_statement", "do_statement", "for_statement",
                              "ternary_expression"}),
        parenthesized=frozenset({"parenthesized_expression"}),
        removable=frozenset({"expression_statement"}), blocks=frozenset({"block"}), empty=";",
        returns=frozenset({"return_statement"}), result_field="type",
        zero_values=((r"byte|short|int|long|char|float|double", "0"), (r"boolean", "false"),
                     (r".+", "null"))),
)

RUST = Language(
    "rust", (".rs",), tree_sitter_rust.language,
    functions=frozenset({"function_item"}),
    classes=frozenset({"mod_item", "trait_item"}),
    statements=frozenset({"let_declaration", "function_item", "const_item", "static_item", "struct_item", "enum_item",
                          "impl_item", "trait_item", "mod_item", "use_declaration", "type_item"}),
    literals=frozenset({"string_literal", "raw_string_literal", "char_literal"}),
    comments=frozenset({"line_comment", "block_comment"}),
    tests=_rust_tests,
    # an integration test of the crate: copied into tests/ and built against its library
    convention=TestConvention(
        "Rust test", ("rust", "rs"), "tmp/generated.rs",
        ("bash", "-c", "mkdir -p tests && cp tmp/generated.rs tests/ && "
         "exec cargo test -q --offline --test generated -- -Z unstable-options --format junit > {junit}"),
        "cargo test --test generated",
        # one command: run_tests.sh `exec`s the suite line
        "sh -c 'mkdir -p tests && cp tmp/generated.rs tests/ && "
        "exec cargo test -q --offline --test generated -- -Z unstable-options --format junit > \"$TESTPRISM_JUNIT\"'",
        # libtest (1.63) writes no failure text: any failed case is the test's own (`\A` matches
        # any text; a test that does not compile writes no report, which is an error)
        r"\A",
        "as an integration test of the crate (it is copied into tests/ and linked with the library: "
        "`use <crate>::...;`), `#[test]` functions with assert!/assert_eq!. Use only the standard library and the "
        "crate (crates cannot be fetched)"),
    # a tail expression is not a return_expression: only `return x` gets a constant
    mutation=MutationSyntax(
        binary=frozenset({"binary_expression"}), augmented=frozenset({"compound_assignment_expr"}),
        relational=C_RELATIONAL, boundary=C_BOUNDARY, arithmetic=C_ARITHMETIC,
        conditions=frozenset({"if_expression", "while_expression"}), parenthesized=frozenset(),
        removable=frozenset({"expression_statement"}), blocks=frozenset({"block"}), empty=";",
        kept=frozenset({"if_expression", "match_expression", "while_expression", "loop_expression", "for_expression",
                        "return_expression", "block", "unsafe_block"}),
        returns=frozenset({"return_expression"}), result_field="return_type",
        zero_values=((r"[iu](8|16|32|64|128|size)", "0"), (r"f32|f64", "0.0"), (r"bool", "false"),
                     (r"String", "String::new()"), (r"&(\'\w+ )?str", '""'), (r"Option<.+>", "None"))),
)


# C has no test rule: a C project's tests are what its build registers (CTest's add_test in
# CMakeLists.txt, a Makefile's list), whatever their functions are called.
C = Language(
    "c", (".c", ".h"), tree_sitter_c.language,
    functions=frozenset({"function_definition"}),
    statements=frozenset({"declaration", "function_definition", "type_definition", "struct_specifier",
                          "preproc_include", "preproc_def", "preproc_function_def"}),
    literals=frozenset({"string_literal", "char_literal", "system_lib_string"}),
    mutation=MutationSyntax(
        binary=frozenset({"binary_expression"}), augmented=frozenset({"assignment_expression"}),
        relational=C_RELATIONAL, boundary=C_BOUNDARY, arithmetic=C_ARITHMETIC,
        conditions=frozenset({"if_statement", "while_statement", "do_statement", "for_statement",
                              "conditional_expression"}),
        parenthesized=frozenset({"parenthesized_expression"}),
        removable=frozenset({"expression_statement"}), blocks=frozenset({"compound_statement"}), empty=";",
        returns=frozenset({"return_statement"}), result_field="type",
        zero_values=((r"((un)?signed |const |long |short )*(int|long|short|char|size_t|ssize_t|u?int\d+_t|unsigned)",
                      "0"), (r"bool|_Bool", "0"), (r"double|float", "0.0"))),
)
CPP = replace(
    C, name="cpp", extensions=(".cpp", ".cc", ".cxx", ".hpp", ".hh", ".hxx"), grammar=tree_sitter_cpp.language,
    classes=frozenset({"class_specifier", "struct_specifier", "namespace_definition"}),
    statements=C.statements | {"class_specifier", "namespace_definition", "field_declaration", "alias_declaration",
                               "template_declaration", "using_declaration"},
    literals=C.literals | {"raw_string_literal"},
    tests=_gtest_tests,
    # C++'s `if (...)` condition is a condition_clause holding its parentheses
    mutation=replace(C.mutation, parenthesized=frozenset({"parenthesized_expression", "condition_clause"}),
                     zero_values=C.mutation.zero_values[:1] + ((r"bool", "false"), (r"double|float", "0.0"),
                                                               (r".*\*", "nullptr"))),
)


PHP = Language(
    "php", (".php",), tree_sitter_php.language_php,
    functions=frozenset({"function_definition", "method_declaration"}),
    classes=frozenset({"class_declaration", "interface_declaration", "trait_declaration", "enum_declaration"}),
    statements=frozenset({"function_definition", "method_declaration", "class_declaration", "interface_declaration",
                          "trait_declaration", "enum_declaration", "property_declaration", "const_declaration",
                          "namespace_definition", "namespace_use_declaration"}),
    literals=frozenset({"string", "encapsed_string", "heredoc", "nowdoc"}),
    tests=_php_tests, test_file=lambda path: path.endswith("Test.php"),
    mutation=MutationSyntax(
        binary=frozenset({"binary_expression"}), augmented=frozenset({"augmented_assignment_expression"}),
        relational=C_RELATIONAL | {"===": "!==", "!==": "==="}, boundary=C_BOUNDARY, arithmetic=C_ARITHMETIC,
        conditions=frozenset({"if_statement", "while_statement", "do_statement", "conditional_expression"}),
        parenthesized=frozenset({"parenthesized_expression"}),
        removable=frozenset({"expression_statement"}), blocks=frozenset({"compound_statement"}), empty=";",
        returns=frozenset({"return_statement"}), null="null"),
)
RUBY = Language(
    "ruby", (".rb",), tree_sitter_ruby.language,
    functions=frozenset({"method", "singleton_method"}),
    classes=frozenset({"class", "module", "singleton_class"}),
    statements=frozenset({"method", "singleton_method", "class", "module", "singleton_class", "assignment",
                          "operator_assignment", "call", "if", "unless", "while", "until", "for", "case", "when",
                          "elsif", "else", "begin", "rescue", "ensure", "return", "yield", "break", "next",
                          "if_modifier", "unless_modifier", "while_modifier", "until_modifier", "rescue_modifier"}),
    literals=frozenset({"string", "regex", "heredoc_body", "simple_symbol", "delimited_symbol", "string_array",
                        "symbol_array", "character"}),
    tests=_ruby_tests,
    test_file=lambda path: path.endswith("_spec.rb") or PurePosixPath(path).name.startswith("test_")
    or path.endswith("_test.rb"),
    mutation=MutationSyntax(
        binary=frozenset({"binary"}), augmented=frozenset({"operator_assignment"}),
        relational=C_RELATIONAL, boundary=C_BOUNDARY, arithmetic=C_ARITHMETIC,
        conditions=frozenset({"if", "unless", "while", "until", "if_modifier", "unless_modifier", "conditional"}),
        parenthesized=frozenset(),
        removable=frozenset({"call", "assignment", "operator_assignment"}),
        blocks=frozenset({"body_statement", "then", "else", "do", "block_body"}), empty="nil",
        returns=frozenset({"return"}), null="nil"),
)

LANGUAGES: dict[str, Language] = {lang.name: lang for lang in (PYTHON, GO, JAVASCRIPT, TYPESCRIPT, TSX, JAVA, RUST, C, CPP,
                                                                  PHP, RUBY)}
_BY_EXTENSION = {ext: lang for lang in LANGUAGES.values() for ext in lang.extensions}


def language_of(path: str) -> Language | None:
    """The language of a file, by its extension (None: no record reads it)."""
    return _BY_EXTENSION.get(PurePosixPath(path).suffix)


def named(name: str) -> Language:
    """The record of a language name as instances give it (`instance.spec.language`)."""
    try:
        return LANGUAGES[name]
    except KeyError:
        raise ValueError(f"no syntax record for language {name!r} (known: {', '.join(sorted(LANGUAGES))})") from None
