"""A small real git repository shaped like a SWE-bench source, and the files that describe it.

`acme/widgets` has a history: an initial package, a commit that introduces a bug (`slugify`
drops digits), then `base_commit`, then later work, so a program exported at the wrong
commit shows. Beside it: the reference fix and a test patch made as `git diff` of real edits,
SWE-bench rows (JSON Lines, FAIL_TO_PASS/PASS_TO_PASS as JSON-encoded strings, as
published), a recipe, and a prediction file holding a generated test patch without its
final newline (as Copilot's rows have). Reused by the end-to-end tests: import → environment
→ label → panel → replay → score.

`rich_checks=True` gives the row a richer official test patch (3 FAIL_TO_PASS, 4
PASS_TO_PASS checks, each of which some wrong fix fails alone), so that invalid candidates
can fail *different* checks (tests/test_pipeline.py); `GitFixture.diff` makes candidate
patches against `base_commit`.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPO = "acme/widgets"
INSTANCE_ID = "acme__widgets-1"

TEXT_GOOD = '''\
import re


def slugify(title: str) -> str:
    """Lower-case words of `title` joined by hyphens."""
    words = re.findall(r"[A-Za-z0-9]+", title)
    return "-".join(word.lower() for word in words)
'''
TEXT_BUGGY = TEXT_GOOD.replace("[A-Za-z0-9]+", "[A-Za-z]+")
TESTS_BASE = '''\
from widgets.text import slugify


def test_slugify_lowercases():
    assert slugify("Hello World") == "hello-world"


def test_slugify_transliterates():  # a known failure no state fixes: it must not decide
    assert slugify("Ça va") == "ca-va"
'''
#: the official test patch adds this test (FAIL_TO_PASS); the first one of TESTS_BASE passes throughout
OFFICIAL_TEST = '''

def test_slugify_keeps_digits():
    assert slugify("Top 10 Widgets") == "top-10-widgets"
'''
#: with `rich_checks`: the official test patch adds these; each check can fail alone
RICH_OFFICIAL_TESTS = OFFICIAL_TEST + '''

def test_slugify_digits_only():
    assert slugify("2024") == "2024"


def test_slugify_digit_inside_word():
    assert slugify("mp3 Player") == "mp3-player"


def test_slugify_drops_punctuation():
    assert slugify("Hello, World!") == "hello-world"


def test_slugify_empty():
    assert slugify("") == ""


def test_slugify_splits_underscores():
    assert slugify("snake_case name") == "snake-case-name"
'''
RICH_FAIL_TO_PASS = tuple(f"tests/test_text.py::{name}" for name in (
    "test_slugify_keeps_digits", "test_slugify_digits_only", "test_slugify_digit_inside_word"))
#: the first passes throughout; the others are added by the test patch and pass on buggy too
RICH_PASS_TO_PASS = tuple(f"tests/test_text.py::{name}" for name in (
    "test_slugify_lowercases", "test_slugify_drops_punctuation", "test_slugify_empty",
    "test_slugify_splits_underscores"))
#: a generated suite: changes one existing test and adds one, plus a helper that is no test
SUITE_TESTS = TESTS_BASE.replace(
    '    assert slugify("Hello World") == "hello-world"\n',
    '    assert slugify("Hello World") == "hello-world"\n    assert slugify("ABC") == "abc"\n',
) + '''

def _words(slug):
    return slug.split("-")


def test_digits_survive():
    assert _words(slugify("Route 66 ahead")) == ["route", "66", "ahead"]
'''
SUITE_SELECTED = ("tests/test_text.py::test_digits_survive", "tests/test_text.py::test_slugify_lowercases")

RECIPE = '''\
[[recipe]]
repo = "acme/widgets"
versions = ">=0.1,<1"
python = "3.11"
packages = ["pytest>=8,<10"]
test_command = "python -m pytest -q -p no:cacheprovider {test_files} --junitxml=$TESTPRISM_JUNIT"

[recipe.env]
WIDGETS_MODE = "strict"
'''


@dataclass(frozen=True)
class GitFixture:
    repos: Path  # folder of clones named owner__name (the importer's --repos)
    repo: Path
    base_commit: str
    head_commit: str
    rows: Path  # SWE-bench rows, JSON Lines
    row: dict  # the row, as written
    recipes: Path
    predictions: Path  # one generated test patch, no final newline
    reference: str
    test_patch: str
    suite_patch: str
    fail_to_pass: tuple[str, ...] = ("tests/test_text.py::test_slugify_keeps_digits",)
    pass_to_pass: tuple[str, ...] = ("tests/test_text.py::test_slugify_lowercases",)

    def diff(self, files: dict[str, str]) -> str:
        """The `git diff` that turns base_commit's version of `files` (paths that exist
        there) into the given texts: a candidate patch as an agent would submit it."""
        for rel, text in files.items():
            (self.repo / rel).write_text(text)
        try:
            return _git(self.repo, "diff", self.base_commit, "--", *files)
        finally:
            _git(self.repo, "checkout", "-q", "HEAD", "--", *files)


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.org",
           "GIT_COMMITTER_NAME": "Dev", "GIT_COMMITTER_EMAIL": "dev@example.org"}
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True)
    return done.stdout


def _commit(repo: Path, files: dict[str, str], message: str) -> str:
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD").strip()


def _diff_of(repo: Path, files: dict[str, str]) -> str:
    """The diff that turns base_commit's files into `files` (then the edit is undone)."""
    for rel, text in files.items():
        (repo / rel).write_text(text)
    diff = _git(repo, "diff")
    _git(repo, "checkout", "-q", "--", ".")
    return diff


