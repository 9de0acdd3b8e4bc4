"""Suites from test patches: prediction files (SWT-bench / TDD-Bench style) whose
`model_patch` adds or edits test files become suite packages (docs/benchmark-format.md).

A package holds the patch (`test.diff`, named by suite.toml's `patch`, which the harness
applies to each state as it applies every patch) and a `run_tests.sh` that runs the
instance's test command on the files it touches. A test patch drags the
old tests of those files along, and a suite must not be credited or blamed for them: by
default the tests that decide are those whose lines the patch adds or changes, found by
applying the patch to the program and reading the result with unidiff and ast (`scope =
"tests"`); `scope = "files"` lets every test of the touched files decide.
"""

from __future__ import annotations

import ast
import logging
import re
import shutil
import subprocess
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from unidiff import PatchSet

from testprism.tasks.benchmark import NAME, BenchmarkError, Instance, load_instance
from testprism.tasks.recipe import fill_test_files
from testprism.tasks.state import DEFAULT_FUZZ
from testprism.tasks.swebench import (
    ImportReport,
    Issue,
    Record,
    RowError,
    Scratch,
    parse_diff,
    read_records,
    staged,
    toml_list,
    toml_string,
    touched_test_files,
    validation_field,
    with_final_newline,
)

log = logging.getLogger(__name__)

Scope = Literal["tests", "files"]
RUN_TESTS = """\
#!/usr/bin/env bash
# Written by `testprism import suites`: run the instance's test command on the files this
# suite's test patch touches. The harness applies the patch (suite.toml `patch`) before
# this runs; a state it does not apply to is E/suite_not_installed, not a rejection.
set -u
{command}
"""


class Prediction(BaseModel):
    """A row of a prediction file; `model_patch` is a test patch here."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    instance_id: str = Field(pattern=NAME)
    model_name_or_path: str = ""
    model_patch: str = Field(min_length=1)


def configuration_name(model: str) -> str:
    """A configuration folder name from `model_name_or_path`, which may hold slashes
    (`copilot-basic/gpt-5-mini` → `copilot-basic__gpt-5-mini`)."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "__", model.strip()).strip("_")
    if not name or set(name) == {"."}:
        raise RowError("model_name_or_path", f"{model!r} gives no usable configuration name; pass --configuration")
    return name


# -- which tests the patch adds or changes -------------------------------------------------


def changed_lines(patched) -> set[int]:
    """Lines of the patched file that a file diff adds, or next to which it removes lines."""
    lines: set[int] = set()
    for hunk in patched:
        last_target = max(hunk.target_start - 1, 1)
        for line in hunk:
            if line.is_added:
                lines.add(line.target_line_no)
            elif line.is_removed:
                lines.add(last_target)
            if line.target_line_no is not None:
                last_target = line.target_line_no
    return lines


def find_test_functions(source: str) -> list[tuple[str, int, int]]:
    """(qualified name, first line, last line) of the test functions pytest collects by
    default: `test*` functions at module level and in classes named `Test*` or derived from
    a base (unittest.TestCase). Decorators count as part of the function."""
    found: list[tuple[str, int, int]] = []

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                found.append((prefix + node.name, first, node.end_lineno or node.lineno))
            elif isinstance(node, ast.ClassDef) and (node.name.startswith("Test") or node.bases):
                visit(node.body, f"{prefix}{node.name}::")

    visit(ast.parse(source).body, "")
    return found


def selected_tests(program: Path, patch: str) -> list[str]:
    """Node ids (`path::Class::test`) of the test functions whose lines the patch adds or
    changes, read from the patch as it really applies to the program (offsets and fuzz
    included). Raises RowError when it does not apply or a touched file does not parse."""
    parsed = PatchSet(patch)
    scratch_root = Path(tempfile.mkdtemp(prefix="suite-"))
    try:
        tree = scratch_root / "program"
        tree.mkdir()
        for patched in parsed:  # only the files the patch touches: the patch needs no more
            source = program / patched.path
            if source.is_file():
                (tree / patched.path).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, tree / patched.path)
        scratch = Scratch(tree)
        scratch.apply(patch, "model_patch", DEFAULT_FUZZ)
        exact = PatchSet(scratch.diff())
        test_files = touched_test_files(exact)
        tests: list[str] = []
        for patched in exact:
            if patched.path not in test_files:
                continue
            text = (tree / patched.path).read_text(encoding="utf-8", errors="replace")
            try:
                functions = find_test_functions(text)
            except SyntaxError as exc:
                raise RowError("model_patch", f"{patched.path} does not parse after the patch: {exc}") from exc
            lines = changed_lines(patched)
            tests += [f"{patched.path}::{name}" for name, first, last in functions
                      if any(first <= n <= last for n in lines)]
        return sorted(set(tests))
    finally:
        shutil.rmtree(scratch_root, ignore_errors=True)


# -- writing a suite ------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """An instance a suite is for: its program and its test command with {test_files} open."""

    instance: Instance
    template: str


