"""The small benchmark of the docker tests: two instances with two different environments
(one with pytest, one with no package at all), each with a reference, a valid and an
invalid candidate, and two configurations (`strong`, `weak`) of suites. Built in a test's
temporary folder; a replay of it is 16 runs."""

from __future__ import annotations

import difflib
from pathlib import Path

CLAMP_BUGGY = '''\
def clamp(x, lo, hi):
    """x limited to the closed interval [lo, hi]."""
    if x < lo:
        return lo
    if x > hi:
        return x
    return x
'''
CLAMP_REFERENCE = CLAMP_BUGGY.replace("    if x > hi:\n        return x\n", "    if x > hi:\n        return hi\n")
CLAMP_VALID = '''\
def clamp(x, lo, hi):
    """x limited to the closed interval [lo, hi]."""
    return max(lo, min(x, hi))
'''
CLAMP_INVALID = '''\
def clamp(x, lo, hi):
    """x limited to the closed interval [lo, hi]."""
    return min(x, hi)
'''
CLAMP_STRONG = '''\
from clamping import clamp


def test_above_goes_to_hi():
    assert clamp(15, 0, 10) == 10


def test_below_goes_to_lo():
    assert clamp(-5, 0, 10) == 0


def test_inside_is_kept():
    assert clamp(3, 0, 10) == 3
'''
CLAMP_WEAK = '''\
from clamping import clamp


def test_inside_is_kept():
    assert clamp(3, 0, 10) == 3
'''
PYTEST_RUN = 'exec python -m pytest -q -p no:cacheprovider tmp --junitxml="$TESTPRISM_JUNIT"\n'

WORDS_BUGGY = '''\
def count_words(text):
    """Number of whitespace-separated words in text."""
    return len(text.split(" "))
'''
WORDS_REFERENCE = WORDS_BUGGY.replace('text.split(" ")', "text.split()")
WORDS_VALID = '''\
import re


def count_words(text):
    """Number of whitespace-separated words in text."""
    return len(re.findall(r"\\S+", text))
'''
WORDS_INVALID = WORDS_BUGGY.replace('text.split(" ")', 'text.strip().split(" ")')
WORDS_STRONG = '''\
import unittest

from words import count_words


class CountWords(unittest.TestCase):
    def test_double_space(self):
        self.assertEqual(count_words("a  b"), 2)

    def test_empty(self):
        self.assertEqual(count_words(""), 0)

    def test_padding(self):
        self.assertEqual(count_words("  a b  "), 2)
'''
WORDS_WEAK = '''\
import unittest

from words import count_words


class CountWords(unittest.TestCase):
    def test_two_words(self):
        self.assertEqual(count_words("a b"), 2)
'''
# No pytest in this environment: the stdlib runner, verdict from the exit status.
UNITTEST_RUN = "PYTHONPATH=. exec python -m unittest discover -s tmp -p 'test_*.py' -q\n"

INSTANCES = {
    "tiny__clamp-above": {
        "module": "clamping.py", "buggy": CLAMP_BUGGY, "reference": CLAMP_REFERENCE,
        "valid": CLAMP_VALID, "invalid": CLAMP_INVALID, "packages": None,
        "suites": {"strong": CLAMP_STRONG, "weak": CLAMP_WEAK}, "run": PYTEST_RUN,
    },
    "tiny__words-spaces": {
        "module": "words.py", "buggy": WORDS_BUGGY, "reference": WORDS_REFERENCE,
        "valid": WORDS_VALID, "invalid": WORDS_INVALID, "packages": [],
        "suites": {"strong": WORDS_STRONG, "weak": WORDS_WEAK}, "run": UNITTEST_RUN,
    },
}

#: what each run should give: (configuration, instance, state) -> outcome
EXPECTED = {
    ("strong", "tiny__clamp-above", "buggy"): "F",
    ("strong", "tiny__clamp-above", "reference"): "P",
    ("strong", "tiny__clamp-above", "candidate:max-min"): "P",
    ("strong", "tiny__clamp-above", "candidate:drops-lo"): "F",
    ("weak", "tiny__clamp-above", "buggy"): "P",
    ("weak", "tiny__clamp-above", "reference"): "P",
    ("weak", "tiny__clamp-above", "candidate:max-min"): "P",
    ("weak", "tiny__clamp-above", "candidate:drops-lo"): "P",
    ("strong", "tiny__words-spaces", "buggy"): "F",
    ("strong", "tiny__words-spaces", "reference"): "P",
    ("strong", "tiny__words-spaces", "candidate:regex"): "P",
    ("strong", "tiny__words-spaces", "candidate:strip-only"): "F",
    ("weak", "tiny__words-spaces", "buggy"): "P",
    ("weak", "tiny__words-spaces", "reference"): "P",
    ("weak", "tiny__words-spaces", "candidate:regex"): "P",
    ("weak", "tiny__words-spaces", "candidate:strip-only"): "P",
}
CANDIDATES = {"tiny__clamp-above": ("max-min", "drops-lo"), "tiny__words-spaces": ("regex", "strip-only")}


def diff(path: str, old: str, new: str) -> str:
    """A unified diff with a/ b/ prefixes; `old=""` creates the file."""
    return "".join(difflib.unified_diff(
        old.splitlines(True), new.splitlines(True), "/dev/null" if not old else f"a/{path}", f"b/{path}",
    ))


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def make_docker_benchmark(root: Path) -> Path:
    for instance_id, spec in INSTANCES.items():
        folder = root / "instances" / instance_id
        module = spec["module"]
        valid_id, invalid_id = CANDIDATES[instance_id]
        _write(folder / "program" / module, spec["buggy"])
        _write(folder / "instruction.md", f"{instance_id}: see the summary.\n")
        _write(folder / "reference.diff", diff(module, spec["buggy"], spec["reference"]))
        _write(folder / "checks.diff", diff("tests/test_official.py", "", spec["suites"]["strong"]))
        _write(folder / "candidates" / f"{valid_id}.diff", diff(module, spec["buggy"], spec["valid"]))
        _write(folder / "candidates" / f"{invalid_id}.diff", diff(module, spec["buggy"], spec["invalid"]))
        environment = "" if spec["packages"] is None else f"\n[environment]\npackages = {spec['packages']!r}\n"
        _write(folder / "instance.toml", f'''\
id = "{instance_id}"
source = "tiny"
summary = "{instance_id}"
{environment}
[checks]
command = "python -m pytest -q tests/test_official.py"
fail_to_pass = ["tests/test_official.py"]

[[candidates]]
id = "{valid_id}"
label = "valid"
patch = "candidates/{valid_id}.diff"

[[candidates]]
id = "{invalid_id}"
label = "invalid"
patch = "candidates/{invalid_id}.diff"
''')
        for configuration, test in spec["suites"].items():
            suite = root / "suites" / configuration / instance_id
            _write(suite / f"test_{configuration}.py", test)
            _write(suite / "run_tests.sh", spec["run"])
    return root
