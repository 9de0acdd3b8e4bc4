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

import logging
import re
import shutil
import subprocess
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from testprism.tasks.importing.fitting import Scratch
from testprism.tasks.importing.recipe import fill_test_files
from testprism.tasks.importing.rows import (
    ImportReport,
    Issue,
    Record,
    RowError,
    read_records,
    validated,
)
from testprism.tasks.importing.staging import staged
from testprism.tasks.model import patches, toml_writer
from testprism.tasks.model.benchmark import (
    CONFIGURATION,
    BenchmarkError,
    Instance,
    load_instance,
)
from testprism.tasks.model.benchmark_format import NAME
from testprism.tasks.model.hashing import digest
from testprism.tasks.model.patch_fuzz import DEFAULT_FUZZ
from testprism.tasks.model.pytest_ids import find_test_functions
from testprism.tasks.model.workdir import WorkPaths, default_work_root
from testprism.tasks.sandbox.base import SandboxError
from testprism.tasks.sandbox.environment import EnvironmentBuildError
from testprism.tasks.sandbox.image.binding import bind_instance
from testprism.tasks.sandbox.warm_admission import pytest_command

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


def exec_form(command: str) -> str:
    """A plain `[NAME=value ...] python -m pytest ...` as bash's last act (`NAME=value exec
    python ...`): the interpreter is then the run's second process as in the bundled suites'
    scripts, and `replay --warm` can clone it (tasks/sandbox/warm_admission.py `script_command`). Any
    other command is left as it is."""
    parsed = pytest_command(command)
    if parsed is None:
        return command
    words = command.split()  # no quote, expansion or operator (pytest_command): one word a word
    return " ".join([*words[:len(parsed.assignments)], "exec", *words[len(parsed.assignments):]])


