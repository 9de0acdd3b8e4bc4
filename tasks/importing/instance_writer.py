"""The files of an imported instance (docs/benchmark-format.md): its checks under the recipe,
instance.toml, origin.toml, the issue and the diffs as they apply to its program, and the
recipe's Dockerfile (with its context folder's files), shared by the benchmark's instances as
`environments/<name>/Dockerfile`.

instance.toml is what the loader reads; origin.toml is provenance (the row, the program's
origin, the recipe, which patches were rewritten) and the test command template that
`import suites` fills with a suite's own test files. Both are dicts dumped by the one TOML
writer, so that what tomllib reads back is what was meant.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from unidiff import PatchSet

from testprism.tasks.importing.recipe import TEST_DIRS, TEST_FILES, Recipe, context_files, fill_test_files
from testprism.tasks.importing.rows import RowError, SweBenchRow
from testprism.tasks.importing.sources import ProgramOrigin
from testprism.tasks.model import toml_writer
from testprism.tasks.model.patches import touched_test_files, with_final_newline

ENVIRONMENTS = "environments"


def summary_line(problem_statement: str, limit: int = 120) -> str:
    """The first non-empty line of the issue, as the instance's one-line summary."""
    for line in problem_statement.splitlines():
        text = line.strip().lstrip("#").strip()
        if text:
            return text if len(text) <= limit else text[: limit - 1] + "…"
    return ""


@dataclass(frozen=True)
class Checks:
    """The checks of a row under its recipe."""

    command: str
    template: str  # the command with {test_files} open: suites reuse it on their own files
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    dropped: tuple[str, ...]  # deselected by the recipe


def checks_of(row: SweBenchRow, recipe: Recipe, test_patch: PatchSet) -> Checks:
    """The whole test files the test patch touches are run (SWE-bench's ids are cut at the
    first space and may name nothing), or their folders, or the listed tests by name, as the
    recipe's command says; the listed tests are kept as given, less those the recipe
    deselects, and a row with no FAIL_TO_PASS test left has nothing to decide its transition."""
    template = recipe.command_template()
    files = touched_test_files(test_patch, recipe.language)
    if not files and (TEST_FILES in template or TEST_DIRS in template):
        raise RowError("test_patch", f"touches no {recipe.language} test file to run")
    dropped = tuple(t for t in (*row.FAIL_TO_PASS, *row.PASS_TO_PASS) if recipe.deselects(t))
    f2p = tuple(t for t in row.FAIL_TO_PASS if t not in dropped)
    if not f2p:
        raise RowError("FAIL_TO_PASS", "every test is deselected by the recipe: nothing decides the transition")
    p2p = tuple(t for t in row.PASS_TO_PASS if t not in dropped)
    return Checks(fill_test_files(template, files, (*f2p, *p2p), recipe.language), template, f2p, p2p, dropped)


@dataclass(frozen=True)
class Dockerfile:
    """The recipe's Dockerfile as the benchmark holds it: `rel` under the benchmark root, and
    the files of the recipe's context that go beside it (paths relative to its folder)."""

    rel: str
    content: bytes
    context: tuple[tuple[str, bytes], ...] = ()

    @property
    def from_instance(self) -> str:
        """The path an instance's `environment.dockerfile` gives (instances/<id>/ → root)."""
        return f"../../{self.rel}"


def dockerfile_of(recipe: Recipe, recipe_file: Path, out: Path) -> Dockerfile | None:
    """The recipe's Dockerfile, to be copied to `environments/<name>/Dockerfile`. One the
    benchmark already holds with other content is refused: the instances imported with it
    would silently get a new environment."""
    path = recipe.dockerfile_path(recipe_file)
    if path is None:
        return None
    found = Dockerfile(f"{ENVIRONMENTS}/{recipe.environment_name(recipe_file)}/Dockerfile", path.read_bytes(),
                       context_files(recipe, recipe_file))
    present = out / found.rel
    if present.is_file() and present.read_bytes() != found.content:
        raise RowError("repo", f"{recipe_file}: field dockerfile: {path} differs from {present}, which instances "
                               "imported before use; give the recipe another name (field name) or move the old one")
    for name, content in found.context:
        beside = present.parent / name
        if present.is_file() and (not beside.is_file() or beside.read_bytes() != content):
            raise RowError("repo", f"{recipe_file}: field context: {name} differs from {beside}, which instances "
                                   "imported before use; give the recipe another name (field name) or move the old one")
    return found


