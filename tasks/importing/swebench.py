"""Import SWE-bench rows as benchmark instances (docs/benchmark-format.md, docs/swebench.md).

A row names a repository and a commit; the program is that commit's tree, exported from a
local clone, or a source release folder standing in for it. Real rows are messy (README of
the real data): list fields JSON-encoded as strings, patches that apply only with fuzz to a
release, test ids cut at the first space. So every row is checked on its own, a bad row is an
issue naming the row and the field while the rest of the batch goes on, and an instance is
built in a staging folder and renamed into place only when whole.

The helpers for diffs and staging here are shared with `suite_import` (the prediction files
it reads are SWE-bench files too).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import tempfile
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from testprism.tasks.model import patches, toml_writer
from testprism.tasks.model.benchmark import NAME, BenchmarkError, Instance, load_instance
from testprism.tasks.sandbox.environment import EnvironmentBuildError
from testprism.tasks.execution.junit import parse_junit, select
from testprism.tasks.importing.recipe import NoRecipe, Recipe, RecipeBook, fill_test_files
from testprism.tasks.sandbox.base import Limits, RunRequest, SandboxBackend, SandboxError, SuiteNotInstalled
from testprism.tasks.model.state import apply_patch, materialise, states_of
from testprism.tasks.model.workdir import WorkPaths

log = logging.getLogger(__name__)

STAGING = ".staging"
DEFAULT_FUZZ = 5  # SWE-bench's own fallback is `patch --fuzz=5`


class RowError(ValueError):
    """One row cannot be imported; `field` is the row's field at fault."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(message)


@dataclass(frozen=True)
class Issue:
    """Why one row was not imported (or was imported with a caveat, when `fatal` is False)."""

    row: str  # file:line, or file[index] for a JSON list
    instance_id: str
    field: str
    message: str
    fatal: bool = True

    def __str__(self) -> str:
        return f"{self.row} ({self.instance_id or '?'}): field {self.field}: {self.message}"


@dataclass
class ImportReport:
    """What a batch did: the ids written, the ids already present, and every issue."""

    imported: list[str] = field(default_factory=list)
    existing: list[str] = field(default_factory=list)
    issues: list[Issue] = field(default_factory=list)

    @property
    def failed(self) -> list[Issue]:
        return [i for i in self.issues if i.fatal]


# -- reading rows ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Record:
    """A row of a file, or why it could not be read as a JSON object."""

    label: str
    data: dict[str, Any] | None
    error: str = ""


def read_records(path: Path) -> Iterator[Record]:
    """Rows of a JSON Lines file or of a JSON list (as published on both forms). A line that
    is not JSON is a record with an error, so the lines after it are still read."""
    text = path.read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as exc:
            yield Record(f"{path.name}", None, f"not a JSON list: {exc}")
            return
        for index, item in enumerate(items):
            label = f"{path.name}[{index}]"
            yield Record(label, item, "") if isinstance(item, dict) else Record(label, None, "not a JSON object")
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        label = f"{path.name}:{number}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            yield Record(label, None, f"not JSON: {exc}")
            continue
        yield Record(label, item, "") if isinstance(item, dict) else Record(label, None, "not a JSON object")


def validation_field(exc: ValidationError) -> tuple[str, str]:
    """The first failing field of a pydantic error and its message."""
    first = exc.errors()[0]
    return ".".join(str(p) for p in first["loc"]) or "(row)", first["msg"]