class Prediction(BaseModel):
    """A row of a prediction file; `model_patch` is a test patch here."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    instance_id: str = Field(pattern=NAME)
    model_name_or_path: str = ""
    model_patch: str = Field(min_length=1)


def configuration_name(model: str) -> str:
    """The configuration folder of a `model_name_or_path`, injective so that two models never
    share a folder (the second one's suites would be skipped as "already present").

    A name whose only change is `/` → `__` stays readable as it is (`copilot-basic/gpt-5-mini`
    → `copilot-basic__gpt-5-mini`): turning `__` back into `/` gives the model again, so no
    other model has that folder. Any other name is made safe and suffixed with a short hash of
    the whole original (`otter(GPT-4o)` → `otter__GPT-4o-<hash>`, `otter++(GPT-4o)` →
    `otter++__GPT-4o-<hash>`). A hash collision is not ruled out; `Owners` refuses it."""
    plain = model.replace("/", "__")
    if re.fullmatch(CONFIGURATION, plain) and plain.replace("__", "/") == model:
        return plain
    safe = re.sub(r"[^A-Za-z0-9_.+-]+", "__", model).strip("_.")
    if not re.search(r"[A-Za-z0-9]", safe):
        raise RowError("model_name_or_path", f"{model!r} gives no usable configuration name; pass --configuration")
    return f"{safe}-{digest('configuration', model)[:8]}"


def checked_configuration(name: str) -> str:
    """`--configuration` as given: it is used as the folder name, so it must be one."""
    if not re.fullmatch(CONFIGURATION, name):
        raise ValueError(f"{name!r} is not a configuration name: letters, digits and _ . + - only, not . or ..")
    return name


def recorded_owner(folder: Path) -> tuple[str, str] | None:
    """The model a configuration folder's suites were imported from and where that is
    written, or None when no suite.toml there records one (suites written by hand, with
    `--configuration`, or by an older testprism)."""
    for path in sorted(folder.glob("*/suite.toml")):
        try:
            model = tomllib.loads(path.read_text(encoding="utf-8")).get("model_name_or_path")
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue  # load_benchmark names a malformed suite.toml; it records no owner here
        if isinstance(model, str) and model:
            return model, f"{path}: field model_name_or_path"
    return None


@dataclass
class Owners:
    """Which model each configuration folder belongs to: the one a suite already there
    records, else the first row that names the folder. A row of another model that maps to
    the same folder is refused, naming both, rather than merged into it."""

    suites: Path
    known: dict[str, tuple[str, str]] = field(default_factory=dict)  # folder → (model, where seen)

    def folder_of(self, model: str, where: str) -> str:
        name = configuration_name(model)
        if name not in self.known:
            self.known[name] = recorded_owner(self.suites / name) or (model, where)
        owner, seen = self.known[name]
        if owner != model:
            raise RowError("model_name_or_path", f"{model!r} maps to configuration folder {name!r}, which holds "
                                                 f"{owner!r} ({seen}); import one of them with --configuration")
        return name


# -- which tests the patch adds or changes -------------------------------------------------


def selected_tests(program: Path, patch: str) -> list[str]:
    """Node ids (`path::Class::test`) of the test functions whose lines the patch adds or
    changes, read from the patch as it really applies to the program (offsets and fuzz
    included). Raises RowError when it does not apply or a touched file does not parse."""
    parsed = patches.parse(patch)
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
        exact = patches.parse(scratch.diff())
        test_files = patches.touched_test_files(exact)
        tests: list[str] = []
        for patched in exact:
            if patched.path not in test_files:
                continue
            text = (tree / patched.path).read_text(encoding="utf-8", errors="replace")
            try:
                functions = find_test_functions(text)
            except SyntaxError as exc:
                raise RowError("model_patch", f"{patched.path} does not parse after the patch: {exc}") from exc
            lines = patches.changed_lines(patched, removals="previous")
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


def program_of(instance: Instance) -> Path:
    """The instance's program on this host: an image instance's read out of its image (an
    engine needed, only here: a suite of scope "files" never reads it). RowError when the
    image cannot be had."""
    if instance.spec.environment.image is None:
        return instance.program
    try:
        return bind_instance(instance, WorkPaths(default_work_root())).program
    except (EnvironmentBuildError, SandboxError) as exc:
        raise RowError("instance_id", f"the program of {instance.id} cannot be read out of its image: {exc}") from exc


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


def suite_toml(record: Record, owner: str | None, scope: Scope, tests: list[str]) -> str:
    """`owner` is the model the configuration folder is named after (None with --configuration)."""
    comments = [f"Imported by `testprism import suites` from {record.label}."]
    document: dict[str, object] = {"patch": "test.diff"}
    if owner is not None:
        document["model_name_or_path"] = owner
    if scope == "tests":
        comments.append('scope = "tests": only the tests this suite\'s patch adds or changes decide its verdict.')
        document["tests"] = tests
    else:
        comments.append('scope = "files": every test of the files the patch touches decides its verdict.')
    return toml_writer.dumps(document, comments)


def prediction(record: Record) -> Prediction:
    """The row, validated before anything depends on it: its configuration folder is known
    only once `model_name_or_path` is known to be a string."""
    assert record.data is not None
    return validated(Prediction, record.data)


def import_prediction(record: Record, row: Prediction, name: str, out: Path, targets: dict[str, Target], *,
                      owner: str | None, scope: Scope, overwrite: bool, command: str | None) -> tuple[str, list[Issue]]:
    """Write one suite package into configuration `name`; returns `name/instance_id` and caveats."""
    if row.instance_id not in targets:
        targets[row.instance_id] = find_target(out, row.instance_id, command)
    target = targets[row.instance_id]
    patch = patches.with_final_newline(row.model_patch)
    files = patches.touched_test_files(patches.parse_field(patch, "model_patch"))
    if not files:
        raise RowError("model_patch", "touches no Python test file: nothing to run")
    caveats: list[Issue] = []
    tests: list[str] = []
    chosen = scope
    if scope == "tests":
        try:
            tests = selected_tests(program_of(target.instance), patch)
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
        # `{tests}` in the command: the tests that decide (scope "tests"), so only they run
        script = RUN_TESTS.format(command=exec_form(fill_test_files(target.template, files, tests)))
        (folder / "run_tests.sh").write_text(script, encoding="utf-8")
        (folder / "run_tests.sh").chmod(0o755)
        (folder / "suite.toml").write_text(suite_toml(record, owner, chosen, tests), encoding="utf-8")
    log.info("suite %s/%s: %s", name, row.instance_id, f"{len(tests)} selected tests" if tests else f"scope {chosen}")
    return f"{name}/{row.instance_id}", caveats


def import_suites(predictions: Path, out: Path, *, configuration: str | None = None, scope: Scope = "tests",
                  overwrite: bool = False, command: str | None = None) -> ImportReport:
    """Import every row of a prediction file as a suite of the benchmark at `out` (whose
    instances must be there already). A bad row is an issue; the others go on. Each row goes
    to the folder of its model (`configuration_name`), or all to `configuration`; a row whose
    model maps to a folder another model already holds is an issue naming both rows."""
    if configuration is not None:
        checked_configuration(configuration)
    if not (out / "instances").is_dir():
        raise BenchmarkError(out / "instances", "(folder)", "missing: import the instances first (import swebench)")
    report = ImportReport()
    targets: dict[str, Target] = {}
    owners = Owners(out / "suites")
    seen: set[str] = set()
    for record in read_records(predictions):
        if record.data is None:
            report.issues.append(Issue(record.label, "", "(row)", record.error))
            continue
        instance_id = str(record.data.get("instance_id", ""))
        try:
            row = prediction(record)
            if not configuration and not row.model_name_or_path:
                raise RowError("model_name_or_path", "missing: pass --configuration")
            name = configuration or owners.folder_of(row.model_name_or_path, f"{record.label}: field model_name_or_path")
            key = f"{name}/{row.instance_id}"
            if key in seen:
                raise RowError("instance_id", f"a second suite for {key} in the file; kept the first")
            seen.add(key)
            if (out / "suites" / key).exists() and not overwrite:
                report.existing.append(key)
                continue
            done, caveats = import_prediction(record, row, name, out, targets,
                                              owner=None if configuration else row.model_name_or_path, scope=scope,
                                              overwrite=overwrite, command=command)
        except (RowError, patches.DiffError) as exc:
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
