"""The report's "Where it ran" section: what each stage of the store ran with, its newest
run (the store's `stage_runs`, tasks/execution/stage_record.py), so that a reader of the
leaderboard sees which backend, isolation settings, limits and placement produced it."""

from __future__ import annotations

import json

from testprism.tasks.report.formatting import esc, table


def stage_runs_section(rows: list[dict] | None) -> str:
    """One line per stage: its newest run's backend, run settings, limits and version."""
    if not rows:
        return ""
    newest: dict[str, dict] = {}
    for row in rows:  # newest first (stage_runs())
        newest.setdefault(row["stage"], row)
    cells = []
    for stage, row in sorted(newest.items()):
        options = row["options"] or {}
        limits = options.get("limits") or {}
        run = {k: v for k, v in (row["run"] or {}).items() if v not in (None, {}, False)}
        cells.append([esc(stage), esc(f"{row['started_at']:%Y-%m-%d %H:%M} UTC"), esc(row["backend"] or ""),
                      esc(json.dumps(run, sort_keys=True)),
                      esc(", ".join(f"{k} {v}" for k, v in sorted(limits.items()) if k in ("timeout_s", "memory_mb",
                                                                                            "disk_mb", "cpus"))),
                      esc(options.get("policy_key", "")), esc(row["testprism_version"] or "")])
    return ('<section id="where"><h2>Where it ran</h2><p>Each stage\'s newest run, as the store recorded it when '
            "it started (<code>testprism show STORE</code> prints every field, its settings and the "
            "<code>TESTPRISM_*</code> overrides set).</p>"
            + table(["stage", "started", "backend", "run settings", "limits", "policy", "testprism"], cells, "where")
            + "</section>")
