"""The benchmark format on disk (docs/benchmark-format.md) and its validating loader.

Bad input must fail with the file and the field it concerns, before anything runs, so every
file of the benchmark is read and checked here: TOML against pydantic models, patches as
unified diffs, suites for symlinks and paths that escape their folder.

Suite packages and patches are untrusted, and the harness reads them as root: every such
file is lstat'ed before it is opened and read only if it is a plain file within a size
bound (`read_plain_file`), so a FIFO (whose open blocks: it once
hung a whole replay), a device or a file of gigabytes is refused with its name instead.
"""

from __future__ import annotations

import logging
import os
import posixpath
import re
import stat
import shutil
import tomllib
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from collections.abc import Callable, Iterable
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator
from unidiff.errors import UnidiffParseError

from testprism.tasks.model import patches
from testprism.tasks.model.hashing import digest, tree_digest, tree_files
from testprism.tasks.model.input_error import BenchmarkError
from testprism.tasks.model.syntax import LANGUAGES
from testprism.tasks.model.outcome import Reason

log = logging.getLogger(__name__)

NAME = r"^[A-Za-z0-9_.-]+$"
#: run limits (tasks/sandbox/base.py Limits, which imports this module)
L = TypeVar("L")
#: An image reference as docker reads one: an optional registry host[:port], lower-case path
#: components, then a tag, a digest, or both (`NAME[:TAG][@sha256:DIGEST]`)
IMAGE_REFERENCE = (r"^(?:[A-Za-z0-9.-]+(?::[0-9]+)?/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
                   r"(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?"
                   r"(?:@sha256:[0-9a-f]{64})?$")
#: A configuration folder's name: NAME's characters and `+`, which model names use
#: (`otter++`); a single path component, never `.` or `..`.
CONFIGURATION = r"^(?!\.\.?$)[A-Za-z0-9_.+-]+$"
DEFAULT_ENTRY = "bash tmp/run_tests.sh"
#: Bounds on what the loader reads of untrusted input: a patch (a candidate's, a reference,
#: the checks', a suite's), a TOML file, one file of a suite package, a whole package (its
#: bytes, its entries, how deep its folders nest)
PATCH_MAX_BYTES = 16 * 1024 * 1024
TOML_MAX_BYTES = 16 * 1024 * 1024
SUITE_FILE_MAX_BYTES = 16 * 1024 * 1024
SUITE_MAX_BYTES = 64 * 1024 * 1024
SUITE_MAX_ENTRIES = 10_000
SUITE_MAX_DEPTH = 32


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def known_language(value: str) -> str:
    """A language of syntax.LANGUAGES (instances' and recipes' `language`)."""
    if value not in LANGUAGES:
        raise ValueError(f"{value!r} is not a language testprism knows; one of {', '.join(LANGUAGES)}")
    return value


def command_names(value: tuple[str, ...]) -> tuple[str, ...]:
    """Host commands (`toolchains`): plain names, looked up on PATH, never a shell line."""
    for name in value:
        if not re.fullmatch(r"[A-Za-z0-9_.+-]+", name):
            raise ValueError(f"{name!r} is not a command name")
    return value


def variable_names(names: Iterable[str]) -> None:
    """Variables an environment (or a recipe) may set: shell names, not the harness's own."""
    for name in names:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or name.startswith("TESTPRISM_"):
            raise ValueError(f"{name!r} is not a variable an environment may set")


