"""Selection signals of an instance, as TestPrism screens its 17 source benchmarks:

- **solution size**: the effective lines of the reference, i.e. the lines it adds or
  removes that are neither blank nor comment-only (a one-line fix padded with comments is
  still a one-line fix);
- **test count**: the test functions of the official tests, read from the syntax tree of
  each test file as the checks patch leaves it (Python: pytest's rule, `test*` functions at
  module level and `test*` methods of `Test*` classes or `unittest.TestCase` subclasses;
  Go, JavaScript, TypeScript, Java: their test rule on the tree-sitter tree,
  tasks/model/syntax/); for other languages a documented pattern per file extension
  (`TEST_PATTERNS`);
- **test density**: tests / max(1, files the reference modifies).

Plain functions of the diffs and the program: nothing runs.
"""

from __future__ import annotations

import logging
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from unidiff import PatchedFile, PatchSet

from testprism.tasks.model import patches, syntax
from testprism.tasks.model.benchmark import Instance
from testprism.tasks.model.pytest_ids import find_test_functions
from testprism.tasks.model.state import apply_patch

log = logging.getLogger(__name__)

#: Comment markers by file extension: a changed line that starts with one is not effective.
COMMENT_PREFIXES: dict[str, tuple[str, ...]] = {
    ".py": ("#",), ".sh": ("#",), ".rb": ("#",), ".toml": ("#",), ".yaml": ("#",), ".yml": ("#",),
    ".js": ("//", "/*", "*"), ".ts": ("//", "/*", "*"), ".java": ("//", "/*", "*"), ".go": ("//", "/*", "*"),
    ".rs": ("//", "/*", "*"), ".c": ("//", "/*", "*"), ".h": ("//", "/*", "*"), ".cpp": ("//", "/*", "*"),
    ".cs": ("//", "/*", "*"), ".kt": ("//", "/*", "*"), ".swift": ("//", "/*", "*"), ".php": ("//", "#", "/*", "*"),
}

#: Test functions in files of languages without a syntax record's test rule: one match of
#: the pattern is one test.
TEST_PATTERNS: dict[str, re.Pattern[str]] = {
    ".kt": re.compile(r"^\s*@Test\b", re.M),
    ".rb": re.compile(r"^\s*(?:it\s+['\"]|def\s+test_)", re.M),
    ".cs": re.compile(r"^\s*\[(?:Test|Fact|Theory|TestMethod)\b", re.M),
    ".sh": re.compile(r"^\s*@test\s", re.M),  # bats
}


@dataclass(frozen=True)
class Signals:
    """What the screening reads of one instance."""

    solution_lines: int  #: effective lines the reference adds or removes
    test_count: int  #: test functions of the official tests
    files_modified: int  #: files the reference modifies

    @property
    def test_density(self) -> float:
        return self.test_count / max(1, self.files_modified)


def _effective(text: str, suffix: str) -> bool:
    stripped = text.strip()
    return bool(stripped) and not stripped.startswith(COMMENT_PREFIXES.get(suffix, ()))


def solution_lines(reference: bytes | str | PatchSet) -> int:
    """Effective lines the diff adds or removes."""
    count = 0
    for patched in reference if isinstance(reference, PatchSet) else patches.parse(reference):
        suffix = PurePosixPath(patched.path).suffix
        count += sum(1 for hunk in patched for line in hunk
                     if (line.is_added or line.is_removed) and _effective(line.value, suffix))
    return count


def python_tests(source: str) -> int:
    """pytest's collection rule on one file's syntax tree (tasks/model/pytest_ids.py)."""
    return len(find_test_functions(source))


def tests_in(path: str, source: str) -> int:
    """Test functions in one file of the official tests (0 for a file no rule reads, and for
    one that does not parse: a count from half a file would be a wrong one)."""
    language = syntax.language_of(path)
    if language is not None and (language is syntax.PYTHON or language.tests is not None):
        if not language.test_file(path):
            return 0
        try:
            return len(find_test_functions(source, language.name))
        except (SyntaxError, ValueError) as exc:
            log.warning("%s: not parseable (%s); its tests are not counted", path, exc)
            return 0
    pattern = TEST_PATTERNS.get(PurePosixPath(path).suffix)
    return len(pattern.findall(source)) if pattern else 0


def _patched(original: list[str], patched: PatchedFile) -> list[str] | None:
    """The file after its hunks, applied where they say; None when a hunk's old side does
    not match the file (then git decides, as for any patch)."""
    out: list[str] = []
    at = 0  # lines of `original` consumed
    for hunk in patched:
        start = max(hunk.source_start - 1, 0)
        if start < at or start > len(original):
            return None
        out += original[at:start]
        old = [line.value for line in hunk if line.is_context or line.is_removed]
        if original[start:start + len(old)] != old:
            return None
        out += [line.value for line in hunk if line.is_context or line.is_added]
        at = start + len(old)
    return out + original[at:]


def _with_git(program: Path, checks_patch: bytes, touched: list[str]) -> dict[str, str]:
    with tempfile.TemporaryDirectory(prefix="testprism-signals-") as scratch:
        tree = Path(scratch)
        for rel in touched:
            original = program / rel
            if original.is_file() and not original.is_symlink():
                (tree / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(original, tree / rel)
        if not apply_patch(tree, checks_patch).applied:
            log.warning("%s: the checks patch does not apply; its tests are not counted", program)
            return {}
        return {rel: (tree / rel).read_text(encoding="utf-8", errors="replace")
                for rel in touched if (tree / rel).is_file()}


def official_test_files(program: Path, checks_patch: bytes) -> dict[str, str]:
    """Each file the checks patch touches, as the patch leaves it. Hunks are applied in
    memory where they match (a curation reads thousands of instances: no process per
    instance); a patch they do not match exactly is applied by git in a scratch copy of
    just those files, with its fuzz. The program is never written."""
    patch_set = patches.parse(checks_patch)
    files: dict[str, str] = {}
    for patched in patch_set:
        rel = patches.relative_path(patched.target_file if not patched.is_removed_file else patched.source_file)
        if rel is None or patched.is_removed_file or patched.is_binary_file or patched.is_rename:
            return _with_git(program, checks_patch, sorted(patches.touched_files(patch_set)))
        source = program / rel
        if patched.is_added_file:
            original: list[str] = []
        elif source.is_file() and not source.is_symlink():
            original = source.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
        else:
            return _with_git(program, checks_patch, sorted(patches.touched_files(patch_set)))
        after = _patched(original, patched)
        if after is None:
            return _with_git(program, checks_patch, sorted(patches.touched_files(patch_set)))
        files[rel] = "".join(after)
    return files


def signals_of(instance: Instance) -> Signals:
    """The screening signals of a loaded instance."""
    files = official_test_files(instance.program, instance.checks_patch)
    tests = sum(tests_in(rel, text) for rel, text in files.items())
    reference = patches.parse(instance.reference)
    return Signals(solution_lines(reference), tests, len(patches.touched_files(reference)))