class SweBenchRow(BaseModel):
    """The fields of a SWE-bench row this importer uses; others are ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    instance_id: str = Field(pattern=NAME)
    repo: str = Field(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
    base_commit: str = Field(pattern=r"^[0-9a-fA-F]{7,40}$")
    patch: str
    test_patch: str
    FAIL_TO_PASS: tuple[str, ...] = Field(min_length=1)
    PASS_TO_PASS: tuple[str, ...]
    version: str = ""
    problem_statement: str = Field(min_length=1)  # hints_text is left out: comments often hold the fix

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", mode="before")
    @classmethod
    def _json_list(cls, value: Any) -> Any:
        # Published SWE-bench files hold these lists as JSON-encoded strings.
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                raise ValueError(f"neither a list nor a JSON-encoded list: {exc}") from exc
        return value

    @field_validator("version", mode="before")
    @classmethod
    def _version_text(cls, value: Any) -> Any:
        # Some copies store 0.2 or 1.1 as numbers.
        return str(value) if isinstance(value, int | float) else value


# -- diffs ----------------------------------------------------------------------------------


def with_final_newline(text: str) -> str:
    """Patches published without a final newline make `git apply` say "corrupt patch"."""
    return text if text.endswith("\n") else text + "\n"


def parse_diff(text: str, field: str) -> PatchSet:
    """A unified diff with at least one file, whose paths stay inside the program."""
    try:
        parsed = patches.parse(with_final_newline(text))
    except UnidiffParseError as exc:
        raise RowError(field, f"not a unified diff: {exc}") from exc
    if not len(parsed):
        raise RowError(field, "not a unified diff: no file changes found")
    for patched in parsed:
        for name in (patched.source_file, patched.target_file):
            if patches.escapes_program(name):
                raise RowError(field, f"patch path escapes the program: {name!r}")
    return parsed


def is_test_file(path: str) -> bool:
    """Whether pytest would take `path` for a test module: `test_*.py`, `*_test.py`,
    `tests.py`, or any module under a `tests`/`test` folder. Helpers a test patch also edits
    (sympy's `testing/quality_unicode.py`, a conftest.py) are not run as tests."""
    name = PurePosixPath(path)
    if name.suffix != ".py" or name.name in ("conftest.py", "__init__.py"):
        return False
    if name.name.startswith("test_") or name.stem.endswith("_test") or name.name == "tests.py":
        return True
    return any(part in ("tests", "test") for part in name.parts[:-1])


def touched_test_files(patch: PatchSet) -> list[str]:
    """The test files a test patch adds or edits (deleted ones cannot run)."""
    return sorted({p.path for p in patch if not p.is_removed_file and is_test_file(p.path)})


# -- git ------------------------------------------------------------------------------------


def _git(args: list[str], cwd: Path, *, private: bool = False, input: bytes | None = None) -> subprocess.CompletedProcess:
    """Run git. `private` repositories are our own scratch ones: the user's configuration
    (hooks, templates, signing) must not change what they record."""
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(cwd.parent)}
    if private:
        env |= {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "testprism",
                "GIT_AUTHOR_EMAIL": "testprism@localhost", "GIT_COMMITTER_NAME": "testprism",
                "GIT_COMMITTER_EMAIL": "testprism@localhost"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, input=input, capture_output=True, timeout=600)


def _git_error(done: subprocess.CompletedProcess) -> str:
    return done.stderr.decode(errors="replace").strip()[-1000:]


