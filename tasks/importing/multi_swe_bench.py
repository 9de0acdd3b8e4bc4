"""Multi-SWE-bench's rows as published, read by both routes of `testprism import swebench`.

A Multi-SWE-bench row (multi-swe-bench/multi-swe-bench multi_swe_bench/harness/dataset.py
`Dataset`, one `<org>__<repo>_dataset.jsonl` per repository) names its repository in two
fields, `org` and the bare `repo`, its pull request by `number`, its commit as `base.sha`,
its reference and checks as `fix_patch` and `test_patch`, and its deciding tests as
`f2p_tests`, `p2p_tests`, `s2p_tests` and `n2p_tests`: mappings keyed by test name (the
value is the run/test/fix outcome the benchmark recorded). `instance_id` is often absent;
the harness names an instance `<org>__<repo>-<number>`. Tests are named as each
repository's `parse_log` names them: Go and Rust by test function, Java by test CLASS, C
and C++ by CTest target, JavaScript and TypeScript by file or suite.

The image route keeps the row's image (`image_route.multi_task`); the source route turns a
row into the SWE-bench shape its recipes and clones work with (`swebench_fields`), so every
route reads the same model and a refusal names the same field. Tests that pass after the fix
but were skipped (s2p) or absent (n2p) before it decide with the fail-to-pass ones, as
Multi-SWE-bench's `fixed_tests` do; a test that does not even compile before the fix (n2p:
a test of a new accessor) is failing there, as the benchmark counts it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from testprism.tasks.importing.rows import RowError, json_encoded, own_folder, validated

SOURCE = "Multi-SWE-bench"
#: where a refused row's reader looks for what the fields must hold
PUBLISHED = "as multi_swe_bench/harness/dataset.py publishes it (docs/real-benchmarks.md)"


class MultiBase(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    sha: str = Field(pattern=r"^[0-9a-fA-F]{7,40}$")


class ResolvedIssue(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    number: int
    title: str = ""
    body: str | None = None


class MultiRow(BaseModel):
    """The fields of a Multi-SWE-bench row testprism uses (harness/dataset.py `Dataset`)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    org: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    repo: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    number: int
    base: MultiBase
    title: str = ""
    body: str | None = None
    resolved_issues: tuple[ResolvedIssue, ...] = ()
    fix_patch: str
    test_patch: str
    f2p_tests: dict[str, Any]
    p2p_tests: dict[str, Any]
    s2p_tests: dict[str, Any] = {}
    n2p_tests: dict[str, Any] = {}
    instance_id: str = Field("", pattern=r"^([A-Za-z0-9_.-]+)?$")
    #: the harness's `PullRequest.lang`; some copies of the dataset say `language`
    lang: str = ""
    language: str = ""

    _own_folder = field_validator("instance_id")(own_folder)

    @model_validator(mode="before")
    @classmethod
    def _flattened_base(cls, data: Any) -> Any:
        # Tabular exports (parquet, CSV) flatten `base: {sha}` into a `base.sha` column.
        if isinstance(data, dict) and "base" not in data and "base.sha" in data:
            return {**data, "base": {"sha": data["base.sha"]}}
        return data

    @field_validator("f2p_tests", "p2p_tests", "s2p_tests", "n2p_tests", mode="before")
    @classmethod
    def _test_names(cls, value: Any) -> Any:
        # Published as mappings keyed by test name; some copies encode them as JSON strings
        # or keep only the names as a list.
        value = json_encoded(value, "a mapping keyed by test name")
        if isinstance(value, list) and all(isinstance(name, str) for name in value):
            return dict.fromkeys(value, {})
        return value

    @property
    def language_named(self) -> str:
        return self.lang or self.language

    @property
    def name(self) -> str:
        """The instance's id: the row's own, else the harness's `<org>__<repo>-<number>`."""
        return self.instance_id or f"{self.org}__{self.repo}-{self.number}"


def row_kind(data: dict[str, Any]) -> str:
    """Which benchmark a row comes from, by the fields only it has (Multi-SWE-bench's: the
    repository's owner in `org` and the pull request's `number`)."""
    if "expected_output_json" in data and "FAIL_TO_PASS" not in data:
        return "r2e-gym"
    if "dockerhub_tag" in data or "before_repo_set_cmd" in data or "selected_test_files_to_run" in data:
        return "swe-bench-pro"
    if {"org", "number"} <= data.keys():
        return "multi-swe-bench"
    return "swe-bench"


def row_id(data: dict[str, Any]) -> str:
    """The id a row will have, for the report (before it is validated). An R2E-Gym row has
    none of its own: its repository's short name and its commit's first 12 digits."""
    if row_kind(data) == "multi-swe-bench" and not data.get("instance_id"):
        return f"{data.get('org', '?')}__{data.get('repo', '?')}-{data.get('number', '?')}"
    if row_kind(data) == "r2e-gym" and not data.get("instance_id"):
        return f"{data.get('repo_name', '?')}__{str(data.get('commit_hash', '?'))[:12]}"
    return str(data.get("instance_id", ""))


def multi_row(data: dict[str, Any]) -> MultiRow:
    """The row validated; RowError naming the source, the field and what it must hold."""
    return validated(MultiRow, data, SOURCE, f"; give the row {PUBLISHED}")


def multi_instruction(row: MultiRow) -> str:
    """The issues the pull request resolves (title and body), else the pull request's own."""
    parts = [f"{issue.title}\n\n{issue.body or ''}".strip() for issue in row.resolved_issues]
    return "\n\n".join(p for p in parts if p) or f"{row.title}\n\n{row.body or ''}".strip()


def fail_to_pass(row: MultiRow) -> tuple[str, ...]:
    """The tests that decide the transition: f2p, and the s2p and n2p ones that pass only
    after the fix (`fixed_tests`); RowError when there are none."""
    tests = tuple(row.f2p_tests) + tuple(row.s2p_tests) + tuple(row.n2p_tests)
    if not tests:
        raise RowError("f2p_tests", f"{SOURCE} row: empty, and so are s2p_tests and n2p_tests: nothing decides "
                                    "the transition; the benchmark marks such rows invalid, leave it out")
    return tests


def swebench_fields(data: dict[str, Any]) -> dict[str, Any]:
    """A Multi-SWE-bench row as the SWE-bench fields the source route reads: `org/repo`,
    `base.sha` as base_commit, fix_patch as the patch, the deciding tests by name."""
    row = multi_row(data)
    instruction = multi_instruction(row)
    if not instruction:
        raise RowError("resolved_issues", f"{SOURCE} row: no issue text and no pull request title: the instance "
                                          "has no instruction; add resolved_issues[].title/body")
    return {
        "instance_id": row.name, "repo": f"{row.org}/{row.repo}", "base_commit": row.base.sha,
        "patch": row.fix_patch, "test_patch": row.test_patch, "FAIL_TO_PASS": fail_to_pass(row),
        "PASS_TO_PASS": tuple(row.p2p_tests), "language": row.language_named, "problem_statement": instruction,
    }
