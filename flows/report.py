"""The report flow: a scored store → one self-contained HTML file, announced in the Prefect
UI by a markdown artifact that points at it. Thin wiring of `tasks.report`."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated, Optional

import typer
from prefect import flow
from prefect.artifacts import create_markdown_artifact

from testprism.storage import Store
from testprism.tasks.model.benchmark import load_benchmark
from testprism.tasks.report.data import scored_store
from testprism.tasks.report.html import artifact_markdown, write_report

log = logging.getLogger(__name__)


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


def report_command(
    store: Annotated[Path, typer.Argument(help="store root, after `testprism score`", file_okay=False)],
    out: Annotated[Path, typer.Option(help="the HTML file to write", dir_okay=False)] = Path("report.html"),
    benchmark: Annotated[
        Optional[Path], typer.Option(help="benchmark folder: show candidate diffs and notes in the audit")
    ] = None,
) -> None:
    """Write a self-contained HTML report of a scored store (opens offline, no network)."""
    scored_store(store)  # the inputs, checked before the flow starts (flows.errors)
    if benchmark:
        load_benchmark(benchmark)
    path = report_flow(store=str(store), out=str(out), benchmark=str(benchmark) if benchmark else None)
    log.info("report written to %s", path)