def export_commit(repository: Path, commit: str, dest: Path) -> None:
    """Write the tree of `commit` into `dest` (no `.git`) with `git archive`, leaving the
    user's clone untouched."""
    found = _git(["cat-file", "-e", f"{commit}^{{commit}}"], repository)
    if found.returncode != 0:
        raise RowError("base_commit", f"{commit} is not a commit of {repository}: {_git_error(found) or 'unknown'}")
    dest.mkdir(parents=True)
    archive = subprocess.Popen(["git", "archive", "--format=tar", commit], cwd=repository,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert archive.stdout is not None
    unpack = subprocess.run(["tar", "-x", "-C", str(dest)], stdin=archive.stdout, capture_output=True)
    archive.stdout.close()
    errors = archive.stderr.read() if archive.stderr else b""
    if archive.wait() != 0 or unpack.returncode != 0:
        message = (errors + unpack.stderr).decode(errors="replace").strip()[-1000:]
        raise RowError("base_commit", f"git archive {commit} in {repository} failed: {message}")


def export_release(folder: Path, dest: Path) -> None:
    """Write a source release folder into `dest`: its last commit when it is a git repository
    (so stray build files stay out), else the folder as it is, without VCS metadata."""
    if (folder / ".git").exists():
        head = _git(["rev-parse", "--verify", "HEAD^{commit}"], folder)
        if head.returncode != 0:
            raise RowError("program", f"release folder {folder} is a git repository without a commit: {_git_error(head)}")
        export_commit(folder, head.stdout.decode().strip(), dest)
        return
    shutil.copytree(folder, dest, symlinks=True, ignore=shutil.ignore_patterns(".git", "__pycache__", "*.pyc"))


@dataclass(frozen=True)
class ProgramOrigin:
    """Where an instance's program comes from."""

    kind: str  # git | release
    path: Path

    def export(self, row: SweBenchRow, dest: Path) -> None:
        if self.kind == "git":
            export_commit(self.path, row.base_commit, dest)
        else:
            export_release(self.path, dest)

    def describe(self, row: SweBenchRow) -> str:
        if self.kind == "git":
            return f"git {self.path} at {row.base_commit}"
        return f"release folder {self.path} (standing in for {row.base_commit})"


class SourceError(ValueError):
    """A program source option is unusable (a mapping file that does not parse, say)."""


def _read_mapping(path: Path) -> dict[str, Path]:
    """A TOML or JSON table of key → folder; relative folders are relative to the file."""
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (OSError, ValueError) as exc:
        raise SourceError(f"{path}: field (syntax): not a TOML or JSON table: {exc}") from exc
    if not isinstance(data, dict):
        raise SourceError(f"{path}: field (document): must map names to folders")
    out: dict[str, Path] = {}
    for key, value in data.items():
        if not isinstance(value, str):
            raise SourceError(f"{path}: field {key}: must be a folder path (a string)")
        out[key] = (path.parent / value).resolve()
    return out


@dataclass(frozen=True)
class ProgramSources:
    """Where programs come from. Clones: a folder of clones named `owner__name` (SWE-bench's
    own naming), or a mapping file `"owner/name" = "folder"`. Releases: a folder holding one
    release folder per instance id, or a mapping file whose keys are instance ids or
    `"owner/name@version"`. A release wins over a clone for the rows it covers."""

    repos_dir: Path | None = None
    repos_map: dict[str, Path] = field(default_factory=dict)
    releases_dir: Path | None = None
    releases_map: dict[str, Path] = field(default_factory=dict)
    described: str = ""

    @classmethod
    def from_options(cls, repos: Path | None, releases: Path | None) -> ProgramSources:
        """From the `--repos` and `--releases` options: each a folder or a mapping file."""
        if repos is None and releases is None:
            raise SourceError("--repos/--releases: give a folder of clones, release folders, or a mapping file")
        for option, path in (("--repos", repos), ("--releases", releases)):
            if path is not None and not path.exists():
                raise SourceError(f"{option}: {path} does not exist")
        return cls(
            repos_dir=repos if repos is not None and repos.is_dir() else None,
            repos_map=_read_mapping(repos) if repos is not None and repos.is_file() else {},
            releases_dir=releases if releases is not None and releases.is_dir() else None,
            releases_map=_read_mapping(releases) if releases is not None and releases.is_file() else {},
            described=", ".join(str(p) for p in (repos, releases) if p is not None),
        )

    def locate(self, row: SweBenchRow) -> ProgramOrigin:
        release = self._release(row)
        if release is not None:
            return ProgramOrigin("release", release)
        if self.repos_dir is not None or self.repos_map:
            return ProgramOrigin("git", self._clone(row))
        raise RowError("instance_id", f"no release folder for {row.instance_id} (nor for {row.repo}@{row.version}) "
                                      f"in {self.described}")

    def _release(self, row: SweBenchRow) -> Path | None:
        if self.releases_dir is not None:
            folder = self.releases_dir / row.instance_id
            return folder if folder.is_dir() else None
        folder = self.releases_map.get(row.instance_id) or self.releases_map.get(f"{row.repo}@{row.version}")
        if folder is not None and not folder.is_dir():
            raise RowError("instance_id", f"release folder {folder} of {row.instance_id} is not a folder")
        return folder

    def _clone(self, row: SweBenchRow) -> Path:
        if self.repos_dir is not None:
            owner_name = row.repo.replace("/", "__")
            tried = [self.repos_dir / owner_name, self.repos_dir / f"{owner_name}.git"]
        else:
            tried = [self.repos_map[row.repo]] if row.repo in self.repos_map else []
        for path in tried:
            if path.is_dir():
                return path
        looked = ", ".join(map(str, tried)) or "no entry in the mapping file"
        raise RowError("repo", f"no local clone of {row.repo} (looked for {looked})")


# -- staging --------------------------------------------------------------------------------


@contextmanager
def staged(root: Path, final: Path, *, overwrite: bool) -> Iterator[Path]:
    """A fresh folder to build `final` in. Renamed into place when the block ends normally,
    removed when it raises, so a reader never sees a half-written folder. The staging area
    lies beside instances/ and suites/ (same file system, so the rename is atomic), where
    the loader never looks."""
    area = root / STAGING
    area.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=area))
    target = scratch / final.name
    try:
        yield target
        final.parent.mkdir(parents=True, exist_ok=True)
        if final.exists():
            if not overwrite:
                raise FileExistsError(final)
            old = scratch / ".old"
            final.rename(old)
        target.rename(final)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        try:
            area.rmdir()
        except OSError:
            pass  # another import is using it


