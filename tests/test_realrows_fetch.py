"""bench/realrows/fetch.py's rebuild of a row (docs/real-benchmarks.md): the tests read from a
SWE-bench-java evaluation log, a pull request's change carried to its own base, CRLF kept."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest

FETCH = Path(__file__).resolve().parents[1] / "bench" / "realrows" / "fetch.py"


@pytest.fixture(scope="module")
def fetch():
    spec = importlib.util.spec_from_file_location("realrows_fetch", FETCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def commit(repo: Path, files: dict[str, bytes], message: str) -> str:
    for name, content in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_bytes(content)
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def test_swebench_java_log_gives_the_rows_tests_whatever_the_patch_did(fetch, tmp_path):
    log = tmp_path / "run_instance.log"
    log.write_text("2024-08-24 20:34:48,635 - INFO - Grading answer for google__gson-1093...\n"
                   "2024-08-24 20:34:48,635 - INFO - report: {'google__gson-1093': {'resolved': False, 'tests_status': "
                   "{'FAIL_TO_PASS': {'success': [], 'failure': ['gson:com.google.gson.stream.JsonWriterTest'], "
                   "'skipped': []}, 'PASS_TO_PASS': {'success': ['gson:com.google.gson.GsonTest'], 'failure': []}}}}\n")
    assert fetch.swebench_java_tests(log) == {
        "f2p_tests": {"gson:com.google.gson.stream.JsonWriterTest": {"test": "FAIL", "fix": "PASS"}},
        "p2p_tests": {"gson:com.google.gson.GsonTest": {"test": "PASS", "fix": "PASS"}}}
    log.write_text("2024-08-24 20:34:48,635 - INFO - Container started\n")
    with pytest.raises(SystemExit, match="no `report:` line"):
        fetch.swebench_java_tests(log)


def test_rebuild_carries_the_change_to_the_pull_requests_base_and_keeps_crlf(fetch, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    lines = [f"line {i}\r\n".encode() for i in range(20)]
    base = commit(repo, {"src/A.java": b"".join(lines)}, "base")
    # later work on main touches the file far from the fix: the squash's diff no longer applies
    # to the base as it is, but merges onto it without conflict
    later = lines[:]
    later[18] = b"line 18 changed later\r\n"
    commit(repo, {"src/A.java": b"".join(later)}, "later")
    fixed = later[:]
    fixed[2] = b"line 2 fixed\r\n"
    squash = commit(repo, {"src/A.java": b"".join(fixed), "src/test/ATest.java": b"test\r\n"}, "fix (#7)")
    tests = {"f2p_tests": {"m:org.x.ATest": {}}}
    fetch.rebuild(repo / ".git", squash, "o", "r", 7, tests, tmp_path / "log", tmp_path / "out", base)
    row = json.loads((tmp_path / "out" / "o__r_rebuilt.jsonl").read_text())
    assert row["base"]["sha"] == base and row["rebuilt_from"]["base"] == base
    assert "+line 2 fixed\r\n" in row["fix_patch"] and "line 18 changed later" not in row["fix_patch"]
    assert "+test\r\n" in row["test_patch"] and list(row["f2p_tests"]) == ["m:org.x.ATest"]
    # a base where the change conflicts is refused
    conflicting = lines[:]
    conflicting[2] = b"line 2 otherwise\r\n"
    git(repo, "checkout", "-q", base)
    other = commit(repo, {"src/A.java": b"".join(conflicting)}, "other")
    with pytest.raises(SystemExit, match="nor merge there without conflict"):
        fetch.rebuild(repo / ".git", squash, "o", "r", 7, tests, tmp_path / "log", tmp_path / "out2", other)
