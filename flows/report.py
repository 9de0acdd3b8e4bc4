"""The report flow: a scored store → one self-contained HTML file, announced in the Prefect
UI by a markdown artifact that points at it. Thin wiring of tasks/report/."""

from __future__ import annotations

from prefect import flow
from prefect.artifacts import create_markdown_artifact

from testprism.storage import Store
from testprism.tasks.report.html import artifact_markdown, write_report


@flow(name="report")
def report_flow(store: str, out: str, benchmark: str | None = None) -> str:
    """Write the report of `store` to `out`; `benchmark` adds candidate diffs and notes to
    the disagreement audit. Returns the report's path."""
    path = write_report(store, out, benchmark)
    create_markdown_artifact(
        key="report",
        markdown=artifact_markdown(path, Store(store).read_table("leaderboard")),
        description=f"testprism report of {store}",
    )
    return str(path)
