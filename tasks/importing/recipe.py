"""Environment recipes: how to build and test a repository's programs, kept as data.

SWE-bench keeps these in a large constant dictionary that other projects monkeypatch; here a
recipe is a TOML file a user writes or edits, validated by pydantic, so adding a repository or
a version range never touches code. A recipe file holds one or more `[[recipe]]` tables:

```toml
[[recipe]]
repo = "sympy/sympy"                  # owner/name, as in a SWE-bench row's `repo`
versions = ">=1.6,<1.12"              # PEP 440 specifiers over the row's `version`; "" = any
language = "python"                   # the instances' language (python, go, javascript, ...)
python = "3.11"                       # interpreter of the environment (TESTPRISM_PYTHON_311 overrides)
packages = ["mpmath==1.3.0", "pytest>=8,<10"]
setup = []                            # shell commands run from the program root before the tests
test_command = "python -m pytest -p no:cacheprovider -rA {test_files} {deselect} --junitxml=$TESTPRISM_JUNIT"
# parser = "ruby_unit"                # a log parser reading the command's output, when it writes no JUnit
deselect = []                         # tests never run (pytest node ids) or never deciding (others)
[recipe.env]                          # variables folded into the commands as VAR=value prefixes
PYTHONWARNINGS = "ignore::UserWarning"
```

Another language names its environment as the benchmark format does (EnvironmentSpec): a
`dockerfile` (relative to the recipe file; the importer copies it into the benchmark as
`environments/<name>/Dockerfile`, and a `context` folder's files beside it: a Maven seed,
fixtures), `toolchains` for the local backend, `variables` of the
build step and every run, and an optional `[recipe.build]` step run once per state.

`{test_files}` is filled with the test files a test patch touches, of the recipe's language:
whole files are run, never SWE-bench's test ids, which are cut at the first space and then
name nothing. `{test_dirs}` is their folders as `./dir/` (Go's packages), and `{tests}` one
shell word holding a regular expression that matches any of the row's tests (`go test -run`,
`mocha --grep`): it selects what runs, never what decides, so matching more is harmless.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from testprism.tasks.model.benchmark_format import (
    NAME,
    BuildSpec,
    EnvironmentSpec,
    ParserName,
    command_names,
    known_language,
    variable_names,
)

TEST_FILES = "{test_files}"
TEST_DIRS = "{test_dirs}"
TESTS = "{tests}"
DESELECT = "{deselect}"
#: what a regular expression of RE2 (Go), JavaScript or Python reads as syntax
REGEX_SYNTAX = re.compile(r"([\\.^$|?*+()\[\]{}])")


class RecipeError(ValueError):
    """A recipe file is invalid, or no recipe fits a row. Names the file and the field."""

    def __init__(self, path: Path | str, field: str, message: str) -> None:
        self.path, self.field = path, field
        super().__init__(f"{path}: field {field}: {message}")


class Recipe(BaseModel):
    """One repository and version range: its environment and its test command."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    repo: str = Field(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
    versions: str = ""
    #: the folder of the copied Dockerfile, environments/<name>/ (default: the recipe file's stem)
    name: str | None = Field(None, pattern=NAME)
    language: str = "python"
    #: None: no virtualenv; a Python recipe gets 3.11 when it names none
    python: str | None = Field(None, pattern=r"^3\.\d+$")
    packages: tuple[str, ...] = ()
    #: relative to the recipe file; copied into the benchmark by the importer
    dockerfile: str | None = None
    #: a folder relative to the recipe file whose files the importer copies beside the Dockerfile,
    #: into the build context both backends read (a Java recipe's `maven-seed/`, fixtures)
    context: str | None = None
    toolchains: tuple[str, ...] = ()
    variables: dict[str, str] = {}
    build: BuildSpec | None = None
    setup: tuple[str, ...] = ()
    test_command: str
    deselect: tuple[str, ...] = ()
    env: dict[str, str] = {}
    #: the log parser that reads the command's output (the instance's `[checks] parser`), for a
    #: runner that writes no JUnit (Ruby's test-unit); None: the command writes $TESTPRISM_JUNIT
    parser: ParserName | None = None

    _known_language = field_validator("language")(known_language)
    _command_names = field_validator("toolchains")(command_names)

    @field_validator("versions")
    @classmethod
    def _specifiers(cls, value: str) -> str:
        try:
            SpecifierSet(value)
        except InvalidSpecifier as exc:
            raise ValueError(f"not a version range (PEP 440 specifiers such as '>=1.6,<1.12'): {exc}") from exc
        return value

    @field_validator("env", "variables")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        variable_names(value)
        return value

    @model_validator(mode="after")
    def _placeholders(self) -> Recipe:
        """Python runs whole test files (pytest); another language's command may name the
        files, their folders or the tests, but must name something of the row, or every
        row of the repository would run the same command. `{deselect}` renders pytest
        options, so only a Python command can receive it."""
        if self.language == "python":
            if TEST_FILES not in self.test_command:
                raise ValueError(f"test_command must hold {TEST_FILES}: the test files of a patch go there")
            if self.deselect and DESELECT not in self.test_command:
                raise ValueError(f"deselect is given but test_command has no {DESELECT} placeholder to receive it")
            if self.python is None:
                object.__setattr__(self, "python", "3.11")
            return self
        if not any(p in self.test_command for p in (TEST_FILES, TEST_DIRS, TESTS)):
            raise ValueError(f"test_command must hold {TEST_FILES}, {TEST_DIRS} or {TESTS}: "
                             "what the row's test patch touches goes there")
        if DESELECT in self.test_command:
            raise ValueError(f"{DESELECT} renders pytest's --deselect options: a {self.language} command cannot "
                             f"take it (deselected tests are left out of {TESTS} and of the checks)")
        return self

    def covers(self, repo: str, version: str) -> bool:
        """Whether this recipe is for `repo` at `version` (an unparsable version matches only
        an unbounded range)."""
        if repo != self.repo:
            return False
        if not self.versions:
            return True
        try:
            return Version(version) in SpecifierSet(self.versions)
        except InvalidVersion:
            return False

    def environment_name(self, recipe_file: Path) -> str:
        """The folder of the benchmark's `environments/` that receives the Dockerfile."""
        return self.name or recipe_file.stem

    def dockerfile_path(self, recipe_file: Path) -> Path | None:
        """The Dockerfile on this host: `dockerfile` is relative to the recipe file."""
        return None if self.dockerfile is None else recipe_file.parent / self.dockerfile

    def context_path(self, recipe_file: Path) -> Path | None:
        """The context folder on this host: `context` is relative to the recipe file."""
        return None if self.context is None else recipe_file.parent / self.context

    def environment(self, dockerfile: str | None = None) -> EnvironmentSpec:
        """The instance's environment; `dockerfile` is where the instance finds the copy."""
        return EnvironmentSpec(python=self.python, packages=self.packages, dockerfile=dockerfile,
                               toolchains=self.toolchains, variables=self.variables)

    def command_template(self) -> str:
        """The whole shell command with its placeholders still open: environment variables as
        `VAR=value` prefixes of every command, setup commands first, deselected tests folded
        in as `--deselect` options. This form fits today's `[checks] command`."""
        prefix = "".join(f"{name}={shlex.quote(value)} " for name, value in sorted(self.env.items()))
        deselect = " ".join(f"--deselect {shlex.quote(test)}" for test in self.deselect)
        test = " ".join(self.test_command.replace(DESELECT, deselect).split())
        return " && ".join(prefix + command for command in (*self.setup, test))

    def deselects(self, test_id: str) -> bool:
        """Whether `test_id` (a node id, or a bare function name as sympy's lists hold) is one
        of the deselected tests, which then can never vouch for a state."""
        for node in self.deselect:
            if test_id == node or test_id.startswith(node + "[") or node.startswith(test_id + "["):
                return True
            if "::" not in test_id and node.rsplit("::", 1)[-1].split("[", 1)[0] == test_id:
                return True
        return False