def find_target(out: Path, instance_id: str, command: str | None) -> Target:
    folder = out / "instances" / instance_id
    if not folder.is_dir():
        raise RowError("instance_id", f"no instance {instance_id} in {out}: import the instance first")
    try:
        instance = load_instance(folder)
    except BenchmarkError as exc:
        raise RowError("instance_id", f"instance {instance_id} does not load: {exc}") from exc
    if command:
        return Target(instance, command)
    origin = folder / "origin.toml"
    try:
        template = tomllib.loads(origin.read_text(encoding="utf-8")).get("test_command", "")
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise RowError("instance_id", f"no test command for {instance_id}: {origin} is unreadable ({exc}); "
                                      "pass --command") from exc
    if "{test_files}" not in template:
        raise RowError("instance_id", f"{origin}: field test_command: missing or without {{test_files}}; pass --command")
    return Target(instance, template)


def suite_toml(record: Record, model: str, scope: Scope, tests: list[str]) -> str:
    lines = [f"# Imported by `testprism import suites` from {record.label} (model_name_or_path {toml_string(model)}).",
             'patch = "test.diff"']
    if scope == "tests":
        lines += ['# scope = "tests": only the tests this suite\'s patch adds or changes decide its verdict.',
                  f"tests = {toml_list(tests)}"]
    else:
        lines.append('# scope = "files": every test of the files the patch touches decides its verdict.')
    return "\n".join(lines) + "\n"


def import_prediction(record: Record, out: Path, targets: dict[str, Target], *, configuration: str | None,
                      scope: Scope, overwrite: bool, command: str | None) -> tuple[str, list[Issue]]:
    """Write one suite package; returns its `configuration/instance_id` and caveats."""
    assert record.data is not None
    try:
        row = Prediction.model_validate(record.data)
    except ValidationError as exc:
        raise RowError(*validation_field(exc)) from exc
    if not configuration and not row.model_name_or_path:
        raise RowError("model_name_or_path", "missing: pass --configuration")
    name = configuration_name(configuration or row.model_name_or_path)
    if row.instance_id not in targets:
        targets[row.instance_id] = find_target(out, row.instance_id, command)
    target = targets[row.instance_id]
    patch = with_final_newline(row.model_patch)
    files = touched_test_files(parse_diff(patch, "model_patch"))
    if not files:
        raise RowError("model_patch", "touches no Python test file: nothing to run")
    caveats: list[Issue] = []
    tests: list[str] = []
    chosen = scope
    if scope == "tests":
        try:
            tests = selected_tests(target.instance.program, patch)
        except RowError as exc:
            caveats.append(Issue(record.label, row.instance_id, exc.field,
                                 f"{exc}; imported with scope files (it will fail on the states it does not fit)",
                                 fatal=False))
            chosen = "files"
        if chosen == "tests" and not tests:
            caveats.append(Issue(record.label, row.instance_id, "model_patch",
                                 "adds or changes no test function; imported with scope files", fatal=False))
            chosen = "files"
    final = out / "suites" / name / row.instance_id
    with staged(out, final, overwrite=overwrite) as folder:
        folder.mkdir()
        (folder / "test.diff").write_text(patch, encoding="utf-8")
        script = RUN_TESTS.format(command=fill_test_files(target.template, files))
        (folder / "run_tests.sh").write_text(script, encoding="utf-8")
        (folder / "run_tests.sh").chmod(0o755)
        (folder / "suite.toml").write_text(suite_toml(record, row.model_name_or_path, chosen, tests), encoding="utf-8")
    log.info("suite %s/%s: %s", name, row.instance_id, f"{len(tests)} selected tests" if tests else f"scope {chosen}")
    return f"{name}/{row.instance_id}", caveats


def import_suites(predictions: Path, out: Path, *, configuration: str | None = None, scope: Scope = "tests",
                  overwrite: bool = False, command: str | None = None) -> ImportReport:
    """Import every row of a prediction file as a suite of the benchmark at `out` (whose
    instances must be there already). A bad row is an issue; the others go on."""
    report = ImportReport()
    targets: dict[str, Target] = {}
    seen: set[str] = set()
    for record in read_records(predictions):
        if record.data is None:
            report.issues.append(Issue(record.label, "", "(row)", record.error))
            continue
        instance_id = str(record.data.get("instance_id", ""))
        model = configuration or str(record.data.get("model_name_or_path", ""))
        try:
            key = f"{configuration_name(model)}/{instance_id}" if model else ""
            if key and key in seen:
                raise RowError("instance_id", f"a second suite for {key} in the file; kept the first")
            seen.add(key)
            final = out / "suites" / key
            if key and final.exists() and not overwrite:
                report.existing.append(key)
                continue
            done, caveats = import_prediction(record, out, targets, configuration=configuration, scope=scope,
                                              overwrite=overwrite, command=command)
        except RowError as exc:
            issue = Issue(record.label, instance_id, exc.field, str(exc))
        except (OSError, subprocess.SubprocessError) as exc:
            issue = Issue(record.label, instance_id, "(import)", f"{type(exc).__name__}: {exc}")
        else:
            for caveat in caveats:
                log.warning("%s", caveat)
            report.issues += caveats
            report.imported.append(done)
            continue
        log.error("%s", issue)
        report.issues.append(issue)
    return report
