"""Rows of SWE-bench files, each read and checked on its own, and what a batch of them reports.

Task rows (`import swebench`) and prediction rows (`import suites`) come as JSON Lines or as
a JSON list, and real ones are messy (README of the real data): list fields JSON-encoded as
strings, versions stored as numbers. So a row is read and validated on its own, and a bad
row is an Issue naming the row and the field while the rest of the batch goes on.
"""

from __future__ import annotations

import json
import logging
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from testprism.tasks.model.benchmark_format import NAME
from testprism.tasks.model.patches import DiffError
from testprism.tasks.sandbox.base import SandboxError, SuiteNotInstalled
from testprism.tasks.sandbox.environment import EnvironmentBuildError

log = logging.getLogger(__name__)


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

    def attempt(self, row: str, instance_id: str, run: Callable[[], str]) -> None:
        """Import one row (or task folder) with `run`, which returns `imported` or `exists`.
        A RowError or DiffError is an issue naming its field; a failure of the machine (git,
        the file system, the sandbox, an environment build) is one naming the error, and the
        batch goes on either way."""
        try:
            status = run()
        except (RowError, DiffError) as exc:
            issue = Issue(row, instance_id, exc.field, str(exc))
        except (OSError, subprocess.SubprocessError, EnvironmentBuildError, SandboxError, SuiteNotInstalled) as exc:
            issue = Issue(row, instance_id, "(import)", f"{type(exc).__name__}: {exc}")
        else:
            (self.imported if status == "imported" else self.existing).append(instance_id)
            return
        log.error("%s", issue)
        self.issues.append(issue)


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


Model = TypeVar("Model", bound=BaseModel)


def validated(model: type[Model], data: Any, source: str = "", hint: str = "") -> Model:
    """`data` as `model`, or RowError naming its first failing field and what it must hold
    (after "`source` row:" when given, `hint` after it: the way on)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        field, message = validation_field(exc)
        raise RowError(field, f"{source} row: {message}{hint}" if source else message) from exc


def json_encoded(value: Any, what: str) -> Any:
    """A field as published: published rows hold lists and mappings as JSON-encoded strings
    (SWE-bench's FAIL_TO_PASS, some copies of Multi-SWE-bench's f2p_tests), so a string is
    decoded; ValueError saying the field is neither `what` nor a JSON-encoded one."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise ValueError(f"neither {what} nor a JSON-encoded one: {exc}") from exc


def own_folder(value: str) -> str:
    """An instance id names the instance's folder (and SWE-bench Pro's run_scripts/<id>/):
    NAME's characters (the field's pattern), and never `.` or `..`, which name no folder of
    their own."""
    if value in (".", ".."):
        raise ValueError(f"{value!r} names no folder of its own")
    return value


class PublishedRow(BaseModel):
    """The fields SWE-bench's layout and SWE-bench Pro's share (the image route's ProRow):
    the instance, its repository and commit, the reference and the checks; others ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    instance_id: str = Field(pattern=NAME)
    repo: str = Field(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
    base_commit: str = Field(pattern=r"^[0-9a-fA-F]{7,40}$")
    patch: str
    test_patch: str

    _own_folder = field_validator("instance_id")(own_folder)


class SweBenchRow(PublishedRow):
    """The fields of a SWE-bench row this importer uses; others are ignored."""

    FAIL_TO_PASS: tuple[str, ...] = Field(min_length=1)
    PASS_TO_PASS: tuple[str, ...]
    version: str = ""
    #: when the row names one (some multilingual copies do), it must be its recipe's
    language: str = ""
    problem_statement: str = Field(min_length=1)  # hints_text is left out: comments often hold the fix

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", mode="before")
    @classmethod
    def _json_list(cls, value: Any) -> Any:
        return json_encoded(value, "a list")

    @field_validator("version", mode="before")
    @classmethod
    def _version_text(cls, value: Any) -> Any:
        # Some copies store 0.2 or 1.1 as numbers.
        return str(value) if isinstance(value, int | float) else value
