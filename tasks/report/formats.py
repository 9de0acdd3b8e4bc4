"""The formats `testprism export` writes (tasks/report/export.py), apart from the code that
writes them (polars) because the CLI offers them as `--format`'s choices in its help."""

from __future__ import annotations

from enum import StrEnum


class ExportFormat(StrEnum):
    SWT_BENCH = "swt-bench"
    SWE_BENCH = "swe-bench"
    CSV = "csv"
    MARKDOWN = "markdown"
    LATEX = "latex"
    JSON = "json"

    @property
    def is_folder(self) -> bool:
        """The report layouts write a folder; the tables are one text."""
        return self in (ExportFormat.SWT_BENCH, ExportFormat.SWE_BENCH)
