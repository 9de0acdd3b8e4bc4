"""The report's gate section: the newest release gate verdict of every row the store holds
one for (`testprism check`, docs/gate.md), counted per source and language, and each row
that fails with its reason. Absent when no gate was run into the store."""

from __future__ import annotations

import polars as pl

from testprism.tasks.gate.store import gate_table
from testprism.tasks.report.data import ReportData
from testprism.tasks.report.formatting import esc, table


def gate_section(data: ReportData) -> str:
    if data.gate is None or data.gate.is_empty():
        return ""
    counts = gate_table(data.gate)
    rows = [[esc(v) for v in row] for row in counts.iter_rows()]
    failing = data.gate.filter(pl.col("verdict") != "ok").sort("instance_id")
    failed = [[esc(r["instance_id"]), esc(r["verdict"]), esc(r["detail"] or ""), esc(r["gate_run"])]
              for r in failing.iter_rows(named=True)]
    return ('<section id="gate"><h2>Release gate</h2><p>Per row, its newest gate verdict: <code>ok</code> when '
            "every FAIL_TO_PASS check fails and every PASS_TO_PASS check passes on the buggy program, every check "
            "passes on the reference, and the empty patch resolves nothing; otherwise the reason. Rows that fail "
            "are left out of panels, replays and the leaderboard unless asked (--include-failed-gate).</p>"
            + table(counts.columns, rows, "gate")
            + (table(["instance", "verdict", "detail", "gate run"], failed, "gate-failed") if failed else "")
            + "</section>")