def test_names(test_ids: tuple[str, ...] | list[str], language: str) -> list[str]:
    """The names a test runner selects by: without a `classname::` part, and for Go the
    top-level function (`go test -run` splits its pattern at `/` into one per subtest level,
    and `-run TestFoo` runs every subtest of TestFoo)."""
    names: list[str] = []
    for test_id in test_ids:
        name = test_id.rsplit("::", 1)[-1]
        if language == "go":
            name = name.split("/", 1)[0]
        if name not in names:
            names.append(name)
    return names


def fill_test_files(template: str, files: list[str], tests: tuple[str, ...] | list[str] = (),
                    language: str = "python") -> str:
    """The command that runs these test files (paths relative to the program root): their
    folders for `{test_dirs}`, and for `{tests}` an alternation of the tests' names, each
    escaped so that a title is matched literally."""
    dirs = sorted({"./" + (str(PurePosixPath(f).parent) + "/").removeprefix("./") for f in files})
    pattern = "|".join(REGEX_SYNTAX.sub(r"\\\1", name) for name in test_names(tests, language))
    return (template.replace(TEST_FILES, " ".join(shlex.quote(f) for f in files))
            .replace(TEST_DIRS, " ".join(shlex.quote(d) for d in dirs))
            .replace(TESTS, shlex.quote(pattern)))


