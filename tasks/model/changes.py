"""What the reference changes: its changed lines, statements and functions.

Which lines and functions count comes from the reference diff (unidiff) and the reference
file's syntax tree (ast), so it does not depend on what the run managed to report:

- a changed line is a line the reference adds; where it only deletes, the line now standing
  at that place (the next context line, else the previous one) stands for the deletion;
  blank and comment-only lines never count;
- a changed line counts for ΔC if it belongs to an executable statement: a simple
  statement's lines, or a compound statement's header (decorators included); docstrings
  and `else:`-like lines do not. When coverage reported the file, its own statement set has
  the last word (`# pragma: no cover`, lines the compiler drops); a file it never saw was
  never imported, so none of its lines ran;
- a changed function is the innermost `def` holding a changed line; it is entered if any
  line of its body ran.

Go, JavaScript, TypeScript and Java files are read the same way from their tree-sitter
trees (tasks/model/syntax/): a code line is one holding a token that is not a comment,
its statement the smallest one holding it (a compound statement's header up to its first
inner statement), its function the innermost named function or method (`Type.method`,
`Class.method`). Shared by the stages that ask which lines a fix touched: coverage
(tasks/score/coverage/, how much of it a run executed) and mutants (tasks/collect/mutants.py,
where to seed them), so it sits below both. Which files count is the coverage toolchain's choice (`keep`:
tasks/score/coverage/toolchains/): coverage.py reports Python files, `go test` a module's
non-test .go files, V8 the .js files Node ran; the others are left out of ΔC and EC, not
measured, never counted as missed.
"""

from __future__ import annotations

import ast
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import tree_sitter

from testprism.tasks.model import patches, syntax

log = logging.getLogger(__name__)


def is_python(path: str) -> bool:
    """The files coverage.py measures (the Python toolchain's `keep`)."""
    return syntax.language_of(path) is syntax.PYTHON


@dataclass(frozen=True)
class ChangedFunction:
    """A function the reference changes: entered if any line of `body` ran."""

    name: str  # dotted: Class.method, outer.inner
    line: int  # its `def` line, which tells same-named functions apart
    body: range


@dataclass(frozen=True)
class ChangedFile:
    """What the reference changes in one Python file, in the reference's line numbers.

    `lines` maps each changed executable line to the lines of its statement: coverage
    reports a statement on one of them (its first line, or a decorator's)."""

    path: str
    lines: dict[int, range]
    functions: tuple[ChangedFunction, ...]


def changed_lines(reference: bytes, keep: Callable[[str], bool] = is_python) -> dict[str, set[int]]:
    """Per file the reference leaves behind that `keep` selects (a toolchain's files:
    coverage.py reports Python files only, `go test` non-test .go files...), the
    target-side lines it adds, plus one stand-in line per pure deletion (the next context
    line, else the previous one)."""
    changed: dict[str, set[int]] = {}
    for patched in patches.parse(reference):
        if patched.is_removed_file or not keep(patched.path):
            continue
        changed.setdefault(patched.path, set()).update(patches.changed_lines(patched, removals="following"))
    return {path: lines for path, lines in changed.items() if lines}


