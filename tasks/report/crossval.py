"""The report's cross-validation section: crossval's verdicts per round, and each instance's
K×(K+2) matrix (every agent's test on the buggy program, the reference and every agent's
repair) with the flagged cells marked, so a reader sees why a test was distrusted."""

from __future__ import annotations

import polars as pl

from testprism.tasks.report.data import ReportData
from testprism.tasks.report.formatting import esc, table

VERDICTS = ("validated", "over_restrictive", "weak")


def crossval_section(data: ReportData) -> str:
    flags, cells = data.crossval_flags, data.crossval_matrix
    if flags is None or cells is None or flags.is_empty():
        return ""
    rounds = sorted(flags["round"].unique().to_list())
    summary = [[esc(r), *(esc(flags.filter((pl.col("round") == r) & (pl.col("verdict") == v)).height)
                          for v in VERDICTS)] for r in rounds]
    parts = ['<section id="crossval"><h2>Cross-validation</h2><p>Each agent\'s test on the buggy program, the '
             "reference and every agent's repair. A test that rejects a repair its sound peers and the official "
             "checks accept is over-restrictive; one that accepts a repair they reject is weak. A flagged test "
             "is reviewed against the instruction when the crossval config names a judge; the verdict is what "
             "its rule (execution, review or both-agree) makes of the two. Round 0 is the "
             "first generation, later rounds follow the feedback.</p>",
             table(["round", *VERDICTS], summary)]
    for (instance_id,), group in cells.sort("round").group_by(["instance_id"], maintain_order=True):
        parts.append(f"<h3>{esc(instance_id)}</h3>")
        for r in rounds:
            matrix = group.filter(pl.col("round") == r)
            if matrix.is_empty():
                continue
            verdict = {row["test"]: row for row in flags.filter((pl.col("round") == r)
                                                               & (pl.col("instance_id") == instance_id))
                       .iter_rows(named=True)}
            states = list(dict.fromkeys(matrix["state"]))
            outcome = {(row["test"], row["state"]): row["outcome"] for row in matrix.iter_rows(named=True)}
            rows = []
            for test in dict.fromkeys(matrix["test"]):
                flag = verdict.get(test, {})
                marked = [f"<b>{esc(outcome.get((test, s), '—'))}</b>" if flag.get("evidence") == s
                          else esc(outcome.get((test, s), "—")) for s in states]
                rows.append([esc(test), *marked, esc(flag.get("verdict", "")), esc(flag.get("detail", "")),
                             _reviewed(flag)])
            parts.append(f"<p>round {esc(r)}</p>" + table(["test \\ state", *map(esc, states), "verdict", "why",
                                                           "review"], rows, "crossval"))
    return "".join(parts) + "</section>"


def _reviewed(flag: dict) -> str:
    """The review beside the verdict: what execution said when the rule changed it, the
    judge's verdict and rationale (empty: not reviewed; older stores have no columns)."""
    review, rationale = flag.get("review"), flag.get("review_rationale")
    if not (review or rationale):
        return ""
    changed = (f"execution: {esc(flag['execution_verdict'])}; " if flag.get("execution_verdict")
               and flag["execution_verdict"] != flag.get("verdict") else "")
    return f"{changed}<b>{esc(review or 'no answer')}</b> ({esc(flag.get('review_model') or '')}): {esc(rationale or '')}"
