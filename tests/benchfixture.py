"""A tiny benchmark built in a test's temporary folder: one instance (`median` forgets
even-length inputs), its reference, a valid and an invalid candidate, official checks, and
suites given by the caller. Small enough that a whole replay takes seconds."""

from __future__ import annotations

import difflib
import textwrap
from pathlib import Path

BUGGY = '''\
def median(values):
    """Median of a non-empty sequence."""
    ordered = sorted(values)
    return ordered[len(ordered) // 2]
'''
REFERENCE = '''\
def median(values):
    """Median of a non-empty sequence."""
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2
'''
VALID = '''\
import statistics


def median(values):
    """Median of a non-empty sequence."""
    return statistics.median(values)
'''
INVALID = '''\
def median(values):
    """Median of a non-empty sequence."""
    values.sort()
    mid = len(values) // 2
    if len(values) % 2:
        return values[mid]
    return (values[mid - 1] + values[mid]) / 2
'''
CHECKS = '''\
from stats import median


def test_even_length():
    assert median([4, 1, 3, 2]) == 2.5


def test_odd_length():
    assert median([3, 1, 2]) == 2


def test_input_untouched():
    data = [3, 1, 2, 0]
    median(data)
    assert data == [3, 1, 2, 0]
'''

WEAK = '''\
from stats import median


def test_issue_example():
    assert median([1, 2, 3, 4]) == 2.5
'''

RUN = 'exec python -m pytest -q -p no:cacheprovider tmp --junitxml="$TESTPRISM_JUNIT"\n'


def diff(path: str, old: str, new: str) -> str:
    """A unified diff with a/ b/ prefixes; `old=""` creates the file."""
    lines = difflib.unified_diff(
        old.splitlines(True), new.splitlines(True), "/dev/null" if not old else f"a/{path}", f"b/{path}"
    )
    return "".join(lines)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text) if text.startswith("\n") else text)
    return path


def make_benchmark(root: Path, suites: dict[str, dict[str, str]], extra_candidates: dict[str, tuple[str, str]] | None = None) -> Path:
    """Write the benchmark; `suites` maps configuration → {file name → content} (a
    `run_tests.sh` running pytest on tmp/ is added when absent); `extra_candidates` maps
    id → (label, raw patch text)."""
    inst = root / "instances" / "mini__median-even"
    write(inst / "program" / "stats.py", BUGGY)
    write(inst / "instruction.md", "median() returns the upper middle element for even-length input.\n")
    write(inst / "reference.diff", diff("stats.py", BUGGY, REFERENCE))
    write(inst / "checks.diff", diff("tests/test_official.py", "", CHECKS))
    write(inst / "candidates" / "stdlib.diff", diff("stats.py", BUGGY, VALID))
    write(inst / "candidates" / "sorts-in-place.diff", diff("stats.py", BUGGY, INVALID))
    candidates = [("stdlib", "valid"), ("sorts-in-place", "invalid")]
    for cid, (label, patch) in (extra_candidates or {}).items():
        write(inst / "candidates" / f"{cid}.diff", patch)
        candidates.append((cid, label))
    toml = '''\
id = "mini__median-even"
source = "mini"
summary = "median forgets even-length input"

[checks]
command = "python -m pytest -q -p no:cacheprovider tests/test_official.py --junitxml=$TESTPRISM_JUNIT"
fail_to_pass = ["tests/test_official.py::test_even_length"]
pass_to_pass = ["tests/test_official.py::test_odd_length", "tests/test_official.py::test_input_untouched"]
'''
    for cid, label in candidates:
        toml += f'\n[[candidates]]\nid = "{cid}"\nlabel = "{label}"\npatch = "candidates/{cid}.diff"\n'
    write(inst / "instance.toml", toml)
    for configuration, files in suites.items():
        folder = root / "suites" / configuration / "mini__median-even"
        for name, content in files.items():
            write(folder / name, content)
        if "run_tests.sh" not in files:
            write(folder / "run_tests.sh", RUN)
    return root
