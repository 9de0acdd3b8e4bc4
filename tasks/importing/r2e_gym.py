"""R2E-Gym / DeepSWE rows (R2E-Gym/R2E-Gym-Subset, -Lite, the DeepSWE training rows) as the
SWE-bench fields the source route of `testprism import swebench` reads, derived from the row
as published, the way R2E-Gym's own code derives them:

- the program: the repository at `parsed_commit_content.old_commit_hash`, the parent of the
  row's commit (R2E-Gym's repo_testextract.py checks it out to run the old commit's tests);
  `repo_name` is the short name R2E-Gym's base Dockerfiles clone (base_dockerfiles/, R2E_REPOS);
- the reference: the commit's non-test Python file diffs, rendered as R2E-Gym renders them
  (commit_models/diff_classes.py `ParsedCommit.get_patch(test_file=False)`, whose
  `only_python` default leaves other files out);
- the checks: the files R2E-Gym runs, `execution_result_content.test_file_names/_codes` (the
  commit's test files as of the commit, and the runner or conftest R2E-Gym adds), written to
  r2e_tests/ beside an empty __init__.py (repo_testextract.py `create_tests`);
- the grading: `expected_output_json` is the log of the fixed program as R2E-Gym parses it
  (execution_log_parser.py `parse_log_pytest`: the short test summary of `pytest -rA`, keyed
  by the id after the file). A test it expects PASSED decides: fail-to-pass when the old
  commit's log (`old_commit_res_stdout`) does not show it passing, pass-to-pass when it does.
  The ids are the pytest node ids those logs name, so testprism's runner finds them.

What R2E-Gym grades that an instance cannot hold is refused or left out with a reason: a test
expected to FAIL after the fix (R2E-Gym's reward asks every status to match exactly; testprism's
checks hold tests that pass after the fix) is left out, and a row whose logs do not give its
tests is refused, naming the field and the way on.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from testprism.tasks.importing.folders import edit_diff
from testprism.tasks.importing.multi_swe_bench import row_id
from testprism.tasks.importing.rows import RowError, json_encoded, validated

SOURCE = "R2E-Gym"

#: R2E-Gym's repositories by the short name its rows give (`repo_name`), as its base
#: Dockerfiles clone them (src/r2egym/repo_analysis/base_dockerfiles/Dockerfile.<repo_name>)
R2E_REPOS = {
    "aiohttp": "aio-libs/aiohttp", "coveragepy": "nedbat/coveragepy", "datalad": "datalad/datalad",
    "numpy": "numpy/numpy", "orange3": "biolab/orange3", "pandas": "pandas-dev/pandas",
    "pillow": "python-pillow/Pillow", "pyramid": "Pylons/pyramid", "scrapy": "scrapy/scrapy",
    "sympy": "sympy/sympy", "tornado": "tornadoweb/tornado",
}
#: the folder R2E-Gym runs its tests from (`pytest -rA r2e_tests`)
TESTS_FOLDER = "r2e_tests"
#: a statement of R2E-Gym's parser, in the order it tests them (a line is PASSED if it says so anywhere)
STATUSES = ("PASSED", "FAILED", "ERROR")
_COLOUR = re.compile(r"\x1b\[\d+m")


# -- the row as published ------------------------------------------------------------------------


class _Path(BaseModel):
    path: str


class _Header(BaseModel):
    file: _Path
    misc_line: str | None = None


class _IndexLine(BaseModel):
    old_commit_hash: str
    new_commit_hash: str
    mode: str = ""


class _Range(BaseModel):
    start: int
    length: int | None = None

    def text(self) -> str:
        return f"{self.start}" if self.length is None else f"{self.start},{self.length}"


class _Descriptor(BaseModel):
    old_range: _Range
    new_range: _Range
    section: str = ""


class _Line(BaseModel):
    content: str
    type: Literal["context", "added", "deleted", "note"]


class _LineGroup(BaseModel):
    all_lines: list[_Line] = Field(default_factory=list)


class _Hunk(BaseModel):
    descriptor: _Descriptor
    line_group: _LineGroup


class FileDiff(BaseModel):
    """One file of R2E-Gym's ParsedCommit (commit_models/diff_classes.py `FileDiff`)."""

    header: _Header
    index_line: _IndexLine | None = None
    is_binary_file: bool = False
    binary_line: str | None = None
    minus_file: _Path | None = None
    plus_file: _Path | None = None
    hunks: list[_Hunk] = Field(default_factory=list)

    @property
    def path(self) -> str:
        return self.header.file.path

    @property
    def is_test_file(self) -> bool:
        """R2E-Gym's rule (`FileDiff.is_test_file`), which decides what the reference leaves out."""
        parts = self.path.split("/")
        return (self.path.endswith("_test.py") or self.path.startswith("test_") or parts[-1].startswith("test_")
                or any(folder in parts for folder in ("tests", "Tests", "test", "Test")))

    def patch(self) -> str:
        """The file's diff as `FileDiff.get_patch` writes it."""
        text = f"diff --git a/{self.path} b/{self.path}\n"
        if self.header.misc_line:
            text += self.header.misc_line + "\n"
        if self.index_line:
            index = self.index_line
            text += f"index {index.old_commit_hash}..{index.new_commit_hash}{' ' if index.mode else ''}{index.mode}\n"
        if self.is_binary_file:
            text += f"{self.binary_line}\n"
        if self.minus_file and self.plus_file:
            text += f"--- {self.minus_file.path}\n+++ {self.plus_file.path}\n"
        marks = {"context": " ", "added": "+", "deleted": "-", "note": "\\ "}
        for hunk in self.hunks:
            head = f"@@ -{hunk.descriptor.old_range.text()} +{hunk.descriptor.new_range.text()} @@"
            text += (f"{head} {hunk.descriptor.section}" if hunk.descriptor.section else head) + "\n"
            text += "".join(f"{marks[line.type]}{line.content}\n" for line in hunk.line_group.all_lines)
        return text