# -- patches against the program ------------------------------------------------------------


class Scratch:
    """A throwaway git repository over a program tree, to try patches and rewrite those that
    apply only with offsets or fuzz into exact diffs, so that every consumer of the
    benchmark can apply them with a plain `git apply`."""

    def __init__(self, tree: Path) -> None:
        self.tree = tree
        commit = ["commit", "-q", "--no-verify", "--allow-empty", "-m", "program"]
        for args in (["init", "-q"], ["add", "--all", "--force", "."], commit):
            done = _git(args, tree, private=True)
            if done.returncode != 0:
                raise RowError("program", f"git {args[0]} over the program failed: {_git_error(done)}")

    def apply(self, patch: str, field: str, fuzz: int) -> str:
        """Apply; returns how (`git-apply` or `patch`). Raises when it does not apply."""
        result = apply_patch(self.tree, patch.encode(), fuzz=fuzz)
        if not result.applied:
            raise RowError(field, f"does not apply to the program (git apply, then patch --fuzz={fuzz}): "
                                  f"{result.message.strip()[-600:]}")
        return result.method

    def diff(self) -> str:
        """The exact diff of the tree against the program, as git writes it."""
        _git(["add", "--all", "--force", "."], self.tree, private=True)
        done = _git(["diff", "--cached", "--binary", "--no-renames", "--no-color", "--no-ext-diff"], self.tree, private=True)
        return done.stdout.decode("utf-8", errors="surrogateescape")

    def fit(self, patch: str, field: str, fuzz: int) -> str:
        """The patch as it applies here: the published text when `git apply` takes it, else
        the exact diff it produces."""
        if self.apply(patch, field, fuzz) == "git apply":
            return patch
        log.info("%s applies only with fuzz or offsets: stored as the exact diff it produces", field)
        return self.diff()

    def reset(self) -> None:
        _git(["reset", "-q", "--hard", "HEAD"], self.tree, private=True)
        _git(["clean", "-q", "-fdx"], self.tree, private=True)

    def remove(self) -> None:
        shutil.rmtree(self.tree / ".git")


def _files(patch: str) -> set[str]:
    return {patched.path for patched in patches.parse(patch)}


def _applies(tree: Path, patch: str) -> bool:
    return _git(["apply", "--check", "--whitespace=nowarn", "-"], tree, input=patch.encode()).returncode == 0


def fit_patches(program: Path, reference: str, checks: str, fuzz: int) -> tuple[str, str]:
    """The reference and the checks as they apply to `program`, each on its own and the
    checks over the reference: a row whose patches do not fit its program is refused here
    rather than turning every later run into `E`/patch_failed."""
    if _files(reference).isdisjoint(_files(checks)) and _applies(program, reference) and _applies(program, checks):
        return reference, checks  # the common case, without the cost of a scratch repository
    scratch = Scratch(program)
    try:
        fitted_reference = scratch.fit(reference, "patch", fuzz)
        scratch.reset()
        fitted_checks = scratch.fit(checks, "test_patch", fuzz)
        scratch.reset()
        scratch.apply(fitted_reference, "patch", 0)
        both = apply_patch(program, fitted_checks.encode())
        if not both.applied:
            raise RowError("test_patch", f"does not apply over the reference patch: {both.message.strip()[-600:]}")
        scratch.reset()
    finally:
        scratch.remove()
    return fitted_reference, fitted_checks


