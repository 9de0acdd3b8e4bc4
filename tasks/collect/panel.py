"""Panels: which candidates of an instance a suite is judged on, and the folder that holds them.

Two shapes (docs/collect.md, Panels):
- `pool` (SWEPatchTest): every deduplicated, labelled candidate;
- `testprism`: the reference, `valid` valid candidates far apart in AST distance (mean
  pairwise distance > `min_valid_distance`) and `invalid` invalid candidates that fail
  different checks (pairwise Jaccard of failed-check sets ≤ `max_invalid_jaccard`). An
  instance whose pools cannot meet that is reported with the reason, never padded.

AST distance of two candidates: each becomes one tree, `patch → file:<path> → unit`, where
the units are the functions (methods, or module-level statements outside any function)
that the patch changes, taken from the file *after* the patch, as Python ASTs (node labels:
the node type, plus the name, attribute or constant it holds; load/store contexts dropped),
or for Go, JavaScript, TypeScript and Java as tree-sitter trees (tasks/model/syntax/:
named nodes labelled by type, plus the identifier or literal a leaf holds or the operator an
expression applies; comments dropped). A file of another language, or one that does not
parse, contributes a flat list of its added lines' tokens instead. The distance is the tree edit distance (APTED, unit costs) divided by the
larger tree's size, capped at 1: 0 for the same code, 1 for nothing in common.

Pure-Python APTED is cubic (two 340-node trees take ~10 s), so statements that appear
identically in both trees are first collapsed to a single leaf each (the optimal mapping
matches them at no cost anyway; a moved statement may then cost 1 instead of its size),
and pairs still above `MAX_APTED_NODES` fall back to 1 − difflib's ratio over the trees'
pre-order label sequences.
"""

from __future__ import annotations

import ast
import logging
import shutil
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from functools import cache
from itertools import combinations
from pathlib import Path

import tree_sitter
from apted import APTED
from unidiff import PatchedFile

from testprism.tasks.model import patches, syntax, toml_writer
from testprism.tasks.model.folder_swap import swap_in
from testprism.tasks.model.benchmark import Benchmark, Instance, load_benchmark, place_shared_environment
from testprism.tasks.collect.candidate import CandidatePatch, tokens
from testprism.tasks.collect.rules import PanelMode, PanelRule
from testprism.tasks.model.hashing import digest
from testprism.tasks.model.outcome import Reason
from testprism.tasks.collect.verification import candidate_states, post_patch_reader
from testprism.tasks.model.state import states_of
from testprism.tasks.model.workdir import WorkPaths

log = logging.getLogger(__name__)

#: Above this many nodes (after collapsing shared statements) a pair is compared by the
#: label-sequence fallback: APTED in pure Python takes seconds per pair beyond it.
MAX_APTED_NODES = 200
#: Marks a folder written by `write_panel_benchmark`: only such a folder is ever replaced.
MARKER = ".testprism-panel"


@dataclass(frozen=True)
class PanelChoice:
    instance_id: str
    valid: tuple[str, ...]
    invalid: tuple[str, ...]
    reason: Reason | None = None  # None: the instance has a panel
    detail: str = ""
    valid_mean_distance: float | None = None
    invalid_max_jaccard: float | None = None

    @property
    def chosen(self) -> tuple[str, ...]:
        return self.valid + self.invalid if self.reason is None else ()


# -- trees -----------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class TreeNode:
    """A labelled ordered tree as APTED reads it (`name`, `children`), with the size and
    a structural hash of the subtree."""

    name: str
    children: tuple[TreeNode, ...] = ()
    statement: bool = False
    size: int = field(init=False)
    key: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "size", 1 + sum(c.size for c in self.children))
        object.__setattr__(self, "key", digest(self.name, *(c.key for c in self.children)))


def _label(node: ast.AST) -> str:
    label = type(node).__name__
    if isinstance(node, ast.Constant):
        return f"{label}:{repr(node.value)[:40]}"
    for attr in ("name", "id", "attr", "arg", "module"):
        value = getattr(node, attr, None)
        if isinstance(value, str):
            return f"{label}:{value}"
    return label


def _convert(node: ast.AST) -> TreeNode:
    children = tuple(_convert(c) for c in ast.iter_child_nodes(node) if not isinstance(c, ast.expr_context))
    return TreeNode(_label(node), children, isinstance(node, ast.stmt))


def _start(stmt: ast.stmt) -> int:
    return min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])


def _unit(body: Sequence[ast.stmt], line: int) -> ast.stmt | None:
    """The function (or, outside functions, the top-level or class-level statement)
    that holds `line`; methods are their own units, nested functions belong to their outer one."""
    for stmt in body:
        if _start(stmt) <= line <= (stmt.end_lineno or stmt.lineno):
            if isinstance(stmt, ast.ClassDef):
                return _unit(stmt.body, line) or stmt
            return stmt
    return None