def _is_docstring(node: ast.stmt, parent: ast.AST) -> bool:
    body = getattr(parent, "body", None)
    return (
        isinstance(parent, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and bool(body)
        and body[0] is node
        and isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _spans(tree: ast.Module) -> Iterator[range]:
    """The lines of each executable statement: a simple statement whole, a compound
    statement's header from its first decorator to the line before its body."""
    stack: list[tuple[ast.AST, ast.AST]] = [(child, tree) for child in tree.body]
    while stack:
        node, parent = stack.pop()
        if isinstance(node, ast.match_case):
            start, body = node.pattern.lineno, node.body
        elif isinstance(node, ast.Match):
            start, body = node.lineno, [case.pattern for case in node.cases]
        else:
            start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            body = getattr(node, "body", None)
        if body:
            yield range(start, max(start + 1, body[0].lineno))
        elif not _is_docstring(node, parent):
            yield range(start, node.end_lineno + 1)
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            children = getattr(node, name, None)
            if isinstance(children, list):
                stack.extend((child, node) for child in children if isinstance(child, ast.AST))


def _functions(tree: ast.Module) -> Iterator[tuple[str, range, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every def with its dotted name and its whole extent (decorators to last line)."""
    stack: list[tuple[ast.AST, str]] = [(tree, "")]
    while stack:
        node, prefix = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    start = min([child.lineno] + [d.lineno for d in child.decorator_list])
                    yield name, range(start, child.end_lineno + 1), child
                stack.append((child, f"{name}."))
            else:
                stack.append((child, prefix))


def _is_code(text: str) -> bool:
    stripped = text.strip()
    return bool(stripped) and not stripped.startswith("#")


def _ts_spans(language: syntax.Language, root: tree_sitter.Node) -> Iterator[range]:
    """As `_spans`: each statement's lines, a statement holding statements up to the line
    before its first inner one (`if x {` … `}`: its header line)."""
    for node in syntax.walk(root):
        if language.is_statement(node):
            start = syntax.first_line(node)
            inner = next((n for n in syntax.walk(node) if n is not node and language.is_statement(n)
                          and syntax.first_line(n) > start), None)
            end = syntax.first_line(inner) if inner is not None else syntax.last_line(node) + 1
            yield range(start, end)


def _ts_code_lines(language: syntax.Language, root: tree_sitter.Node) -> set[int]:
    """Lines holding a token that is not a comment (a brace alone counts: it is code)."""
    return {line for leaf in syntax.leaves(language, root)
            for line in range(syntax.first_line(leaf), syntax.last_line(leaf) + 1)}


def _analyse_tree_sitter(path: str, language: syntax.Language, source: bytes, lines: Iterable[int]) -> ChangedFile:
    root = syntax.parse(language, source)
    code_lines = _ts_code_lines(language, root)
    code = sorted(n for n in set(lines) if n in code_lines)
    if root.has_error:
        log.warning("%s: not parseable here; counting changed lines one by one", path)
        return ChangedFile(path, {n: range(n, n + 1) for n in code}, ())
    spans = sorted(_ts_spans(language, root), key=len)
    mapped = {n: span for n in code if (span := next((s for s in spans if n in s), None)) is not None}
    units = sorted(syntax.units(language, root), key=lambda u: len(u.lines))
    functions = {}
    for n in code:
        unit = next((u for u in units if n in u.lines), None)
        if unit is not None:
            functions[(unit.name, unit.line)] = ChangedFunction(unit.name, unit.line, unit.body)
    return ChangedFile(path, mapped, tuple(sorted(functions.values(), key=lambda f: f.line)))


def analyse_file(path: str, source: bytes, lines: Iterable[int]) -> ChangedFile:
    """Map the changed lines of one reference file to statements and functions.

    A file the host's parser cannot read (syntax newer than this Python, or Python 2)
    falls back to one statement per changed code line and no functions. Files of a
    language with a tree-sitter grammar are read from its tree; any other file has no
    statements and no functions here."""
    language = syntax.language_of(path)
    if language is None or (language is not syntax.PYTHON and language.grammar is None):
        return ChangedFile(path, {}, ())
    if language is not syntax.PYTHON:
        return _analyse_tree_sitter(path, language, source, lines)
    text = source.decode("utf-8", errors="replace").splitlines()
    code = sorted(n for n in set(lines) if 0 < n <= len(text) and _is_code(text[n - 1]))
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError) as exc:
        log.warning("%s: not parseable here (%s); counting changed lines one by one", path, exc)
        return ChangedFile(path, {n: range(n, n + 1) for n in code}, ())
    spans = sorted(_spans(tree), key=len)
    mapped = {}
    for n in code:
        span = next((s for s in spans if n in s), None)  # the smallest statement holding it
        if span is not None:
            mapped[n] = span
    functions: dict[tuple[str, int], ChangedFunction] = {}
    defs = sorted(_functions(tree), key=lambda item: len(item[1]))
    for n in code:
        found = next(((name, node) for name, extent, node in defs if n in extent), None)
        if found is not None:
            name, node = found
            body = range(node.body[0].lineno, node.end_lineno + 1)
            functions[(name, node.lineno)] = ChangedFunction(name, node.lineno, body)
    return ChangedFile(path, mapped, tuple(sorted(functions.values(), key=lambda f: f.line)))


def analyse_reference(tree: Path, reference: bytes, keep: Callable[[str], bool] = is_python) -> tuple[ChangedFile, ...]:
    """What the reference changes in the files `keep` selects, read from the materialised
    reference tree: code lines and functions, by `ast` for Python and by tree-sitter for
    the other languages (analyse_file)."""
    changes = []
    for path, lines in sorted(changed_lines(reference, keep).items()):
        target = tree / path
        if not target.is_file():
            log.warning("%s: changed by the reference but absent from its tree", path)
            continue
        changes.append(analyse_file(path, target.read_bytes(), lines))
    return tuple(c for c in changes if c.lines or c.functions)