# -- writing an instance --------------------------------------------------------------------


def toml_string(value: str) -> str:
    """A TOML basic string, as the one TOML writer writes it."""
    return toml_writer.value(value)


def toml_list(values: tuple[str, ...] | list[str]) -> str:
    """A TOML array of strings, one a line, as the one TOML writer writes it."""
    return toml_writer.value(list(values))


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
    files = touched_test_files(test_patch)
    if not files:
        raise RowError("test_patch", "touches no Python test file to run")
    template = recipe.command_template()
    dropped = tuple(t for t in (*row.FAIL_TO_PASS, *row.PASS_TO_PASS) if recipe.deselects(t))
    f2p = tuple(t for t in row.FAIL_TO_PASS if t not in dropped)
    if not f2p:
        raise RowError("FAIL_TO_PASS", "every test is deselected by the recipe: nothing decides the transition")
    p2p = tuple(t for t in row.PASS_TO_PASS if t not in dropped)
    return Checks(fill_test_files(template, files), template, f2p, p2p, dropped)


def instance_toml(row: SweBenchRow, source: str, recipe: Recipe, checks: Checks) -> str:
    env = recipe.environment
    comments = [f"Imported by `testprism import swebench` from {row.repo} at {row.base_commit}"
                f"{f' (version {row.version})' if row.version else ''}; provenance in origin.toml."]
    if checks.dropped:
        comments.append(f"Left out of the checks, deselected by the recipe: {', '.join(checks.dropped)}")
    document = {
        "id": row.instance_id,
        "source": source,
        "language": "python",
        "summary": summary_line(row.problem_statement),
        "program": {"path": "program"},
        "environment": {"python": env.python, "packages": list(env.packages)},
        "checks": {
            "patch": "checks.diff",
            "command": checks.command,
            "fail_to_pass": list(checks.fail_to_pass),
            "pass_to_pass": list(checks.pass_to_pass),
        },
    }
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


# -- checking the transition ---------------------------------------------------------------


@dataclass(frozen=True)
class Verifier:
    """Runs an instance's checks on buggy and reference before it is accepted: the rule for
    a program that only stands in for base_commit (a source release) — every FAIL_TO_PASS
    test fails before the reference and passes after it, every PASS_TO_PASS test exists and
    passes after it."""

    backend: SandboxBackend
    work: WorkPaths
    limits: Limits = Limits(timeout_s=900.0)

    def problems(self, instance: Instance) -> list[str]:
        spec = instance.spec.checks
        environment = self.backend.prepare(instance.spec.environment)
        found: list[str] = []
        for state in (s for s in states_of(instance) if s.kind in ("buggy", "reference")):
            tree = materialise(instance, state, self.work)
            if not tree.patch.applied:
                found.append(f"{state.name}: the patch does not apply: {tree.patch.message[-300:]}")
                continue
            try:  # the checks patch applied as every patch is (tasks/sandbox/workspace.py)
                result = self.backend.run(RunRequest(
                    tree=tree.tree, suite_folder=None, suite_files=(), command=spec.command,
                    environment=environment, limits=self.limits, suite_patch=instance.checks_patch,
                ))
            except SuiteNotInstalled as exc:
                found.append(f"{state.name}: the checks patch does not apply: {str(exc)[-300:]}")
                continue
            cases = parse_junit(result.junit_xml) if result.junit_xml else None
            if result.timed_out or cases is None:
                why = "timed out" if result.timed_out else "wrote no readable JUnit report"
                found.append(f"{state.name}: the checks {why}: {result.output_tail[-600:]}")
                continue
            if state.kind == "buggy":
                passing = [t for t, o in select(cases, spec.fail_to_pass).items() if o == "passed"]
                found += [f"buggy: FAIL_TO_PASS {t} passes before the reference" for t in passing]
            else:
                outcomes = select(cases, spec.fail_to_pass + spec.pass_to_pass)
                found += [f"reference: {t} is {o}" for t, o in outcomes.items() if o != "passed"]
        return found


