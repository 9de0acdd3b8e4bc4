"""The one reader of the project's TOML config files (curate, pipeline): a file validated by
a pydantic model, and a bad one reported in one line naming the file and the field (an error
type that subclasses BenchmarkError, so flows/errors.py prints it and exits 2)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from testprism.tasks.model.input_error import BenchmarkError

M = TypeVar("M", bound=BaseModel)


def read_config(path: Path, model: type[M], error: type[BenchmarkError]) -> M:
    """`path` parsed as TOML and validated by `model`; the first problem raised as `error`."""
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise error(path, "(file)", f"cannot read: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise error(path, "(syntax)", str(exc)) from exc
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "(root)"
        raise error(path, field, first["msg"]) from exc
