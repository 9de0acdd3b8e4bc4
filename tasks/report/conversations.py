"""The report's conversations section: every generation run whose model conversation the
channel recorded, linked to its file in the store (gzip JSONL, one exchange a line, the
key never in it), with the requests and tokens the channel measured; `testprism select
--format chat` turns the selected ones into fine-tuning lines."""

from __future__ import annotations

from pathlib import Path

from testprism.tasks.report.data import ReportData
from testprism.tasks.report.formatting import esc, table


def conversations_section(data: ReportData) -> str:
    found = data.conversations
    if found is None:
        return ""
    rows = [[esc(r["configuration"]), esc(r["instance_id"]), esc(r["round"]), esc(r["requests"]),
             esc(r["total_tokens"]), esc(r["reason"] or "kept"),
             f'<a href="{esc(Path(r["conversation"]).resolve().as_uri())}">conversation</a>']
            for r in found.iter_rows(named=True)]
    return ('<section id="conversations"><h2>Conversations</h2><p>What each generation run said to its model '
            "and heard back, as its model channel recorded it (gzip JSONL, one exchange a line, the tokens the "
            "channel measured; the API key is never written).</p>"
            + table(["configuration", "instance", "round", "requests", "tokens", "suite", "file"], rows)
            + "</section>")
