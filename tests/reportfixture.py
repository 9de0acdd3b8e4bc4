"""The report as it was read before the report pipe (tasks/sandbox/report_pipe.py): the
file a run left at `out/junit.xml`, read after the run. The controls of the attacks the
pipe defeats put it back in every backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from testprism.tasks.sandbox import local
from testprism.tasks.sandbox.base import REPORT_MAX_BYTES
from testprism.tasks.sandbox.docker import fresh, reused
from testprism.tasks.sandbox.nofollow import read_file


class FileReport:
    """ReportPipe's interface over the file the run left, read once the run has ended."""

    def __init__(self, ws: Path) -> None:
        self.ws = ws

    def collected(self) -> bytes | None:
        return read_file(self.ws, ("out", "junit.xml"), REPORT_MAX_BYTES)

    def close(self) -> None:
        pass


def reports_as_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every backend reads the report as a file after the run (the control)."""
    for module in (local, fresh, reused):
        monkeypatch.setattr(module, "ReportPipe", FileReport)
