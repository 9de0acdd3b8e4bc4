"""Environment recipes: how to build and test a repository's programs, kept as data.

SWE-bench keeps these in a large constant dictionary that other projects monkeypatch; here a
recipe is a TOML file a user writes or edits, validated by pydantic, so adding a repository or
a version range never touches code. A recipe file holds one or more `[[recipe]]` tables:

```toml
[[recipe]]
repo = "sympy/sympy"                  # owner/name, as in a SWE-bench row's `repo`
versions = ">=1.6,<1.12"              # PEP 440 specifiers over the row's `version`; "" = any
python = "3.11"                       # interpreter of the environment (TESTPRISM_PYTHON_311 overrides)
packages = ["mpmath==1.3.0", "pytest>=8,<10"]
setup = []                            # shell commands run from the program root before the tests
test_command = "python -m pytest -p no:cacheprovider -rA {test_files} {deselect} --junitxml=$TESTPRISM_JUNIT"
deselect = []                         # pytest node ids never run (network tests...)
[recipe.env]                          # variables the commands run with
PYTHONWARNINGS = "ignore::UserWarning"
```

`{test_files}` is filled with the Python test files a test patch touches: whole files are run,
never SWE-bench's test ids, which are cut at the first space and then name nothing.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from testprism.tasks.model.benchmark import EnvironmentSpec

TEST_FILES = "{test_files}"
DESELECT = "{deselect}"
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


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
    python: str = Field("3.11", pattern=r"^3\.\d+$")
    packages: tuple[str, ...] = ()
    setup: tuple[str, ...] = ()
    test_command: str
    deselect: tuple[str, ...] = ()
    env: dict[str, str] = {}

    @field_validator("versions")
    @classmethod
    def _specifiers(cls, value: str) -> str:
        try:
            SpecifierSet(value)
        except InvalidSpecifier as exc:
            raise ValueError(f"not a version range (PEP 440 specifiers such as '>=1.6,<1.12'): {exc}") from exc
        return value

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not re.match(ENV_NAME, name):
                raise ValueError(f"{name!r} is not a shell variable name")
        return value

    @model_validator(mode="after")
    def _placeholders(self) -> Recipe:
        if TEST_FILES not in self.test_command:
            raise ValueError(f"test_command must hold {TEST_FILES}: the test files of a patch go there")
        if self.deselect and DESELECT not in self.test_command:
            raise ValueError(f"deselect is given but test_command has no {DESELECT} placeholder to receive it")
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

    @property
    def environment(self) -> EnvironmentSpec:
        return EnvironmentSpec(python=self.python, packages=self.packages)

    def command_template(self) -> str:
        """The whole shell command with `{test_files}` still open: environment variables as
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


def fill_test_files(template: str, files: list[str]) -> str:
    """The command that runs these test files (paths relative to the program root)."""
    return template.replace(TEST_FILES, " ".join(shlex.quote(f) for f in files))


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
            recipes.append(Recipe.model_validate(table))
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise RecipeError(path, f"recipe.{i}.{field}" if field else f"recipe.{i}", first["msg"]) from exc
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
    return RecipeBook(tuple((recipe, path) for path in files for recipe in load_recipe_file(path)))