def _ts_label(node: tree_sitter.Node) -> str:
    """As `_label`: the node type, plus the identifier or literal a leaf holds, or the
    operator an expression applies (tree-sitter keeps `<` against `<=` in an unnamed child)."""
    operator = node.child_by_field_name("operator")
    if operator is not None:
        return f"{node.type}:{syntax.text(operator)}"
    if not node.named_children:
        return f"{node.type}:{syntax.text(node)[:40]}"
    return node.type


def _ts_convert(language: syntax.Language, node: tree_sitter.Node) -> TreeNode:
    """A tree-sitter subtree as a TreeNode: named nodes only (keywords and punctuation are
    implied by the node type), comments dropped, literals as one leaf."""
    if node.type in language.literals:
        return TreeNode(f"{node.type}:{syntax.text(node)[:40]}", (), language.is_statement(node))
    children = tuple(_ts_convert(language, c) for c in node.named_children if c.type not in language.comments)
    return TreeNode(_ts_label(node), children, language.is_statement(node))


def _ts_unit(language: syntax.Language, parent: tree_sitter.Node, line: int) -> tree_sitter.Node | None:
    """As `_unit`: the top-level function or statement holding `line`, a method of the
    class holding it (`export class …` looked through)."""
    for node in parent.named_children:
        if node.type in language.comments or not syntax.first_line(node) <= line <= syntax.last_line(node):
            continue
        declared = node.child_by_field_name("declaration")
        if declared is not None and (declared.type in language.classes or language.is_function(declared)):
            node = declared
        body = node.child_by_field_name("body")
        if node.type in language.classes and body is not None:
            return _ts_unit(language, body, line) or node
        return node
    return None


def _units(patched: PatchedFile, text: str, language: syntax.Language | None) -> tuple[TreeNode, ...] | None:
    """The trees of the units a file diff changes, None when its language has no reader
    here or the file does not parse after the patch."""
    changed = sorted(patches.changed_lines(patched, removals="previous-or-hunk-start"))
    if language is syntax.PYTHON:
        try:
            module = ast.parse(text)
        except (SyntaxError, ValueError):
            return None
        units = {id(u): u for u in (_unit(module.body, n) for n in changed) if u}
        return tuple(_convert(u) for u in sorted(units.values(), key=_start))
    if language is None or language.grammar is None:
        return None
    root = syntax.parse(language, text)
    if root.has_error:
        return None
    found = {u.start_byte: u for u in (_ts_unit(language, root, n) for n in changed) if u}
    return tuple(_ts_convert(language, found[start]) for start in sorted(found))


def _file_tree(patched: PatchedFile, text: str) -> TreeNode:
    path = patched.path
    language = syntax.language_of(path)
    units = _units(patched, text, language)
    if units is not None:
        return TreeNode(f"file:{path}", units)
    log.debug("%s: no syntax tree after the patch: token fallback", path)
    added = "\n".join(line.value for hunk in patched for line in hunk if line.line_type == "+")
    return TreeNode(f"file:{path}", tuple(TreeNode(f"tok:{t}") for t in tokens(added, language)))


def patch_tree(patch: str, read: Callable[[str], str | None]) -> TreeNode:
    """The tree of a normalised patch; `read(path)` gives a file's text after the patch
    (None for files it deleted, or that the distance must ignore)."""
    files = []
    for patched in sorted(patches.parse(patch), key=lambda f: f.path):
        text = None if patched.is_removed_file else read(patched.path)
        files.append(TreeNode(f"deleted:{patched.path}") if text is None else _file_tree(patched, text))
    return TreeNode("patch", tuple(files))


def _statement_keys(node: TreeNode) -> set[str]:
    found = {node.key} if node.statement else set()
    for child in node.children:
        found |= _statement_keys(child)
    return found


def _collapse(node: TreeNode, shared: set[str]) -> TreeNode:
    if node.statement and node.key in shared:
        return TreeNode(f"same:{node.key}")
    return TreeNode(node.name, tuple(_collapse(c, shared) for c in node.children), node.statement)


def _preorder(node: TreeNode) -> list[str]:
    out = [node.name]
    for child in node.children:
        out += _preorder(child)
    return out