class NoRecipe(LookupError):
    """No recipe, or more than one, fits a row; `field` is the row's field to blame."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(message)


@dataclass(frozen=True)
class RecipeBook:
    """Every recipe of the given files, in order, with the file each came from."""

    recipes: tuple[tuple[Recipe, Path], ...]

    def find(self, repo: str, version: str) -> tuple[Recipe, Path]:
        """The one recipe for `repo` at `version`. Two matches are an error: silently picking
        the first would let a file's order decide an environment."""
        found = [(r, p) for r, p in self.recipes if r.covers(repo, version)]
        if not found:
            known = sorted({f"{r.repo} {r.versions or '(any)'}" for r, _ in self.recipes})
            field = "version" if any(r.repo == repo for r, _ in self.recipes) else "repo"
            raise NoRecipe(field, f"no recipe for {repo} version {version!r} (recipes: {', '.join(known)})")
        if len(found) > 1:
            where = "; ".join(f"{p}: {r.versions or '(any)'}" for r, p in found)
            raise NoRecipe("version", f"{repo} version {version!r} matches several recipes: {where}")
        return found[0]


def load_recipe_file(path: Path) -> list[Recipe]:
    """The `[[recipe]]` tables of one file, validated; errors name the file and the field."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise RecipeError(path, "(file)", "missing") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise RecipeError(path, "(syntax)", str(exc)) from exc
    unknown = sorted(set(data) - {"recipe"})
    if unknown:
        raise RecipeError(path, unknown[0], "unknown top-level key: recipes are [[recipe]] tables")
    tables = data.get("recipe")
    if not isinstance(tables, list) or not tables:
        raise RecipeError(path, "recipe", "no [[recipe]] table")
    recipes: list[Recipe] = []
    for i, table in enumerate(tables):
        try:
            recipe = Recipe.model_validate(table)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise RecipeError(path, f"recipe.{i}.{field}" if field else f"recipe.{i}", first["msg"]) from exc
        dockerfile = recipe.dockerfile_path(path)
        if dockerfile is not None and (dockerfile.is_symlink() or not dockerfile.is_file()):
            raise RecipeError(path, f"recipe.{i}.dockerfile",
                              f"{dockerfile} is not a file (the path is relative to the recipe file)")
        context = recipe.context_path(path)
        if context is not None and (dockerfile is None or context.is_symlink() or not context.is_dir()
                                    or (context / "Dockerfile").exists()):
            raise RecipeError(path, f"recipe.{i}.context",
                              f"{context} is not a folder to put beside a dockerfile (the path is relative to the "
                              "recipe file; it goes with the recipe's dockerfile, and holds no Dockerfile of its own)")
        recipes.append(recipe)
    return recipes


def load_recipes(paths: list[Path]) -> RecipeBook:
    """Recipes from files, or from every `*.toml` of a folder."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(path.glob("*.toml"))
            if not found:
                raise RecipeError(path, "(folder)", "holds no *.toml recipe file")
            files += found
        else:
            files.append(path)
    if not files:
        raise RecipeError("--recipes", "(option)", "no recipe file given")
    recipes: list[tuple[Recipe, Path]] = []
    claimed: dict[str, tuple[bytes, Path]] = {}
    for path in files:
        for index, recipe in enumerate(load_recipe_file(path)):
            _claim_environment(claimed, recipe, path, index)
            recipes.append((recipe, path))
    return RecipeBook(tuple(recipes))


def _claim_environment(claimed: dict[str, tuple[bytes, Path]], recipe: Recipe, path: Path, index: int) -> None:
    """Two recipes whose Dockerfiles differ must not land in one `environments/<name>/`:
    the second would change the environment of the instances the first imported."""
    dockerfile = recipe.dockerfile_path(path)
    if dockerfile is None:
        return
    name, content = recipe.environment_name(path), dockerfile.read_bytes() + repr(context_files(recipe, path)).encode()
    first = claimed.setdefault(name, (content, path))
    if first[0] != content:
        raise RecipeError(path, f"recipe.{index}.name", f"environment {name!r} already holds another Dockerfile or "
                                                        f"context (a recipe of {first[1]}): give this recipe its own name")


def context_files(recipe: Recipe, recipe_file: Path) -> tuple[tuple[str, bytes], ...]:
    """The files of the recipe's context folder (paths relative to it, sorted), which go beside
    its Dockerfile. Links are refused: what the benchmark holds must not depend on where a
    link of the recipe's folder pointed on the importing host."""
    folder = recipe.context_path(recipe_file)
    if folder is None:
        return ()
    files: list[tuple[str, bytes]] = []
    for path in sorted(folder.rglob("*")):
        if path.is_symlink():
            raise RecipeError(recipe_file, "context", f"{path} is a link: a context holds files and folders only")
        if path.is_file():
            files.append((path.relative_to(folder).as_posix(), path.read_bytes()))
    return tuple(files)
