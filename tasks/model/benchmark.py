"""A benchmark loaded (docs/benchmark-format.md): its instances and suites, each file read and
checked, and the objects the stages share (`Instance`, `Suite`, `Benchmark`).

Bad input must fail with the file and the field it concerns, before anything runs, so every
file of the benchmark is read and checked here: TOML against the format's pydantic models
(tasks/model/benchmark_format.py), patches as unified diffs, suites for symlinks and paths
that escape their folder.

Suite packages and patches are untrusted, and the harness reads them as root: every such
file is lstat'ed before it is opened and read only if it is a plain file within a size
bound (`read_plain_file`), so a FIFO (whose open blocks: it once
hung a whole replay), a device or a file of gigabytes is refused with its name instead.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import shutil
import tomllib
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel, ValidationError
from unidiff.errors import UnidiffParseError

from testprism.tasks.model import patches
from testprism.tasks.model.benchmark_format import DEFAULT_ENTRY, InstanceSpec, L, SuiteSpec
from testprism.tasks.model.hashing import digest, tree_digest, tree_files
from testprism.tasks.model.input_error import BenchmarkError
from testprism.tasks.model.outcome import Reason

log = logging.getLogger(__name__)

#: A configuration folder's name: benchmark_format.NAME's characters and `+`, which model names use
#: (`otter++`); a single path component, never `.` or `..`.
CONFIGURATION = r"^(?!\.\.?$)[A-Za-z0-9_.+-]+$"
#: Bounds on what the loader reads of untrusted input: a patch (a candidate's, a reference,
#: the checks', a suite's), a TOML file, one file of a suite package, a whole package (its
#: bytes, its entries, how deep its folders nest)
PATCH_MAX_BYTES = 16 * 1024 * 1024
TOML_MAX_BYTES = 16 * 1024 * 1024
SUITE_FILE_MAX_BYTES = 16 * 1024 * 1024
SUITE_MAX_BYTES = 64 * 1024 * 1024
SUITE_MAX_ENTRIES = 10_000
SUITE_MAX_DEPTH = 32


def run_limits(instance: Instance, limits: L) -> L:
    """The limits of the instance's runs (its official checks' and suites' alike): `limits`
    with the instance's own (`[limits]`, Harbor's task.toml) in their place."""
    own = instance.spec.limits
    return limits if own is None else own.over(limits)


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
