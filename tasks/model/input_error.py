"""The error of an input file that is wrong: its message names the file and the field, in one
line (flows/errors.py prints it and exits 2). The base of every such error (recipes,
strategies, config files), apart from benchmark.py so that raising or subclassing it does
not load the benchmark loader (the CLI's `--help` imports a strategy's settings, issue 32)."""

from __future__ import annotations

from pathlib import Path


class BenchmarkError(ValueError):
    """A benchmark file is invalid. The message names the file and the field."""

    def __init__(self, path: Path, field: str, message: str) -> None:
        self.path, self.field = path, field
        super().__init__(f"{path}: field {field}: {message}")