class ParsedCommit(BaseModel):
    """`parsed_commit_content`: the commit's file diffs and the commits they join."""

    file_diffs: list[FileDiff]
    old_commit_hash: str = Field(pattern=r"^[0-9a-fA-F]{7,40}$")
    new_commit_hash: str

    def reference(self) -> str:
        """`ParsedCommit.get_patch(test_file=False)`: the non-test Python files."""
        return "".join(d.patch() for d in self.file_diffs if d.path.endswith(".py") and not d.is_test_file)


class Execution(BaseModel):
    """`execution_result_content`: what R2E-Gym ran (repo_analysis/execution_result_analysis.py
    `ExecutionResult`); its other fields are ignored."""

    test_file_codes: list[str]
    test_file_names: list[str]
    old_commit_res_stdout: str | None = None
    new_commit_res_stdout: str | None = None


class R2eRow(BaseModel):
    """The fields of an R2E-Gym row this route reads; the others (prompt, relevant_files,
    modified_entity_summaries, num_non_test_*) are ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    repo_name: str
    commit_hash: str = Field(pattern=r"^[0-9a-fA-F]{7,40}$")
    docker_image: str = ""
    problem_statement: str = Field(min_length=1)
    parsed_commit_content: ParsedCommit
    execution_result_content: Execution
    expected_output_json: dict[str, str]

    @field_validator("parsed_commit_content", "execution_result_content", "expected_output_json", mode="before")
    @classmethod
    def _json(cls, value: Any) -> Any:
        return json_encoded(value, "a JSON object")


def r2e_row(data: dict[str, Any]) -> R2eRow:
    """The row validated; RowError naming the source, the field and what it must hold."""
    return validated(R2eRow, data, SOURCE)


# -- what R2E-Gym runs and how it grades ------------------------------------------------------------


def summary(log: str | None) -> dict[str, tuple[str, str]]:
    """R2E-Gym's `parse_log_pytest` (execution_log_parser.py), each test's status kept with the
    pytest node id its line names: {R2E-Gym's id: (status, node id)}. Empty when the log has no
    short test summary."""
    if not log or "short test summary info" not in log:
        return {}
    found: dict[str, tuple[str, str]] = {}
    for line in log.split("short test summary info")[1].strip().split("\n"):
        status = next((s for s in STATUSES if s in line), None)
        if status is None:
            continue
        key = ".".join(line.split("::")[1:])
        if status != "PASSED":
            key = key.split(" - ")[0]
        node = line.strip().split(" ", 1)[-1].split(" - ")[0].strip()
        found[_COLOUR.sub("", key).split(" - ")[0]] = (status, node)
    return found


def tests_diff(names: list[str], codes: list[str]) -> str:
    """The diff that adds R2E-Gym's test files under r2e_tests/ (repo_testextract.py `create_tests`)."""
    if len(names) != len(codes) or not names:
        raise RowError("execution_result_content", f"{SOURCE} row: test_file_names ({len(names)}) and test_file_codes "
                                                   f"({len(codes)}) must name the same test files, at least one")
    files = {f"{TESTS_FOLDER}/__init__.py": b""}
    for name, code in zip(names, codes):
        if "/" in name or name in ("", ".", "..") or name.startswith("."):
            raise RowError("execution_result_content", f"{SOURCE} row: test_file_names holds {name!r}, not a file "
                                                       f"name of {TESTS_FOLDER}/")
        files[f"{TESTS_FOLDER}/{name}"] = code.encode("utf-8")
    with tempfile.TemporaryDirectory(prefix="testprism-r2e-") as empty:
        return edit_diff(Path(empty), files)


def deciding_tests(row: R2eRow) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(fail-to-pass, pass-to-pass, left out) node ids, from expected_output_json and the two
    logs R2E-Gym recorded; RowError naming the field when they do not give them."""
    execution = row.execution_result_content
    fixed, before = summary(execution.new_commit_res_stdout), summary(execution.old_commit_res_stdout)
    if not fixed or not before:
        which = "new_commit_res_stdout" if not fixed else "old_commit_res_stdout"
        raise RowError("execution_result_content", f"{SOURCE} row: its {which} holds no pytest short test summary, "
                                                   "so which test passes before and after the fix is unknown; a row "
                                                   "of R2E-Gym's datasets carries both logs (ExecutionResult)")
    f2p: list[str] = []
    p2p: list[str] = []
    left_out: list[str] = []
    for key, status in sorted(row.expected_output_json.items()):
        key = _COLOUR.sub("", key).split(" - ")[0]
        if key not in fixed:
            raise RowError("expected_output_json", f"{SOURCE} row: {key!r} is not in the fixed program's log "
                                                   "(execution_result_content.new_commit_res_stdout), which "
                                                   "expected_output_json is R2E-Gym's parse of")
        node = fixed[key][1]
        if status != "PASSED":
            left_out.append(node)
        elif before.get(key, ("",))[0] == "PASSED":
            p2p.append(node)
        else:
            f2p.append(node)
    if not f2p:
        raise RowError("expected_output_json", f"{SOURCE} row: no test it expects to pass fails before the fix "
                                               "(execution_result_content.old_commit_res_stdout): nothing decides the "
                                               "transition")
    return tuple(f2p), tuple(p2p), tuple(left_out)


def swebench_fields(data: dict[str, Any]) -> dict[str, Any]:
    """An R2E-Gym row as the SWE-bench fields the source route reads (see the module's doc)."""
    row = r2e_row(data)
    repo = R2E_REPOS.get(row.repo_name)
    if repo is None:
        raise RowError("repo_name", f"{SOURCE} row: {row.repo_name!r} is none of R2E-Gym's repositories "
                                    f"({', '.join(sorted(R2E_REPOS))}); give the row in SWE-bench's layout instead")
    commit = row.parsed_commit_content
    if not row.commit_hash.startswith(commit.new_commit_hash) and not commit.new_commit_hash.startswith(row.commit_hash):
        raise RowError("parsed_commit_content", f"{SOURCE} row: new_commit_hash {commit.new_commit_hash} is not the "
                                                f"row's commit_hash {row.commit_hash}")
    reference = commit.reference()
    if not reference:
        raise RowError("parsed_commit_content", f"{SOURCE} row: the commit changes no non-test Python file, so it "
                                                "has no reference (R2E-Gym's gold patch is that part of the commit)")
    execution = row.execution_result_content
    f2p, p2p, _ = deciding_tests(row)
    return {
        "instance_id": row_id(data), "repo": repo,
        "base_commit": commit.old_commit_hash, "patch": reference,
        "test_patch": tests_diff(execution.test_file_names, execution.test_file_codes),
        "FAIL_TO_PASS": f2p, "PASS_TO_PASS": p2p, "language": "python", "problem_statement": row.problem_statement,
    }


def left_out_tests(data: dict[str, Any]) -> tuple[str, ...]:
    """The tests R2E-Gym expects to fail after the fix, which the checks do not hold (a caveat)."""
    return deciding_tests(r2e_row(data))[2]