def ast_distance(a: TreeNode, b: TreeNode, max_nodes: int = MAX_APTED_NODES) -> float:
    """Normalised tree edit distance in [0, 1] (see the module docstring)."""
    if a.key == b.key:
        return 0.0
    shared = _statement_keys(a) & _statement_keys(b)
    small_a, small_b = _collapse(a, shared), _collapse(b, shared)
    if max(small_a.size, small_b.size) <= max_nodes:
        return min(1.0, APTED(small_a, small_b).compute_edit_distance() / max(a.size, b.size))
    return 1.0 - SequenceMatcher(None, _preorder(a), _preorder(b), autojunk=False).ratio()


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Share of failed checks two candidates have in common (1 for two empty sets)."""
    union = a | b
    return len(a & b) / len(union) if union else 1.0


# -- selection -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Side:
    chosen: tuple[str, ...]
    reason: Reason | None
    detail: str
    score: float | None


def select_valid(reference: TreeNode, pool: Mapping[str, TreeNode], rule: PanelRule,
                 distance: Callable[[TreeNode, TreeNode], float] = ast_distance) -> _Side:
    """Greedy farthest-point selection anchored on the reference: first the candidate
    farthest from the reference, then repeatedly the one with the largest summed distance
    to those chosen. It needs about n·k distances instead of all n² pairs, which matters
    at seconds per APTED pair; the mean pairwise distance of the chosen set decides."""
    if len(pool) < rule.valid:
        return _Side((), Reason.TOO_FEW_VALID, f"{len(pool)} valid candidates, {rule.valid} needed", None)

    @cache
    def d(x: str, y: str) -> float:
        return distance(pool[x], pool[y]) if x < y else d(y, x) if x > y else 0.0

    ids = sorted(pool)
    chosen = ids if len(ids) == rule.valid else [max(ids, key=lambda c: distance(reference, pool[c]))]
    while len(chosen) < rule.valid:
        rest = [c for c in ids if c not in chosen]
        chosen.append(max(rest, key=lambda c: sum(d(c, x) for x in chosen)))
    pairs = list(combinations(chosen, 2))
    mean = sum(d(x, y) for x, y in pairs) / len(pairs) if pairs else 1.0
    if mean <= rule.min_valid_distance:
        return _Side(tuple(chosen), Reason.VALID_NOT_DIVERSE,
                     f"mean pairwise AST distance {mean:.3f} ≤ {rule.min_valid_distance} "
                     f"(best {rule.valid} of {len(pool)} valid, greedy)", mean)
    return _Side(tuple(chosen), None, "", mean)


def select_invalid(pool: Mapping[str, frozenset[str]], rule: PanelRule) -> _Side:
    """Greedy: candidates failing fewer checks first (a candidate failing everything
    overlaps everyone), each kept if its Jaccard with every kept one is ≤ the threshold."""
    if len(pool) < rule.invalid:
        return _Side((), Reason.TOO_FEW_INVALID, f"{len(pool)} invalid candidates, {rule.invalid} needed", None)
    chosen: list[str] = []
    for cid in sorted(pool, key=lambda c: (len(pool[c]), c)):
        if all(jaccard(pool[cid], pool[other]) <= rule.max_invalid_jaccard for other in chosen):
            chosen.append(cid)
            if len(chosen) == rule.invalid:
                break
    worst = max((jaccard(pool[x], pool[y]) for x, y in combinations(chosen, 2)), default=0.0)
    if len(chosen) < rule.invalid:
        return _Side(tuple(chosen), Reason.INVALID_NOT_DIVERSE,
                     f"only {len(chosen)} of {len(pool)} invalid candidates fail pairwise different checks "
                     f"(Jaccard ≤ {rule.max_invalid_jaccard}), {rule.invalid} needed", worst)
    return _Side(tuple(chosen), None, "", worst)


def choose_panel(instance_id: str, reference: TreeNode, valid: Mapping[str, TreeNode],
                 invalid: Mapping[str, frozenset[str]], rule: PanelRule) -> PanelChoice:
    """The TestPrism panel of one instance, or why there is none (both sides reported)."""
    good, bad = select_valid(reference, valid, rule), select_invalid(invalid, rule)
    failed = [side for side in (good, bad) if side.reason]
    return PanelChoice(
        instance_id, good.chosen, bad.chosen, failed[0].reason if failed else None,
        "; ".join(f"{side.reason}: {side.detail}" for side in failed), good.score, bad.score,
    )


def select_panels(instances: Sequence[Instance], candidates: Sequence[CandidatePatch], mode: PanelMode,
                  rule: PanelRule, work_root: Path) -> list[PanelChoice]:
    """Panels of `instances` from their pooled candidates (`in_pool`). The trees of the
    valid candidates are read from their checked trees in the work area (rebuilt if gone)."""
    work = WorkPaths(work_root)
    choices = []
    for instance in instances:
        pool = [c for c in candidates if c.instance_id == instance.id and c.in_pool]
        valid = [c for c in pool if c.label == "valid"]
        invalid = {c.candidate_id: frozenset(c.failed_checks) for c in pool if c.label == "invalid"}
        if mode is PanelMode.POOL:
            choices.append(PanelChoice(instance.id, tuple(c.candidate_id for c in valid), tuple(invalid)))
            continue
        reference_state = states_of(instance)[1]
        reference = patch_tree(instance.reference.decode("utf-8", errors="replace"),
                               post_patch_reader(instance, reference_state, work))
        states = candidate_states(instance, {c.candidate_id: c.patch for c in valid})
        trees = {c.candidate_id: patch_tree(c.patch, post_patch_reader(instance, states[c.candidate_id], work))
                 for c in valid}
        choice = choose_panel(instance.id, reference, trees, invalid, rule)
        if choice.reason:
            log.warning("%s: no panel: %s", instance.id, choice.detail)
        choices.append(choice)
    return choices


# -- the panel benchmark folder --------------------------------------------------------------


def _note(cand: CandidatePatch) -> str:
    source = f"{cand.origin}" + (f" ({cand.model})" if cand.model else "")
    return source if cand.label == "valid" else f"{source}; fails {', '.join(cand.failed_checks)}"


def _write_instance(instance: Instance, chosen: Iterable[CandidatePatch], target: Path) -> None:
    image = instance.spec.environment.image is not None  # its program is the image's: not copied
    if not image:
        shutil.copytree(instance.program, target / "program", symlinks=True)
    else:
        target.mkdir(parents=True)
    shutil.copy2(instance.folder / "instruction.md", target / "instruction.md")
    if (instance.folder / "origin.toml").is_file():  # `import suites --out PANEL` reads its test command
        shutil.copy2(instance.folder / "origin.toml", target / "origin.toml")
    (target / "reference.diff").write_bytes(instance.reference)
    (target / "checks.diff").write_bytes(instance.checks_patch)
    (target / "candidates").mkdir()
    declared = []
    for cand in chosen:
        (target / "candidates" / f"{cand.candidate_id}.diff").write_text(cand.patch, encoding="utf-8")
        declared.append({"id": cand.candidate_id, "label": cand.label, "patch": f"candidates/{cand.candidate_id}.diff",
                         "note": _note(cand)} | ({"provenance": cand.provenance} if cand.provenance != "agent" else {})
                        | ({"failed_checks": sorted(cand.failed_checks)}  # the curves' invalid diversity, replayed
                           if cand.label == "invalid" and cand.failed_checks else {}))
    # TOML has no null: an unset optional field (checks.parser, say) is left out, as when read
    spec = instance.spec.model_dump(mode="json", exclude={"candidates", "environment", "build"}
                                    | ({"program"} if image else set()), exclude_none=True)
    if not image:
        spec["program"]["path"] = "program"
    spec["checks"]["patch"] = "checks.diff"
    spec["environment"] = instance.spec.environment.as_table()
    if instance.spec.build is not None:
        spec["build"] = instance.spec.build.model_dump(mode="json")
    (target / "instance.toml").write_text(toml_writer.dumps({**spec, "candidates": declared}), encoding="utf-8")
    own = instance.folder.resolve()
    context = instance.spec.environment.context
    if context is not None and context != own and context.is_relative_to(own):  # its own (Harbor's environment/)
        shutil.copytree(context, target / context.relative_to(own), symlinks=True)
    place_shared_environment(instance, target.parent.parent)


def write_panel_benchmark(benchmark: Benchmark, choices: Sequence[PanelChoice], candidates: Sequence[CandidatePatch],
                          out: Path) -> int:
    """Write the instances that have a panel, with exactly their panel's candidates and
    the suites the source benchmark holds for them, as a benchmark folder that
    `testprism replay` runs unchanged. Built beside `out`, checked by loading it, then
    swapped in; an existing `out` is replaced only if this function wrote it. Returns
    how many instances it holds."""
    if out.exists() and any(out.iterdir()) and not (out / MARKER).exists():
        raise FileExistsError(f"--out {out}: exists and was not written by testprism collect; choose another folder")
    by_id = {(c.instance_id, c.candidate_id): c for c in candidates}
    staging = out.parent / f".{out.name}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        kept = [c for c in choices if c.reason is None]
        for choice in kept:
            instance = benchmark.instances[choice.instance_id]
            _write_instance(instance, (by_id[(instance.id, cid)] for cid in choice.chosen),
                            staging / "instances" / instance.id)
        for (configuration, instance_id), suite in benchmark.suites.items():
            if any(c.instance_id == instance_id for c in kept):
                shutil.copytree(suite.folder, staging / "suites" / configuration / instance_id, symlinks=True)
        (staging / "instances").mkdir(parents=True, exist_ok=True)
        (staging / MARKER).write_text(f"written by testprism collect from {benchmark.root}\n")
        if kept:
            load_benchmark(staging)
        swap_in(staging, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    log.info("wrote %d panel instances to %s", len(kept), out)
    return len(kept)