class EnvironmentSpec(_Model):
    """What a state runs in. Its hash is part of every run key.

    Three recipes, which may be combined: a Python version plus pip packages (a virtualenv,
    built once per key by either backend); a `dockerfile` the docker backend builds `FROM`
    its bootstrapped base image (system packages, toolchains: Go, Node.js, a JDK); and
    `toolchains`, the host commands the local backend, which cannot build a Dockerfile,
    checks for instead. `variables` are set for the build step and every run on both.
    A `dockerfile` may say with `program_in_image` where its image keeps the program (a
    Harbor task's WORKDIR, whose files and scripts name `/app/...`): each run then places
    the state's tree there, in the built image, as for an image instance.

    Or, alone, an `image` that already holds the program at `program_in_image` and its
    toolchain (SWE-bench's per-instance images): nothing is built, so it takes none of the
    recipes above. Its key is made of the image's id, bound once the image is resolved on
    an engine (`resolved`, tasks/sandbox/image): a tag can be moved to other content."""

    python: str | None = Field("3.11", pattern=r"^3\.\d+$")
    packages: tuple[str, ...] = ("pytest>=8,<10",)
    #: relative to the instance folder, inside the benchmark; its folder is the build context
    dockerfile: str | None = None
    toolchains: tuple[str, ...] = ()
    variables: tuple[tuple[str, str], ...] = ()
    #: an image holding the program and its environment: NAME[:TAG|@sha256:DIGEST]
    image: str | None = None
    #: where the program is in the image: an absolute, normalised path, not `/`
    program_in_image: str | None = None
    #: the image's id (`sha256:…`), bound when the image is resolved: the key is made of it
    _image_id: str = PrivateAttr("")
    #: why the image could not be bound (`unbound`): what its runs' `environment_failed` says
    _image_error: str = PrivateAttr("")
    #: the Dockerfile's build context (its folder) and that folder's content hash, set by
    #: the loader: the content, not the path, goes into the key
    _context: Path | None = PrivateAttr(None)
    _context_hash: str = PrivateAttr("")

    _command_names = field_validator("toolchains")(command_names)

    @field_validator("variables", mode="before")
    @classmethod
    def _table(cls, value: object) -> object:
        """TOML gives a table; kept as sorted pairs so that the spec stays hashable."""
        if isinstance(value, dict):
            variable_names(value)
            for name, text in value.items():
                if not isinstance(text, str):
                    raise ValueError(f"{name}: the value must be a string")
            return tuple(sorted(value.items()))
        return value

    @field_validator("image")
    @classmethod
    def _image_reference(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(IMAGE_REFERENCE, value):
            raise ValueError(f"{value!r} is not an image reference: NAME[:TAG|@sha256:DIGEST], the name in lower case")
        return value

    @field_validator("program_in_image")
    @classmethod
    def _program_path(cls, value: str | None) -> str | None:
        """The program's folder in the image, written one way only: two spellings of one
        folder would be two keys, and `/` (or `..` climbing to it) would make the workspace
        the whole root."""
        if value is None:
            return value
        if not value.startswith("/") or posixpath.normpath(value) != value or value.startswith("//") or "\0" in value:
            raise ValueError(f"{value!r} is not an absolute, normalised path (like /testbed)")
        if value == "/":
            raise ValueError("'/' is the image's whole root, not a program folder")
        return value

    @model_validator(mode="after")
    def _image_alone(self) -> EnvironmentSpec:
        """An image instance names both fields, and none of the recipes that build an
        environment (the image is the environment); the Python defaults then do not apply."""
        if self.program_in_image is not None and self.image is None and self.dockerfile is None:
            raise ValueError("program_in_image says where the program is in an image: image (or dockerfile) is "
                             "missing")
        if self.image is not None and self.program_in_image is None:
            raise ValueError("image and program_in_image go together: program_in_image is missing")
        if self.image is not None:
            mixed = sorted({"python", "packages", "dockerfile", "toolchains"} & self.model_fields_set)
            if mixed:
                raise ValueError(f"an image holds its environment: {', '.join(mixed)} cannot be added to image "
                                 f"{self.image!r}")
            object.__setattr__(self, "python", None)
            object.__setattr__(self, "packages", ())
        return self

    @property
    def image_id(self) -> str:
        """The bound image's id ('' until the image is resolved, or without an image)."""
        return self._image_id

    def resolved(self, image_id: str) -> EnvironmentSpec:
        """This spec with its image bound to the content `image_id` (`sha256:…`)."""
        copy = self.model_copy()
        copy._image_id = image_id
        return copy

    def unbound(self, reason: str) -> EnvironmentSpec:
        """This spec with its image left unbound for `reason` (one line naming the file and
        the field): a backend's prepare raises it, so each run is `environment_failed`."""
        copy = self.model_copy()
        copy._image_error = reason
        return copy

    @property
    def image_error(self) -> str:
        """Why the image is unbound ('' when bound, never tried, or without an image)."""
        return self._image_error

    @property
    def key(self) -> str:
        """A Python-only recipe keeps the key it always had (stores keyed by it stay valid);
        each other part is added only when set. An image's part is its id and the program's
        path; before the image is resolved, a key marked unresolved, which only a run that
        could not have its environment (`environment_failed`) is ever recorded under, so the
        runs are made again, under the id's key, once the image is there."""
        parts = ["env", self.python or "none", *sorted(self.packages)]
        if self.image is not None:
            parts += ["image", self._image_id or f"unresolved {self.image}", self.program_in_image or ""]
        if self.dockerfile is not None:
            parts += ["dockerfile", self._context_hash or self.dockerfile]
            parts += ["program at", self.program_in_image] if self.program_in_image else []
        if self.toolchains:
            parts += ["toolchains", *sorted(self.toolchains)]
        if self.variables:
            parts += ["variables", *(f"{k}={v}" for k, v in self.variables)]
        return digest(*parts)

    def as_table(self) -> dict[str, object]:
        """`[environment]` as instance.toml writes it: only what is set, so that the file
        loads back to this spec (and its key), whatever the instance's language."""
        table: dict[str, object] = {}
        if self.python is not None:
            table |= {"python": self.python, "packages": list(self.packages)}
        elif self.packages:
            table["packages"] = list(self.packages)
        if self.dockerfile is not None:
            table["dockerfile"] = self.dockerfile
            table |= {"program_in_image": self.program_in_image} if self.program_in_image else {}
        if self.toolchains:
            table["toolchains"] = list(self.toolchains)
        if self.image is not None:
            table |= {"image": self.image, "program_in_image": self.program_in_image}
        if self.variables:
            table["variables"] = dict(self.variables)
        return table

    def shared_context(self, instance_folder: Path) -> Path | None:
        """The Dockerfile's folder when it lies outside the instance's own (instances share
        `environments/<name>/`): a writer of another benchmark copies it along, at the same
        place relative to the instances, so the instance's `dockerfile` path still loads."""
        if self._context is None or self._context.is_relative_to(instance_folder.resolve()):
            return None
        return self._context

    @property
    def summary(self) -> str:
        """One line for logs: what the environment is made of."""
        parts = [f"python {self.python}: {', '.join(self.packages) or 'no packages'}"] if self.python else []
        parts += [f"dockerfile {self.dockerfile}" + (f", program at {self.program_in_image}"
                                                      if self.program_in_image else "")] if self.dockerfile else []
        parts += [f"toolchains {', '.join(self.toolchains)}"] if self.toolchains else []
        parts += [f"image {self.image} ({self._image_id or 'unresolved'}), program at {self.program_in_image}"] \
            if self.image else []
        return "; ".join(parts) or "host tools only"

    @property
    def context(self) -> Path | None:
        """The Dockerfile's folder on this host (None without a Dockerfile)."""
        return self._context

    def relocated(self, context: Path) -> EnvironmentSpec:
        """This spec with the same Dockerfile folder found at `context` (a worker's copy of
        it, tasks/execution/parcel.py): the content hash, hence the key, is the original's."""
        copy = self.model_copy()
        copy._context = context
        return copy

    def bound(self, dockerfile: Path) -> EnvironmentSpec:
        """This spec with its Dockerfile found at `dockerfile` (the loader's step)."""
        copy = self.model_copy()
        copy._context = dockerfile.parent
        copy._context_hash = tree_digest(dockerfile.parent)
        return copy


class BuildSpec(_Model):
    """A build that runs once per state, when its tree is materialised, inside the sandbox
    with the environment read-only (`pip install --no-deps --prefix`, `python setup.py
    build_ext --inplace`, `go build ./...`). What it writes in the tree is kept with the
    state's tree, so every run of that state starts from the built tree."""

    command: str = Field(min_length=1)
    timeout_s: float = Field(1800.0, gt=0)


class ProgramSpec(_Model):
    path: str = "program"


#: the one check id of a reward check: the verifier's reward decides it (`RewardSpec`)
REWARD_CHECK = "reward"


class RewardSpec(_Model):
    """A verifier whose reward decides (Harbor's `tests/test.sh`): the checks' command runs
    with the checked tree's folder `tests` (the official files, which the checks patch adds
    to the program) at `/tests` read-only and a fresh writable `/logs/verifier`, and passes
    iff the reward it leaves there in its declared `format` is 1 (tasks/execution/reward.py).
    Harbor mounts them there; a reward that is not a number is no verdict: `E`/`parse_failed`.
    The format is the verifier's, declared so that the checked code cannot add a reward file
    of the other name and have it read (`E`/`results_disagree`)."""

    #: the folder of the checked tree placed at /tests: relative, normalised, inside the program
    tests: str = Field(min_length=1)
    #: the reward file the verifier writes: `reward.txt` (a number) or `reward.json` (an object
    #: with a numeric `reward`); None: Harbor's documented default, txt (`file`)
    format: Literal["txt", "json"] | None = None

    @property
    def file(self) -> str:
        """The one reward file read: `reward.txt` or `reward.json`."""
        return f"reward.{self.format or 'txt'}"

    @field_validator("tests")
    @classmethod
    def _relative(cls, value: str) -> str:
        if value.startswith("/") or posixpath.normpath(value) != value or value.split("/")[0] == "..":
            raise ValueError(f"{value!r} is not a relative, normalised path inside the program (like tests)")
        return value


#: the log parsers `[checks] parser` may name: the vocabulary, here below every stage; each
#: one's reader is tasks/execution/logs PARSERS (tests/test_log_parsers.py holds them equal)
LOG_PARSERS = ("pytest", "django", "sympy", "go_test", "go_test_json", "cargo", "maven", "surefire", "ctest", "jest",
               "mocha", "vitest", "phpunit", "rspec", "rspec_json", "minitest", "ruby_unit", "rspec_transformed_json",
               "script")


class ChecksSpec(_Model):
    """The official checks: a test patch, the command that runs it, the tests that decide.
    With `reward`, the command is a verifier script whose reward is the one check."""

    patch: str = "checks.diff"
    command: str
    fail_to_pass: tuple[str, ...] = Field(min_length=1)
    pass_to_pass: tuple[str, ...] = ()
    #: where per-test results come from when the runner writes no JUnit: the name of the
    #: log parser (LOG_PARSERS; its reader: tasks/execution/logs) that reads the command's output; None: JUnit
    parser: str | None = None
    #: the checks are a verifier script whose reward decides (Harbor's test.sh); None: tests decide
    reward: RewardSpec | None = None

    @field_validator("parser")
    @classmethod
    def _known_parser(cls, value: str | None) -> str | None:
        if value is not None and value not in LOG_PARSERS:
            raise ValueError(f"{value!r} is not a log parser testprism knows; one of {', '.join(LOG_PARSERS)}")
        return value

    @model_validator(mode="after")
    def _reward_alone(self) -> ChecksSpec:
        """A reward check has one result, the reward: it is the one fail-to-pass check, and
        no log or JUnit report is read beside it."""
        if self.reward is not None:
            if self.fail_to_pass != (REWARD_CHECK,) or self.pass_to_pass:
                raise ValueError(f"with [checks.reward], fail_to_pass is [{REWARD_CHECK!r}] and pass_to_pass is empty")
            if self.parser is not None:
                raise ValueError("with [checks.reward], the reward decides: no parser")
        return self


class CandidateSpec(_Model):
    id: str = Field(pattern=NAME)
    label: Literal["valid", "invalid"]
    patch: str
    note: str = ""
    #: an invalid candidate's failed official checks, as `testprism collect` records them:
    #: what the invalid side's diversity (pairwise Jaccard, the panel-size curves) is read
    #: from when the store holds no collection of the candidate
    failed_checks: tuple[str, ...] | None = Field(None, min_length=1)
    #: agent: a submitted patch; mutant: made by `collect --mutants` (tasks/collect/mutants.py),
    #: scored apart as well (scores/leaderboard_by_provenance)
    provenance: Literal["agent", "mutant"] = "agent"


class LimitsSpec(_Model):
    """The instance's own run limits, as its benchmark ships them (Harbor's task.toml):
    each one set replaces the run's default (`sandbox.base.Limits`) for this instance's
    runs of its official checks (the verifier's time, memory and disk); `agent_timeout_s`
    bounds a generation run (the agent's time, tasks/generate/generation.py)."""

    timeout_s: float | None = Field(None, gt=0)
    memory_mb: int | None = Field(None, gt=0)
    disk_mb: int | None = Field(None, gt=0)
    #: the CPUs a run may use at once (a quota on the run's cgroup or container)
    cpus: float | None = Field(None, gt=0, le=1024)
    agent_timeout_s: float | None = Field(None, gt=0)

    def over(self, limits: L) -> L:
        """`limits` (a sandbox.base.Limits) with this instance's run limits in place of its own."""
        own = {"timeout_s": self.timeout_s, "memory_mb": self.memory_mb, "disk_mb": self.disk_mb, "cpus": self.cpus}
        return replace(limits, **{name: value for name, value in own.items() if value is not None})


def run_limits(instance: Instance, limits: L) -> L:
    """The limits of the instance's runs (its official checks' and suites' alike): `limits`
    with the instance's own (`[limits]`, Harbor's task.toml) in their place."""
    own = instance.spec.limits
    return limits if own is None else own.over(limits)


class InstanceSpec(_Model):
    id: str = Field(pattern=NAME)
    source: str = Field(pattern=NAME)
    language: str = "python"
    summary: str = ""
    program: ProgramSpec = ProgramSpec()
    environment: EnvironmentSpec = EnvironmentSpec()
    build: BuildSpec | None = None
    limits: LimitsSpec | None = None
    checks: ChecksSpec
    candidates: tuple[CandidateSpec, ...] = ()

    _known_language = field_validator("language")(known_language)

    @model_validator(mode="after")
    def _no_python_by_default(self) -> InstanceSpec:
        """Another language's environment has no virtualenv unless it asks for one, nor has
        a Dockerfile's (the image it builds is the environment): the Python defaults apply
        only when the instance is Python without a Dockerfile, or names a version."""
        env = self.environment
        own = self.language != "python" or env.dockerfile is not None
        if own and "python" not in env.model_fields_set:
            packages = env.packages if "packages" in env.model_fields_set else ()
            object.__setattr__(self, "environment", env.model_copy(update={"python": None, "packages": packages}))
        return self

    @field_validator("candidates")
    @classmethod
    def _unique_ids(cls, value: tuple[CandidateSpec, ...]) -> tuple[CandidateSpec, ...]:
        seen: set[str] = set()
        for cand in value:
            if cand.id in seen:
                raise ValueError(f"candidate id {cand.id!r} appears twice")
            seen.add(cand.id)
        return value


class SuiteSpec(_Model):
    """`suite.toml`, optional. `tests` names the suite's own tests (pytest node ids or bare
    names): when given, the verdict comes from those cases of the JUnit report only, so
    old tests dragged in by a test patch do not decide it. `model_name_or_path` records the
    model whose name the configuration folder was made from (`import suites`), so that a
    later import of another model mapping to the same folder is refused; replay ignores it."""

    entry: str = DEFAULT_ENTRY
    tests: tuple[str, ...] = ()
    #: a test patch of the suite's (one of its files): the harness applies it to each state
    #: as it applies every patch (git apply, then patch --fuzz), after placing the files; a
    #: state it does not apply to is `E`/suite_not_installed, never a rejection
    patch: str | None = None
    model_name_or_path: str = ""


@dataclass(frozen=True)
class Candidate:
    id: str
    label: str
    note: str
    patch: bytes
    failed_checks: frozenset[str] | None = None  #: recorded in the benchmark (CandidateSpec)
    provenance: str = "agent"


@dataclass(frozen=True)
class Instance:
    """One benchmark item, validated, with its patches read."""

    spec: InstanceSpec
    folder: Path
    reference: bytes
    checks_patch: bytes
    candidates: tuple[Candidate, ...]
    #: an image instance's program: the tree read out of its image into the work area
    #: (tasks/sandbox/image `bind_image`); None: the program is the instance's own folder
    program_tree: Path | None = None

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def source(self) -> str:
        return self.spec.source

    @property
    def program(self) -> Path:
        return self.program_tree if self.program_tree is not None else self.folder / self.spec.program.path

    @cached_property
    def program_hash(self) -> str:
        env = self.spec.environment
        if env.image is not None and not env.image_id:
            # an image not resolved (missing): no tree to hash; its runs can only be E
            return digest("program", "unresolved image", env.image, env.program_in_image or "")
        return tree_digest(self.program)

    def relocated(self, folder: Path, context: Path | None) -> Instance:
        """This instance read from `folder` (its program at the same place under it) and its
        Dockerfile folder from `context`: a worker's copies (tasks/execution/parcel.py).
        Hashes are the original's: the copies are its content."""
        spec = self.spec
        if context is not None:
            spec = spec.model_copy(update={"environment": spec.environment.relocated(context)})
        moved = replace(self, folder=folder, spec=spec, program_tree=None)
        moved.__dict__["program_hash"] = self.program_hash
        return moved


@dataclass(frozen=True)
class Suite:
    """A generated test package of one configuration for one instance."""

    configuration: str
    instance_id: str
    folder: Path
    entry: str
    files: tuple[str, ...]
    tests: tuple[str, ...] = ()
    patch: bytes | None = None  # the test patch the harness applies (SuiteSpec.patch)

    @cached_property
    def hash(self) -> str:
        parts: list[str | bytes] = ["suite", self.entry, *self.tests]
        if self.patch is not None:
            parts += ["patch", self.patch]
        for rel in self.files:
            parts += [rel, (self.folder / rel).read_bytes()]
        return digest(*parts)

    def relocated(self, folder: Path) -> Suite:
        """This suite with its files read from `folder` (a worker's copy); the same hash."""
        moved = replace(self, folder=folder)
        moved.__dict__["hash"] = self.hash
        return moved


@dataclass(frozen=True)
class Benchmark:
    root: Path
    instances: dict[str, Instance]
    suites: dict[tuple[str, str], Suite]
    configurations: tuple[str, ...]
    #: suites rejected when loaded (symlinks, no entry script...): scored as E/invalid_suite
    suite_errors: dict[tuple[str, str], str]

    def suite_of(self, configuration: str, instance_id: str) -> tuple[Suite | None, Reason | None]:
        """The configuration's suite for the instance, or why it has none: `missing_suite`,
        or `invalid_suite` when the package was rejected when loaded."""
        suite = self.suites.get((configuration, instance_id))
        if suite is not None:
            return suite, None
        rejected = (configuration, instance_id) in self.suite_errors
        return None, Reason.INVALID_SUITE if rejected else Reason.MISSING_SUITE


def _copy_folder(source: Path, target: Path) -> None:
    shutil.copytree(source, target, symlinks=True)


def place_shared_environment(instance: Instance, out_root: Path,
                             copy: Callable[[Path, Path], None] = _copy_folder) -> None:
    """Put the instance's shared Dockerfile folder (`environments/<name>/`, outside its own
    folder) into the benchmark being written at `out_root`, at the same place relative to
    `instances/`, so the instance's `environment.dockerfile` still loads there. Every
    writer of a benchmark made of another's instances (curate's splits, collect's panels,
    generate's output) calls it; a folder already there is left alone."""
    context = instance.spec.environment.shared_context(instance.folder)
    if context is None:
        return
    target = out_root / context.relative_to(instance.folder.parent.parent.resolve())
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        copy(context, target)


M = TypeVar("M", bound=BaseModel)


def _field_path(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(p) for p in loc) or "(document)"


class RefusedFile(ValueError):
    """A file the loader was asked to read is not a plain file (a FIFO, a device, a socket,
    a link) or is larger than its bound. The message names it and says which."""


def file_kind(mode: int) -> str:
    """What an entry of this mode is, in words for an error message ("a FIFO")."""
    kinds = ((stat.S_ISLNK, "a symlink"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))
    return next((name for test, name in kinds if test(mode)), "not a plain file")


def read_plain_file(path: Path, limit: int) -> bytes:
    """The whole of the plain file `path`, at most `limit` bytes, or RefusedFile. A FIFO
    would block the harness's open, a device (/dev/zero) would never end, so the entry is
    lstat'ed and refused first, never opened; the open itself is O_NONBLOCK|O_NOFOLLOW and
    the opened file checked again (fstat), so an entry swapped in between is refused too.
    FileNotFoundError passes through (callers say "missing" in their own words)."""
    info = os.lstat(path)
    if not stat.S_ISREG(info.st_mode):
        raise RefusedFile(f"{path} is {file_kind(info.st_mode)}, not a plain file")
    if info.st_size > limit:
        raise RefusedFile(f"{path} holds {info.st_size} bytes, over the bound of {limit}")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise RefusedFile(f"{path} cannot be opened as a plain file: {exc.strerror}") from exc
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise RefusedFile(f"{path} is {file_kind(info.st_mode)}, not a plain file")
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise RefusedFile(f"{path} holds over {limit} bytes, the bound")
    return data


def _read_toml(path: Path) -> dict:
    try:
        return tomllib.loads(read_plain_file(path, TOML_MAX_BYTES).decode("utf-8"))
    except FileNotFoundError as exc:
        raise BenchmarkError(path, "(file)", "missing") from exc
    except RefusedFile as exc:
        raise BenchmarkError(path, "(file)", str(exc)) from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BenchmarkError(path, "(syntax)", str(exc)) from exc


def _validate(model: type[M], data: dict, path: Path) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise BenchmarkError(path, _field_path(first["loc"]), first["msg"]) from exc


def read_patch(path: Path, field: str) -> bytes:
    """Read a unified diff, refusing files that are not one (with the file and field), and
    anything but a plain file of at most PATCH_MAX_BYTES."""
    try:
        data = read_plain_file(path, PATCH_MAX_BYTES)
    except FileNotFoundError as exc:
        raise BenchmarkError(path, field, "patch file is missing") from exc
    except RefusedFile as exc:
        raise BenchmarkError(path, field, str(exc)) from exc
    try:
        parsed = patches.parse(data)
    except UnidiffParseError as exc:
        raise BenchmarkError(path, field, f"not a unified diff: {exc}") from exc
    if not len(parsed):
        raise BenchmarkError(path, field, "not a unified diff: no file changes found")
    for patched in parsed:
        for name in (patched.source_file, patched.target_file):
            if patches.escapes_program(name):
                raise BenchmarkError(path, field, f"patch path escapes the program: {name!r}")
    return data if data.endswith(b"\n") else data + b"\n"


def _inside(folder: Path, rel: str, path: Path, field: str) -> Path:
    target = (folder / rel).resolve()
    if not target.is_relative_to(folder.resolve()):
        raise BenchmarkError(path, field, f"{rel!r} points outside {folder}")
    return target


def _dockerfile(folder: Path, spec: InstanceSpec, toml_path: Path) -> Path:
    """The instance's Dockerfile: relative to its folder, inside the benchmark (instances
    of one benchmark share `environments/<name>/Dockerfile`), a regular file."""
    rel = spec.environment.dockerfile or ""
    root = folder.parent.parent if folder.parent.name == "instances" else folder
    path = folder / rel
    if not path.resolve().is_relative_to(root.resolve()):
        raise BenchmarkError(toml_path, "environment.dockerfile", f"{rel!r} points outside the benchmark {root}")
    if path.is_symlink() or not path.is_file():
        raise BenchmarkError(toml_path, "environment.dockerfile", f"{path} is not a file")
    return path.resolve()


def load_instance(folder: Path) -> Instance:
    """Load and validate one instance folder."""
    toml_path = folder / "instance.toml"
    spec = _validate(InstanceSpec, _read_toml(toml_path), toml_path)
    if spec.id != folder.name:
        raise BenchmarkError(toml_path, "id", f"{spec.id!r} differs from its folder name {folder.name!r}")
    program = _inside(folder, spec.program.path, toml_path, "program.path")
    if spec.environment.image is not None:
        if "program" in spec.model_fields_set:
            raise BenchmarkError(toml_path, "program.path", "an image instance's program is read out of its image "
                                 "(environment.program_in_image): drop [program]")
    elif not program.is_dir():
        raise BenchmarkError(toml_path, "program.path", f"{program} is not a folder")
    if spec.environment.dockerfile is not None:
        spec = spec.model_copy(update={"environment": spec.environment.bound(_dockerfile(folder, spec, toml_path))})
    if not (folder / "instruction.md").is_file():
        raise BenchmarkError(folder / "instruction.md", "(file)", "missing")
    reference = read_patch(folder / "reference.diff", "reference")
    checks = read_patch(_inside(folder, spec.checks.patch, toml_path, "checks.patch"), "checks.patch")
    _check_failed_checks(spec, toml_path)
    candidates = tuple(
        Candidate(
            id=c.id,
            label=c.label,
            note=c.note,
            patch=read_patch(_inside(folder, c.patch, toml_path, f"candidates.{i}.patch"), f"candidates.{i}.patch"),
            failed_checks=None if c.failed_checks is None else frozenset(c.failed_checks),
            provenance=c.provenance,
        )
        for i, c in enumerate(spec.candidates)
    )
    return Instance(spec=spec, folder=folder, reference=reference, checks_patch=checks, candidates=candidates)


def _check_failed_checks(spec: InstanceSpec, toml_path: Path) -> None:
    """A recorded failure is one of the official checks, of an invalid candidate (a valid
    one fails none)."""
    official = set(spec.checks.fail_to_pass) | set(spec.checks.pass_to_pass)
    for i, cand in enumerate(spec.candidates):
        if cand.failed_checks is None:
            continue
        field = f"candidates.{i}.failed_checks"
        if cand.label != "invalid":
            raise BenchmarkError(toml_path, field, f"candidate {cand.id!r} is {cand.label}: only an invalid "
                                 "candidate fails official checks")
        unknown = sorted(set(cand.failed_checks) - official)
        if unknown:
            raise BenchmarkError(toml_path, field, f"{unknown} are not in checks.fail_to_pass or checks.pass_to_pass")


def _check_package(folder: Path) -> None:
    """Refuse a suite package holding anything but folders and plain files (a symlink, a
    FIFO, a device, a socket), a file over SUITE_FILE_MAX_BYTES, or more in all than the
    SUITE_MAX_* bounds. Entries are only lstat'ed, never opened, and the walk keeps its own
    stack (no recursion), so a package cannot block, flood or crash the loader."""
    pending: list[tuple[Path, int]] = [(folder, 0)]
    entries = total = 0
    while pending:
        current, depth = pending.pop()
        with os.scandir(current) as found:
            names = sorted(entry.name for entry in found)
        for name in names:
            path = current / name
            info = os.lstat(path)
            entries += 1
            if entries > SUITE_MAX_ENTRIES:
                raise BenchmarkError(folder, "(files)", f"the suite holds over {SUITE_MAX_ENTRIES} entries")
            if stat.S_ISLNK(info.st_mode):
                raise BenchmarkError(path, "(file)", "suites may not hold symlinks")
            if stat.S_ISDIR(info.st_mode):
                if depth + 1 > SUITE_MAX_DEPTH:
                    raise BenchmarkError(path, "(file)", f"folders nested over {SUITE_MAX_DEPTH} deep")
                pending.append((path, depth + 1))
                continue
            if not stat.S_ISREG(info.st_mode):
                raise BenchmarkError(path, "(file)", f"{file_kind(info.st_mode)}: suites may hold only plain files "
                                     "and folders")
            if info.st_size > SUITE_FILE_MAX_BYTES:
                raise BenchmarkError(path, "(file)", f"{info.st_size} bytes, over the bound of {SUITE_FILE_MAX_BYTES}")
            total += info.st_size
            if total > SUITE_MAX_BYTES:
                raise BenchmarkError(folder, "(files)", f"the suite holds over {SUITE_MAX_BYTES} bytes")


def load_suite(folder: Path, configuration: str, instance_id: str) -> Suite:
    """Load one suite package, rejecting symlinks and anything that is not a plain file or
    a folder, and packages past the size bounds (`_check_package`)."""
    _check_package(folder)
    spec = SuiteSpec()
    suite_toml = folder / "suite.toml"
    if suite_toml.exists():
        spec = _validate(SuiteSpec, _read_toml(suite_toml), suite_toml)
    entry = spec.entry
    files = tuple(p.relative_to(folder).as_posix() for p in tree_files(folder) if p.name != "suite.toml")
    if not files:
        raise BenchmarkError(folder, "(files)", "the suite is empty")
    if entry == DEFAULT_ENTRY and "run_tests.sh" not in files:
        raise BenchmarkError(folder / "run_tests.sh", "(file)", "missing: the default entry runs it")
    patch = None
    if spec.patch is not None:
        if spec.patch not in files:
            raise BenchmarkError(suite_toml, "patch", f"{spec.patch!r} is not a file of the suite")
        patch = read_patch(folder / spec.patch, "patch")
    return Suite(configuration=configuration, instance_id=instance_id, folder=folder, entry=entry, files=files,
                 tests=spec.tests, patch=patch)


def load_benchmark(root: Path | str, configurations: tuple[str, ...] = (), *, announce: bool = True) -> Benchmark:
    """Load `root/instances/*` and `root/suites/<configuration>/<instance_id>`; say what was
    loaded at INFO unless `announce` is False (a check before the load that says it).

    Only the named configurations are loaded when some are given. A suite folder naming an
    unknown instance is an error: it usually means a typo that would silently score 0.
    """
    root = Path(root)
    inst_root = root / "instances"
    if not inst_root.is_dir():
        raise BenchmarkError(inst_root, "(folder)", "missing: a benchmark holds instances/<id>/")
    instances = {f.name: load_instance(f) for f in sorted(inst_root.iterdir()) if f.is_dir()}
    if not instances:
        raise BenchmarkError(inst_root, "(folder)", "holds no instance")
    suite_root = root / "suites"
    found = sorted(d.name for d in suite_root.iterdir() if d.is_dir()) if suite_root.is_dir() else []
    for name in found:
        if not re.fullmatch(CONFIGURATION, name):
            raise BenchmarkError(suite_root / name, "configuration", f"{name!r} is not a valid name")
    chosen = tuple(configurations) or tuple(found)
    for name in chosen:
        if name not in found:
            raise BenchmarkError(suite_root / name, "configuration", "no such configuration folder")
    suites: dict[tuple[str, str], Suite] = {}
    errors: dict[tuple[str, str], str] = {}
    for name in chosen:
        for folder in sorted(d for d in (suite_root / name).iterdir() if d.is_dir()):
            if folder.name not in instances:
                raise BenchmarkError(folder, "instance_id", f"no instance {folder.name!r} in {inst_root}")
            try:
                suites[(name, folder.name)] = load_suite(folder, name, folder.name)
            except BenchmarkError as exc:  # one bad package must not stop the others
                log.error("suite rejected: %s", exc)
                errors[(name, folder.name)] = str(exc)
    log.log(logging.INFO if announce else logging.DEBUG,
            "loaded %d instances, %d configurations, %d suites from %s", len(instances), len(chosen), len(suites), root)
    return Benchmark(root=root, instances=instances, suites=suites, configurations=chosen, suite_errors=errors)