def build_git_fixture(root: Path, *, rich_checks: bool = False) -> GitFixture:
    """Build the repository and its files under `root`; returns their paths. With
    `rich_checks`, the row's test patch and FAIL_TO_PASS/PASS_TO_PASS are the rich ones."""
    repos = root / "repos"
    repo = repos / REPO.replace("/", "__")
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    _commit(repo, {"widgets/__init__.py": '__version__ = "0.1"\n', "widgets/text.py": TEXT_GOOD,
                   "tests/test_text.py": TESTS_BASE, "README.md": "# widgets\n"}, "initial package")
    _commit(repo, {"widgets/text.py": TEXT_BUGGY}, "speed up slugify")  # the bug
    base = _commit(repo, {"widgets/__init__.py": '__version__ = "0.2"\n'}, "release 0.2")
    reference = _diff_of(repo, {"widgets/text.py": TEXT_GOOD})
    official = RICH_OFFICIAL_TESTS if rich_checks else OFFICIAL_TEST
    test_patch = _diff_of(repo, {"tests/test_text.py": TESTS_BASE + official})
    fail_to_pass = RICH_FAIL_TO_PASS if rich_checks else GitFixture.fail_to_pass
    pass_to_pass = RICH_PASS_TO_PASS if rich_checks else GitFixture.pass_to_pass
    suite_patch = _diff_of(repo, {"tests/test_text.py": SUITE_TESTS})
    head = _commit(repo, {"widgets/__init__.py": '__version__ = "0.3.dev0"\n', "CHANGELOG.md": "later work\n"},
                   "later work")
    row = {
        "repo": REPO,
        "instance_id": INSTANCE_ID,
        "base_commit": base,
        "patch": reference,
        "test_patch": test_patch,
        "problem_statement": "slugify drops digits\n\n`slugify('Top 10 Widgets')` gives 'top-widgets'.\n",
        "hints_text": "",
        "created_at": "2026-01-01T00:00:00Z",
        "version": "0.2",
        "FAIL_TO_PASS": json.dumps(list(fail_to_pass)),
        "PASS_TO_PASS": json.dumps(list(pass_to_pass)),
        "environment_setup_commit": base,
    }
    rows = root / "rows.jsonl"
    rows.write_text(json.dumps(row) + "\n")
    recipes = root / "recipes.toml"
    recipes.write_text(RECIPE)
    predictions = root / "predictions.jsonl"
    prediction = {"instance_id": INSTANCE_ID, "model_name_or_path": "agent-x/model-1",
                  "model_patch": suite_patch.rstrip("\n")}
    predictions.write_text(json.dumps(prediction) + "\n")
    return GitFixture(repos=repos, repo=repo, base_commit=base, head_commit=head, rows=rows, row=row,
                      recipes=recipes, predictions=predictions, reference=reference, test_patch=test_patch,
                      suite_patch=suite_patch, fail_to_pass=fail_to_pass, pass_to_pass=pass_to_pass)


# -- SWE-bench Multilingual-shaped rows: a Go and a JavaScript repository -------------------

