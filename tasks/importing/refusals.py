"""The rows an import refused, kept beside the benchmark's instances, so that the release
gate (tasks/gate/verdict.py) gives each its verdict, `refused`, with the reason.

An instance folder exists only for a row that imported; a refused row leaves nothing in
`instances/`, and its reason lived only in the import's printed table. `refused.json` at the
benchmark's root keeps it: one entry per refused row (its instance id, or the row's file and
line when no id could be read), with the rows file and line, the field at fault, the reason,
the source and the language the row declares. Each import updates it: a row refused again
replaces its entry, a row imported (or already there) removes its own, the others stay, so
imports of several files into one benchmark keep every refusal. Written to a temporary file
and renamed: a reader never sees half of it.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from testprism.tasks.importing.language import language_named
from testprism.tasks.importing.rows import ImportReport
from testprism.tasks.model.input_error import BenchmarkError

REFUSALS = "refused.json"


def read_refusals(root: Path) -> dict[str, dict[str, str]]:
    """{instance id or row: {row, field, reason, source, language}} of the benchmark at
    `root`; empty when no import refused a row. BenchmarkError naming the file and field
    when it is not such a mapping."""
    path = root / REFUSALS
    if not path.is_file():
        return {}
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BenchmarkError(path, "(file)", f"not JSON: {exc}") from exc
    rows = data.get("rows") if isinstance(data, dict) else None
    if not isinstance(rows, dict) or not all(isinstance(v, dict) for v in rows.values()):
        raise BenchmarkError(path, "rows", "not a mapping of refused rows")
    return {key: {k: str(v) for k, v in entry.items()} for key, entry in rows.items()}


def declared_language(data: dict[str, Any] | None) -> str:
    """The language a row declares (SWE-bench copies' `language`, Multi-SWE-bench's `lang`,
    Pro's `repo_language`), as testprism names it where it can; '?' when it declares none."""
    for field in ("language", "lang", "repo_language"):
        value = (data or {}).get(field)
        if isinstance(value, str) and value.strip():
            return language_named(value) or value.strip()
    return "?"


def record_refusals(out: Path, report: ImportReport, source: str, languages: dict[str, str] | None = None) -> None:
    """Update `out`/refused.json with this import (module docstring). `languages`: the
    language each refused row declares, by its key, where it declares one."""
    current = read_refusals(out)
    for key in (*report.imported, *report.existing):
        current.pop(key, None)
    landed = set(report.imported) | set(report.existing)
    refused_now: set[str] = set()
    for issue in report.failed:
        key = issue.instance_id or issue.row
        if key in landed or key in refused_now:  # a second row of an id: the first row's fate stands
            continue
        refused_now.add(key)
        current[key] = {"row": issue.row, "field": issue.field, "reason": issue.message, "source": source,
                        "language": (languages or {}).get(key, "?")}
    if not current and not (out / REFUSALS).exists():
        return
    out.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=out, prefix=f".{REFUSALS}.")
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        json.dump({"rows": dict(sorted(current.items()))}, stream, indent=1, ensure_ascii=False)
        stream.write("\n")
    os.replace(temporary, out / REFUSALS)
