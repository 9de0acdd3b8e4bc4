"""bench/realrows/fetch.py's rebuild of a row from a fix commit, with the tests named by runs
here (`--tests`, bench/realrows/named/) where no official report can be had (issue 40)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest

FETCH = Path(__file__).resolve().parents[1] / "bench" / "realrows" / "fetch.py"
spec = importlib.util.spec_from_file_location("realrows_fetch", FETCH)
assert spec is not None and spec.loader is not None
fetch = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fetch)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def fixed(tmp_path) -> tuple[Path, str]:
    """A repository like test-unit's, every path under a `test` segment: lib/test/unit/ holds
    the code, test/ the tests; its last commit fixes both."""
    repo = tmp_path / "repo"
    (repo / "lib" / "test" / "unit").mkdir(parents=True)
    (repo / "test").mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    (repo / "lib" / "test" / "unit" / "case.rb").write_text("X = 1\n")
    (repo / "test" / "test-case.rb").write_text("# tests\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    (repo / "lib" / "test" / "unit" / "case.rb").write_text("X = 2\n")
    (repo / "test" / "test-case.rb").write_text("# tests\n# test_x\n")
    git(repo, "commit", "-qam", "Fix X (#7)")
    return repo / ".git", git(repo, "rev-parse", "HEAD").strip()


def named_file(tmp_path: Path, **over) -> Path:
    path = tmp_path / "named.json"
    path.write_text(json.dumps({"f2p_tests": {"test_x": {"test": "FAIL", "fix": "PASS"}},
                                "p2p_tests": {"test_y": {"test": "PASS", "fix": "PASS"}},
                                "how": "ruby test/run.rb -v, before and after the fix"} | over))
    return path


def test_a_row_rebuilt_with_named_tests_says_how_they_were_named(tmp_path, fixed):
    git_dir, commit = fixed
    named = named_file(tmp_path)
    fetch.rebuild(git_dir, commit, "acme", "unit", 7, None, tmp_path / "rows", named, ["test/"])
    [row] = [json.loads(line) for line in (tmp_path / "rows" / "acme__unit_rebuilt.jsonl").read_text().splitlines()]
    assert row["base"]["sha"] == git(git_dir.parent, "rev-parse", "HEAD^").strip()
    assert "lib/test/unit/case.rb" in row["fix_patch"] and "test/test-case.rb" not in row["fix_patch"]
    assert "test/test-case.rb" in row["test_patch"] and "lib/test/unit" not in row["test_patch"]
    assert list(row["f2p_tests"]) == ["test_x"] and list(row["p2p_tests"]) == ["test_y"]
    assert row["rebuilt_from"] == {"commit": commit, "tests": str(named), "named_by": "ruby test/run.rb -v, before and after the fix"}
    # without the prefix, the `test` segment rule takes lib/test/unit/ for tests: no fix is left
    fetch.rebuild(git_dir, commit, "acme", "unit", 8, None, tmp_path / "rule", named)
    assert json.loads((tmp_path / "rule" / "acme__unit_rebuilt.jsonl").read_text())["fix_patch"] == ""


@pytest.mark.parametrize("over", [{"how": ""}, {"f2p_tests": {}}])
def test_named_tests_must_name_the_deciding_tests_and_how(tmp_path, fixed, over):
    git_dir, commit = fixed
    with pytest.raises(SystemExit) as stopped:
        fetch.rebuild(git_dir, commit, "acme", "unit", 7, None, tmp_path / "rows", named_file(tmp_path, **over))
    assert "named.json: field f2p_tests or how" in str(stopped.value)
    assert not (tmp_path / "rows").exists()


def test_the_committed_named_rows_each_name_a_fix_commit_tests_and_how():
    for path in sorted(fetch.NAMED.glob("*.json")):
        spec = json.loads(path.read_text(encoding="utf-8"))
        assert len(spec["commit"]) == 40 and spec["f2p_tests"] and spec["how"].strip(), path
        assert not fetch.held_out(spec["org"], spec["repo"]), path
