"""bench/realrows/fetch.py's rebuild of a row (docs/real-benchmarks.md): the tests read from a
SWE-bench-java evaluation log, a pull request's change carried to its own base, CRLF kept; and
the tests named by runs here (`--tests`, bench/realrows/named/) where no official report can
be had (issue 40)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import script_module

FETCH = Path(__file__).resolve().parents[1] / "bench" / "realrows" / "fetch.py"


@pytest.fixture(scope="module")
def fetch():
    return script_module(FETCH, "realrows_fetch")


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


def test_a_row_rebuilt_with_named_tests_says_how_they_were_named(fetch, tmp_path, fixed):
    git_dir, commit = fixed
    named = named_file(tmp_path)
    fetch.rebuild_named(git_dir, commit, "acme", "unit", 7, named, tmp_path / "rows", ["test/"])
    [row] = [json.loads(line) for line in (tmp_path / "rows" / "acme__unit_rebuilt.jsonl").read_text().splitlines()]
    assert row["base"]["sha"] == git(git_dir.parent, "rev-parse", "HEAD^").strip()
    assert "lib/test/unit/case.rb" in row["fix_patch"] and "test/test-case.rb" not in row["fix_patch"]
    assert "test/test-case.rb" in row["test_patch"] and "lib/test/unit" not in row["test_patch"]
    assert list(row["f2p_tests"]) == ["test_x"] and list(row["p2p_tests"]) == ["test_y"]
    assert row["rebuilt_from"] == {"commit": commit, "tests": str(named), "named_by": "ruby test/run.rb -v, before and after the fix"}
    # without the prefix, the `test` segment rule takes lib/test/unit/ for tests: no fix is left
    fetch.rebuild_named(git_dir, commit, "acme", "unit", 8, named, tmp_path / "rule")
    assert json.loads((tmp_path / "rule" / "acme__unit_rebuilt.jsonl").read_text())["fix_patch"] == ""


@pytest.mark.parametrize("over", [{"how": ""}, {"f2p_tests": {}}])
def test_named_tests_must_name_the_deciding_tests_and_how(fetch, tmp_path, fixed, over):
    git_dir, commit = fixed
    with pytest.raises(SystemExit) as stopped:
        fetch.rebuild_named(git_dir, commit, "acme", "unit", 7, named_file(tmp_path, **over), tmp_path / "rows")
    assert "named.json: field f2p_tests or how" in str(stopped.value)
    assert not (tmp_path / "rows").exists()


def test_the_committed_named_rows_each_name_a_fix_commit_tests_and_how(fetch):
    for path in sorted(fetch.NAMED.glob("*.json")):
        spec = json.loads(path.read_text(encoding="utf-8"))
        assert len(spec["commit"]) == 40 and spec["f2p_tests"] and spec["how"].strip(), path
        assert not fetch.held_out(spec["org"], spec["repo"]), path


@pytest.fixture
def pro_snapshots(tmp_path):
    """A program repository with a fix commit, and a SWE-bench Pro-os-like repository whose
    run_scripts/<id>/ names that commit's parent as its base."""
    program = tmp_path / "program"
    program.mkdir()
    git(program, "init", "-q")
    commit(program, {"go.mod": b"module acme/tool\n"}, "root")
    base = commit(program, {"pkg/a.go": b"package pkg\n", "pkg/a_test.go": b"package pkg\n"}, "base")
    fix = commit(program, {"pkg/a.go": b"package pkg\n\nfunc A() {}\n",
                           "pkg/a_test.go": b"package pkg\n\n// TestA\n"}, "Add A\n\nso that callers can")
    instance = f"instance_acme__tool-{fix}"
    pro = tmp_path / "pro"
    pro.mkdir()
    git(pro, "init", "-q")
    info = (f"Instance ID: {instance}\nRepository: acme/tool\nBase Commit: {base}\nTest Files: [\"TestA\"]\n"
            "FAIL_TO_PASS: [\"TestA\"]\nPASS_TO_PASS: [\"TestB\"]\n")
    commit(pro, {f"run_scripts/{instance}/instance_info.txt": info.encode(),
                 f"run_scripts/{instance}/run_script.sh": b"#!/bin/bash\ngo test -v -run \"$1\" ./...\n",
                 f"run_scripts/{instance}/parser.py": b"print('parser')\n"}, "scripts")
    return pro / ".git", program / ".git", instance, base


def test_a_pro_row_rebuilt_from_instance_info_imports_as_a_published_v2_row(fetch, tmp_path, pro_snapshots):
    from testprism.tasks.importing.image_names import ImageMap
    from testprism.tasks.importing.image_route import ImageRoute, import_image_rows
    from testprism.tasks.importing.image_specs import ImageSpecs

    pro, program, instance, base = pro_snapshots
    fetch.pro_rows(pro, program, [instance], "go", tmp_path / "out")
    rows = tmp_path / "out" / "rows" / "acme__tool_pro_rebuilt.jsonl"
    [row] = [json.loads(line) for line in rows.read_text().splitlines()]
    # the v2 layout: lists as Python literals, the test split by path, the tag Pro's helper derives
    assert (row["base_commit"], row["fail_to_pass"], row["pass_to_pass"], row["selected_test_files_to_run"]) == \
        (base, "['TestA']", "['TestB']", "['TestA']")
    assert "pkg/a.go" in row["patch"] and "a_test.go" not in row["patch"] and "pkg/a_test.go" in row["test_patch"]
    assert row["problem_statement"].startswith("Add A") and row["rebuilt_from"]["commit"] == instance.rsplit("-", 1)[1]
    assert row["dockerhub_tag"] == f"acme.tool-{instance.removeprefix('instance_')}"
    report = import_image_rows(rows, tmp_path / "bench", ImageRoute(ImageSpecs.load(None), ImageMap(),
                                                                    tmp_path / "out" / "run_scripts"))
    assert report.imported == [instance] and not report.issues


def test_a_pro_row_whose_base_is_not_the_fix_commits_parent_is_not_rebuilt(fetch, tmp_path, pro_snapshots):
    pro, program, instance, _ = pro_snapshots
    other = instance.rsplit("-", 1)[0] + "-" + git(program.parent, "rev-parse", "HEAD^")
    # the base commit named by instance_info.txt is the fix's parent: an id naming the base itself is refused
    info = git(pro.parent, "show", f"HEAD:run_scripts/{instance}/instance_info.txt")
    commit(pro.parent, {f"run_scripts/{other}/instance_info.txt": info.encode()}, "other")
    with pytest.raises(SystemExit, match=rf"run_scripts/{other}/instance_info.txt: field Base Commit: .* is not the parent"):
        fetch.pro_rows(pro, program, [other], "go", tmp_path / "out")