# -- the batch ------------------------------------------------------------------------------


def import_row(record: Record, out: Path, recipes: RecipeBook, sources: ProgramSources, source: str,
               *, overwrite: bool, fuzz: int, verifier: Verifier | None) -> str:
    """Import one row; returns `imported` or `exists`. Raises RowError naming the field."""
    assert record.data is not None
    try:
        row = SweBenchRow.model_validate(record.data)
    except ValidationError as exc:
        raise RowError(*validation_field(exc)) from exc
    final = out / "instances" / row.instance_id
    if final.exists() and not overwrite:
        return "exists"
    try:
        recipe, recipe_file = recipes.find(row.repo, row.version)
    except NoRecipe as exc:
        raise RowError(exc.field, str(exc)) from exc
    parse_diff(row.patch, "patch")
    checks = checks_of(row, recipe, parse_diff(row.test_patch, "test_patch"))
    origin = sources.locate(row)
    with staged(out, final, overwrite=overwrite) as folder:
        origin.export(row, folder / "program")
        reference, test_patch = fit_patches(folder / "program", with_final_newline(row.patch),
                                            with_final_newline(row.test_patch), fuzz)
        rewritten = []
        for name, published, fitted in (("reference", row.patch, reference), ("checks", row.test_patch, test_patch)):
            (folder / f"{name}.diff").write_text(fitted, encoding="utf-8", errors="surrogateescape")
            if fitted != with_final_newline(published):
                (folder / f"{name}.published.diff").write_text(published, encoding="utf-8")
                rewritten.append(name)
        (folder / "instruction.md").write_text(with_final_newline(row.problem_statement), encoding="utf-8")
        (folder / "instance.toml").write_text(instance_toml(row, source, recipe, checks), encoding="utf-8")
        (folder / "origin.toml").write_text(
            origin_toml(row, origin, recipe_file, checks, rewritten, record.label), encoding="utf-8")
        try:
            instance = load_instance(folder)
        except BenchmarkError as exc:
            raise RowError(exc.field, f"the written instance does not load: {exc}") from exc
        if verifier is not None:
            problems = verifier.problems(instance)
            if problems:
                raise RowError("FAIL_TO_PASS/PASS_TO_PASS", "the checks do not reproduce on "
                               f"{origin.describe(row)}: " + "; ".join(problems[:5]))
    log.info("imported %s from %s", row.instance_id, origin.describe(row))
    return "imported"


def import_rows(rows: Path, out: Path, recipes: RecipeBook, sources: ProgramSources, *, source: str = "swe-bench-lite",
                overwrite: bool = False, fuzz: int = DEFAULT_FUZZ, verifier: Verifier | None = None) -> ImportReport:
    """Import every row of a SWE-bench file into the benchmark at `out`. A bad row becomes an
    issue and the others go on; nothing is half-written."""
    report = ImportReport()
    seen: set[str] = set()
    for record in read_records(rows):
        instance_id = str((record.data or {}).get("instance_id", ""))
        if record.data is None:
            report.issues.append(Issue(record.label, "", "(row)", record.error))
            continue
        if instance_id and instance_id in seen:
            report.issues.append(Issue(record.label, instance_id, "instance_id", "appears twice in the file; kept the first"))
            continue
        seen.add(instance_id)
        try:
            status = import_row(record, out, recipes, sources, source, overwrite=overwrite, fuzz=fuzz, verifier=verifier)
        except RowError as exc:
            issue = Issue(record.label, instance_id, exc.field, str(exc))
        except (OSError, subprocess.SubprocessError, EnvironmentBuildError, SandboxError) as exc:
            issue = Issue(record.label, instance_id, "(import)", f"{type(exc).__name__}: {exc}")
        else:
            (report.imported if status == "imported" else report.existing).append(instance_id)
            continue
        log.error("%s", issue)
        report.issues.append(issue)
    return report
