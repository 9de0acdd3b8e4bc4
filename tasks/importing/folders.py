"""What the folder adapters (`harbor`, `exercises`) share: an instance assembled from a
task's own files rather than read from a published row.

Such sources hold whole files (a program, a solution, test modules), not diffs, so the
reference and the checks are made here as the exact diffs git writes for those edits
(`edit_diff`, over the `fitting.Scratch` repository the SWE-bench importer uses), the
official checks are every test pytest would collect in the test modules (`pytest_checks`,
read from the syntax tree by `suite_import.find_test_functions`), and the written
instance is loaded and its patches applied once before it is renamed into place
(`write_authored`, inside `staging.staged`). A task that does not fit is an Issue naming
the task and the file at fault (`import_each`), and the rest of the batch goes on.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from testprism.tasks.importing.fitting import Scratch
from testprism.tasks.importing.recipe import fill_test_files
from testprism.tasks.importing.rows import ImportReport, RowError
from testprism.tasks.importing.suite_import import find_test_functions
from testprism.tasks.model import toml_writer
from testprism.tasks.model.benchmark import BenchmarkError, Instance, load_instance
from testprism.tasks.model.benchmark_format import NAME
from testprism.tasks.model.patches import with_final_newline
from testprism.tasks.model.state import apply_patch

#: the checks' command: the test modules are run whole, their report read back as JUnit
PYTEST_TEMPLATE = "python -m pytest -q -p no:cacheprovider {test_files} --junitxml=$TESTPRISM_JUNIT"
#: what every authored instance's environment installs (a task may add its own requirements)
PYTEST_PACKAGES = ("pytest>=8,<10",)


def instance_folder(out: Path, instance_id: str, field: str) -> Path:
    """`out/instances/<instance_id>`, once the id is checked: it names a folder (RowError
    naming `field`, the part of the task the id comes from)."""
    if not re.fullmatch(NAME, instance_id):
        raise RowError(field, f"{instance_id!r} is not an instance id ([A-Za-z0-9_.-]+)")
    return out / "instances" / instance_id


def regular_files(folder: Path, field: str) -> list[str]:
    """The files under `folder` as sorted relative POSIX paths. A symbolic link anywhere is
    refused (RowError naming `field`): the importer runs with the user's rights, and copying
    through a link would put whatever it points at into the benchmark or the sandbox."""
    found: list[str] = []
    for path in sorted(folder.rglob("*")):
        if path.is_symlink():
            raise RowError(field, f"{path.relative_to(folder).as_posix()} is a symbolic link: not imported")
        if path.is_file():
            found.append(path.relative_to(folder).as_posix())
    return found


def copy_files(source: Path, files: Mapping[str, str], target: Path) -> None:
    """Copy `source/<from>` to `target/<to>` for each `to → from` of `files`."""
    for to, origin in files.items():
        (target / to).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / origin, target / to)


def edit_diff(program: Path, files: Mapping[str, bytes]) -> str:
    """The exact diff (a/ b/ prefixes, paths relative to the program) that writes `files`
    (relative path → content) over `program`, as git writes it in a scratch copy."""
    with tempfile.TemporaryDirectory(prefix="testprism-authored-") as scratch:
        tree = Path(scratch) / "program"
        shutil.copytree(program, tree, symlinks=True)
        repository = Scratch(tree)
        for rel, data in files.items():
            (tree / rel).parent.mkdir(parents=True, exist_ok=True)
            (tree / rel).write_bytes(data)
        return repository.diff()


def is_pytest_file(path: str) -> bool:
    """pytest's default `python_files`: `test_*.py` or `*_test.py` (a conftest.py or a helper
    module beside them is shipped with the checks but decides nothing)."""
    name = PurePosixPath(path)
    return name.suffix == ".py" and (name.name.startswith("test_") or name.stem.endswith("_test"))


@dataclass(frozen=True)
class PytestChecks:
    """The official checks of an authored instance: whole test modules, every test of them."""

    files: tuple[str, ...]  #: test modules, relative to the program root
    fail_to_pass: tuple[str, ...]

    @property
    def command(self) -> str:
        return fill_test_files(PYTEST_TEMPLATE, list(self.files))

    def table(self) -> dict[str, object]:
        """`[checks]` of the instance (but its patch)."""
        return {"command": self.command, "fail_to_pass": list(self.fail_to_pass), "pass_to_pass": []}


def python_environment(packages: tuple[str, ...]) -> dict[str, object]:
    """`[environment]` of an authored Python instance: Python 3.11 and `packages`."""
    return {"python": "3.11", "packages": list(packages)}


def pytest_checks(modules: Mapping[str, str], field: str) -> PytestChecks:
    """Every test of the pytest modules (path relative to the program → text) as a
    fail-to-pass check, node ids `file::function` or `file::Class::method`. Raises RowError
    naming `field` when a module does not parse or none holds a test."""
    ids: list[str] = []
    for rel, text in sorted(modules.items()):
        try:
            ids += [f"{rel}::{name}" for name, _, _ in find_test_functions(text)]
        except SyntaxError as exc:
            raise RowError(field, f"{rel} does not parse: {exc}") from exc
    if not ids:
        raise RowError(field, f"{', '.join(sorted(modules))}: no test function pytest would collect")
    return PytestChecks(tuple(sorted(modules)), tuple(ids))


@dataclass(frozen=True)
class Authored:
    """Everything of an instance but its program, which the adapter has written already."""

    instance_id: str
    source: str
    summary: str
    instruction: str
    reference: str
    checks_diff: str
    checks: Mapping[str, object]  #: `[checks]` but its patch (PytestChecks.table, or a verifier's)
    environment: Mapping[str, object]  #: `[environment]` (python_environment, or a Dockerfile's)
    origin: Mapping[str, object]  #: provenance for origin.toml (`test_command` is added)
    made_by: str  #: the command, for the files' first comment line
    limits: Mapping[str, object] | None = None  #: `[limits]`, the instance's own run limits
    language: str = "python"  #: the instance's language (an exercise's; a Harbor task's, named by language.py)


def write_authored(folder: Path, authored: Authored) -> Instance:
    """Write the instance's files beside `folder/program`, load it as the loader will, and
    apply its reference then its checks to a copy of the program: an instance that does not
    load or whose patches do not apply is refused here (RowError), not at its first replay.

    origin.toml records the test command template, so that `import suites` can run a
    suite's own test files as this instance's checks are run."""
    (folder / "instruction.md").write_text(with_final_newline(authored.instruction), encoding="utf-8")
    (folder / "reference.diff").write_text(authored.reference, encoding="utf-8", errors="surrogateescape")
    (folder / "checks.diff").write_text(authored.checks_diff, encoding="utf-8", errors="surrogateescape")
    document = {
        "id": authored.instance_id,
        "source": authored.source,
        "language": authored.language,
        "summary": authored.summary,
        "program": {"path": "program"},
        "environment": dict(authored.environment),
        **({"limits": dict(authored.limits)} if authored.limits else {}),
        "checks": {"patch": "checks.diff", **authored.checks},
    }
    (folder / "instance.toml").write_text(
        toml_writer.dumps(document, [f"Imported by `{authored.made_by}`; provenance in origin.toml."]), encoding="utf-8")
    (folder / "origin.toml").write_text(toml_writer.dumps(
        {**authored.origin, "test_command": PYTEST_TEMPLATE},
        [f"Where this instance came from ({authored.made_by}). Not read by the loader."]), encoding="utf-8")
    try:
        instance = load_instance(folder)
    except BenchmarkError as exc:
        raise RowError(exc.field, f"the written instance does not load: {exc}") from exc
    with tempfile.TemporaryDirectory(prefix="testprism-authored-") as scratch:
        tree = Path(scratch) / "program"
        shutil.copytree(instance.program, tree, symlinks=True)
        for name, patch in (("reference.diff", instance.reference), ("checks.diff", instance.checks_patch)):
            applied = apply_patch(tree, patch, fuzz=0)
            if not applied.applied:
                raise RowError(name, f"does not apply to the program (after the reference for the checks): "
                                     f"{applied.message.strip()[-600:]}")
    return instance


def import_each(tasks: Iterable[tuple[str, str, Callable[[], str]]]) -> ImportReport:
    """Each task's import (label, instance id, a call returning `imported` or `exists`), one
    after the other: a task that fails is an issue naming it and the field at fault."""
    report = ImportReport()
    for label, instance_id, run in tasks:
        report.attempt(label, instance_id, run)
    return report