def publish_dockerfile(out: Path, dockerfile: Dockerfile) -> None:
    """Put the Dockerfile, its context's files first, in the benchmark before the instance that
    names it (each written to a temporary file and renamed, so a reader never sees half of one;
    the Dockerfile last, so that its presence says the folder is whole)."""
    target = out / dockerfile.rel
    if target.is_file():
        return
    for name, content in (*dockerfile.context, (target.name, dockerfile.content)):
        path = target.parent / name
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        with os.fdopen(handle, "wb") as stream:
            stream.write(content)
        os.replace(temporary, path)


def instance_toml(row: SweBenchRow, source: str, recipe: Recipe, checks: Checks, dockerfile: Dockerfile | None) -> str:
    """What the loader reads; its comments say where it came from and which tests were left out.
    Only the environment fields the recipe sets are written, so that a Python recipe's
    instance (and its environment key) is what it always was."""
    environment = recipe.environment(dockerfile.from_instance if dockerfile else None).as_table()
    comments = [f"Imported by `testprism import swebench` from {row.repo} at {row.base_commit}"
                f"{f' (version {row.version})' if row.version else ''}; provenance in origin.toml."]
    if checks.dropped:
        comments.append(f"Left out of the checks, deselected by the recipe: {', '.join(checks.dropped)}")
    document = {
        "id": row.instance_id,
        "source": source,
        "language": recipe.language,
        "summary": summary_line(row.problem_statement),
        "program": {"path": "program"},
        "environment": environment,
    }
    if recipe.build is not None:
        document["build"] = {"command": recipe.build.command, "timeout_s": recipe.build.timeout_s}
    document["checks"] = {
        "patch": "checks.diff",
        "command": checks.command,
        "fail_to_pass": list(checks.fail_to_pass),
        "pass_to_pass": list(checks.pass_to_pass),
    }
    if recipe.parser is not None:
        document["checks"]["parser"] = recipe.parser
    return toml_writer.dumps(document, comments)


def origin_toml(row: SweBenchRow, origin: ProgramOrigin, recipe_file: Path, checks: Checks,
                rewritten: list[str], record: str) -> str:
    """Provenance, and the test command template that `import suites` fills with a suite's
    own test files. The loader does not read this file."""
    document = {
        "row": record,
        "repo": row.repo,
        "base_commit": row.base_commit,
        "version": row.version,
        "program": origin.describe(row),
        "recipe": str(recipe_file),
        "test_command": checks.template,
        "rewritten_patches": rewritten,
    }
    return toml_writer.dumps(document, ["Where this instance came from (testprism import swebench). Not read by the loader."])


def write_instance(folder: Path, row: SweBenchRow, fitted: tuple[str, str], *, source: str, recipe: Recipe,
                   recipe_file: Path, checks: Checks, origin: ProgramOrigin, record: str,
                   dockerfile: Dockerfile | None = None) -> None:
    """Write the instance beside its program in `folder`: each diff as it applies to the
    program (`fitted`: reference, checks), the published text kept beside one that had to be
    rewritten, the issue, instance.toml and origin.toml; and the Dockerfile, with its context's
    files, where the instance finds it (`folder` is `<root>/instances/<id>` in the staging area too)."""
    if dockerfile is not None:  # with its context: --verify builds the environment from there
        publish_dockerfile(folder.parent.parent, dockerfile)
    rewritten: list[str] = []
    for name, published, text in (("reference", row.patch, fitted[0]), ("checks", row.test_patch, fitted[1])):
        (folder / f"{name}.diff").write_text(text, encoding="utf-8", errors="surrogateescape")
        if text != with_final_newline(published):
            (folder / f"{name}.published.diff").write_text(published, encoding="utf-8")
            rewritten.append(name)
    (folder / "instruction.md").write_text(with_final_newline(row.problem_statement), encoding="utf-8")
    (folder / "instance.toml").write_text(instance_toml(row, source, recipe, checks, dockerfile), encoding="utf-8")
    (folder / "origin.toml").write_text(
        origin_toml(row, origin, recipe_file, checks, rewritten, record), encoding="utf-8")