GO_CALC = '''\
package calc

// Clamp limits x to [lo, hi].
func Clamp(x, lo, hi int) int {
	if x < lo {
		return lo
	}
	if x > hi {
		return hi
	}
	return x
}
'''
GO_CALC_TESTS = '''\
package calc

import "testing"

func TestClamp(t *testing.T) {
	t.Run("high", func(t *testing.T) {
		if got := Clamp(9, 0, 5); got != 5 {
			t.Fatalf("Clamp(9, 0, 5) = %d", got)
		}
	})
	t.Run("inside", func(t *testing.T) {
		if got := Clamp(3, 0, 5); got != 3 {
			t.Fatalf("Clamp(3, 0, 5) = %d", got)
		}
	})
}

func TestClampLow(t *testing.T) {
	if got := Clamp(-4, 0, 5); got != 0 {
		t.Fatalf("Clamp(-4, 0, 5) = %d", got)
	}
}
'''
JS_CLAMP = '''\
'use strict';
function clamp(x, lo, hi) {
  if (x < lo) return lo;
  if (x > hi) return hi;
  return x;
}
module.exports = { clamp };
'''
JS_CLAMP_TESTS = '''\
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { clamp } = require('../src/clamp.js');

test('clamps (above) the upper bound', () => { assert.equal(clamp(9, 0, 5), 5); });
test('keeps values inside', () => { for (const x of [0, 3, 5]) assert.equal(clamp(x, 0, 5), x); });
'''
MULTILINGUAL = {
    # language: (repo, program files at HEAD~, the buggy file and its bug, test file, F2P, P2P)
    "go": ("acme/gocalc", {"go.mod": "module example.com/gocalc\n\ngo 1.19\n", "calc/calc.go": GO_CALC},
           ("calc/calc.go", "return hi", "return lo"), ("calc/calc_test.go", GO_CALC_TESTS),
           ["TestClamp/high"], ["TestClamp/inside", "TestClampLow"]),
    "javascript": ("acme/jsclamp", {"package.json": '{"name": "jsclamp", "private": true}\n', "src/clamp.js": JS_CLAMP},
                   ("src/clamp.js", "return hi;", "return lo;"), ("test/clamp.test.js", JS_CLAMP_TESTS),
                   ["clamps (above) the upper bound"], ["keeps values inside"]),
}
MULTILINGUAL_RECIPES = {
    "go": '''\
[[recipe]]
repo = "acme/gocalc"
language = "go"
dockerfile = "go.Dockerfile"
toolchains = ["go", "gotestsum"]
test_command = "gotestsum --junitfile $TESTPRISM_JUNIT -- -count=1 -run {tests} {test_dirs}"
variables = { GOPROXY = "off", CGO_ENABLED = "0", GOFLAGS = "-mod=mod" }
build = { command = "go vet ./...", timeout_s = 300 }
''',
    "javascript": '''\
[[recipe]]
repo = "acme/jsclamp"
language = "javascript"
dockerfile = "node.Dockerfile"
toolchains = ["node"]
test_command = "node --test --test-reporter=junit --test-reporter-destination=$TESTPRISM_JUNIT --test-name-pattern={tests} {test_files}"
''',
}


@dataclass(frozen=True)
class LanguageFixture:
    language: str
    repos: Path
    row: dict
    rows: Path
    recipes: Path
    dockerfile: Path


def build_multilingual_fixture(root: Path, language: str) -> LanguageFixture:
    """A repository of `language` with a bug introduced after its first commit, a
    Multilingual-shaped row (FAIL_TO_PASS as Go subtests or JS titles, JSON-encoded), and a
    recipe with a Dockerfile beside it."""
    repo_name, files, (buggy, good, bad), (test_file, tests), f2p, p2p = MULTILINGUAL[language]
    repos = root / "repos"
    repo = repos / repo_name.replace("/", "__")
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    _commit(repo, {**files, "README.md": "# clamp\n"}, "initial")
    base = _commit(repo, {buggy: files[buggy].replace(good, bad)}, "shorter clamp")
    reference = _diff_of(repo, {buggy: files[buggy]})
    (repo / test_file).parent.mkdir(parents=True, exist_ok=True)
    (repo / test_file).write_text(tests)
    _git(repo, "add", "-N", test_file)
    test_patch = _git(repo, "diff")
    _git(repo, "reset", "-q", "--", test_file)
    (repo / test_file).unlink()
    row = {
        "repo": repo_name, "instance_id": f"{repo_name.replace('/', '__')}-7", "base_commit": base,
        "patch": reference, "test_patch": test_patch, "problem_statement": "clamp returns lo above hi\n",
        "hints_text": "", "created_at": "2025-01-01T00:00:00Z", "version": "1.0",
        "FAIL_TO_PASS": json.dumps(f2p), "PASS_TO_PASS": json.dumps(p2p),
    }
    rows = root / "rows.jsonl"
    rows.write_text(json.dumps(row) + "\n")
    recipes = root / "recipes" / f"{language}.toml"
    recipes.parent.mkdir()
    recipes.write_text(MULTILINGUAL_RECIPES[language])
    dockerfile = recipes.parent / ("go.Dockerfile" if language == "go" else "node.Dockerfile")
    dockerfile.write_text("ARG BASE\nFROM ${BASE}\nRUN apt-get update && apt-get install -y --no-install-recommends "
                          + ("golang-go gotestsum" if language == "go" else "nodejs") + "\n")
    return LanguageFixture(language, repos, row, rows, recipes, dockerfile)
