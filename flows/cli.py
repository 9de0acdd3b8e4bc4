"""The `testprism` command line, every command of it: parse, check the inputs (so a mistake
ends in one line, flows/errors.py), set up display, call a flow. No domain logic."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Annotated, Optional

import polars as pl
import typer
from rich.console import Console
from rich.logging import RichHandler
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from testprism.flows import progress
from testprism.flows.errors import Commands, known_backend
from testprism.flows.images import images_app
from testprism.flows.importing import import_app
from testprism.flows.runner import open_inputs
from testprism.storage.schema import METRICS
from testprism.tasks.collect.candidate import NEAR_DUPLICATE_COSINE
from testprism.tasks.collect.panel import PanelMode, PanelRule
from testprism.tasks.model.benchmark import load_benchmark
from testprism.tasks.report.data import scored_store
from testprism.tasks.score.scores import scorable_store
from testprism.tasks.model.state import DEFAULT_FUZZ
from testprism.tasks.model.workdir import WorkPaths, default_work_root

#: what `testprism --help` opens with: what the tool does for its user
USAGE = (
    "How reliable are generated test suites? testprism replays each suite on the buggy program, the reference "
    "fix and hidden panels of valid and invalid candidate patches, in a sandbox, and scores every configuration "
    "jointly (GRR, CAR, WDR, F1, JVR, with intervals).\n\n"
    "Typical sequence: import (SWE-bench rows, test patches) -> collect (label candidates, choose panels) -> "
    "replay -> score -> report. `testprism demo` runs it all on the bundled benchmark."
)

app = typer.Typer(cls=Commands, add_completion=False, no_args_is_help=True, help=USAGE)
app.add_typer(import_app, name="import")
app.add_typer(images_app, name="images")
console = Console(stderr=True)
out = Console(width=max(120, Console().width))
log = logging.getLogger("testprism")

BUNDLED = Path(__file__).resolve().parents[1] / "examples"


class RichProgress:
    """The rich progress bar behind flows.progress."""

    def __init__(self, bar: Progress) -> None:
        self.bar, self.task = bar, None

    def start(self, total: int, description: str) -> None:
        self.task = self.bar.add_task(description, total=total)

    def advance(self, n: int) -> None:
        if self.task is not None:
            self.bar.advance(self.task, n)


@app.callback()
def main(verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False) -> None:
    # Our own handler on our own logger: importing Prefect configures the root logger, so a
    # root-level basicConfig would silently do nothing.
    if not log.handlers:
        log.addHandler(RichHandler(console=console, show_path=False))
    log.setLevel(logging.DEBUG if verbose else logging.INFO)
    log.propagate = False
    for noisy in ("prefect", "httpx", "distributed", "asyncio"):
        logging.getLogger(noisy).setLevel(logging.INFO if verbose else logging.WARNING)


def _cell(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _leaderboard_table(board: pl.DataFrame, title: str) -> Table:
    """Point estimates, and JVR with its 95% bootstrap interval; best JVR first."""
    table = Table(title=title)
    table.add_column("configuration")
    table.add_column("n", justify="right")
    for metric in METRICS[:-1]:
        table.add_column(metric, justify="right")
    table.add_column("jvr [95% CI]", justify="right")
    for rec in board.sort(["jvr", "configuration"], descending=[True, False], nulls_last=True).iter_rows(named=True):
        jvr = f"{_cell(rec['jvr'])} [{_cell(rec.get('jvr_lo'))}, {_cell(rec.get('jvr_hi'))}]"
        table.add_row(rec["configuration"], str(rec["n_instances"]), *(_cell(rec[m]) for m in METRICS[:-1]), jvr)
    return table


def _replay(benchmark: Path, store: Path, configurations: list[str], backend: str, workers: int,
            dask_address: str | None, work: Path | None, timeout: float, trusted: bool, unsafe: bool,
            retry_errors: bool = False, concurrency: int | None = None, patch_fuzz: int = DEFAULT_FUZZ) -> None:
    from testprism.flows.replay import replay_flow

    open_inputs(str(benchmark), str(store), tuple(configurations), backend, work or default_work_root(),
                trusted=trusted, unsafe=unsafe)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=False) as bar, progress.reporting_to(RichProgress(bar)):
        summary = replay_flow(
            benchmark=str(benchmark), store=str(store), configurations=configurations or None, backend=backend,
            workers=workers, dask_address=dask_address, work=str(work) if work else None, timeout_s=timeout,
            trusted=trusted, unsafe=unsafe, retry_errors=retry_errors, concurrency=concurrency,
            patch_fuzz=patch_fuzz,
        )
    log.info(
        "replay: %d planned, %d already stored, %d executed; outcomes %s; isolation: %s",
        summary.planned, summary.skipped, summary.executed, summary.outcomes or "{}", summary.isolation,
    )


def _score(store: Path, benchmark: Path | None = None, work: Path | None = None, backend: str = "local",
           trusted: bool = False) -> pl.DataFrame:
    from testprism.flows.score import score_flow

    scorable_store(str(store))
    if benchmark:
        open_inputs(str(benchmark), str(store), (), backend, work or default_work_root(), trusted=trusted, unsafe=False)
    board = score_flow(store=str(store), benchmark=str(benchmark) if benchmark else None,
                       work=str(work) if work else None, backend=backend, trusted=trusted)
    out.print(_leaderboard_table(board, f"leaderboard ({store})"))
    return board


BackendOpt = Annotated[str, typer.Option(help="sandbox backend: local (bubblewrap) or docker", callback=known_backend)]
WorkersOpt = Annotated[int, typer.Option(help="> 1: run batches on a local Dask cluster of this many workers")]
DaskOpt = Annotated[Optional[str], typer.Option(help="scheduler address of an existing Dask cluster")]
WorkOpt = Annotated[Optional[Path], typer.Option(help="working area for environments and states (a cache)")]
TimeoutOpt = Annotated[float, typer.Option(help="wall-clock limit of one run, seconds")]
#: the one `--patch-fuzz` of replay and collect: the fuzz of the `patch` fallback (SWE-bench: 5)
PatchFuzzOpt = Annotated[int, typer.Option(
    min=0, help="fuzz of the `patch --batch -p1` fallback after `git apply`, for every patch (SWE-bench uses 5)")]


@app.command()
def replay(
    benchmark: Annotated[Path, typer.Argument(help="benchmark folder (instances/, suites/)")],
    store: Annotated[Path, typer.Option(help="store root", file_okay=False)],
    configuration: Annotated[list[str], typer.Option(help="only these configurations (repeatable)")] = [],  # noqa: B006
    backend: BackendOpt = "local",
    workers: WorkersOpt = 1,
    dask_address: DaskOpt = None,
    work: WorkOpt = None,
    timeout: TimeoutOpt = 300.0,
    unsafe_no_sandbox: Annotated[bool, typer.Option(help="run untrusted suites without isolation")] = False,
    retry_errors: Annotated[bool, typer.Option(help="also redo stored timeouts, unstable and overflowing runs")] = False,
    concurrency: Annotated[Optional[int], typer.Option(
        help="runs at once per worker (default: the backend's safe concurrency, split among local workers)")] = None,
    patch_fuzz: PatchFuzzOpt = DEFAULT_FUZZ,
) -> None:
    """Replay every suite on buggy, reference and every candidate; skip runs already settled.

    Runs that ended in infrastructure errors (sandbox_error) are always redone."""
    trusted = benchmark.resolve() == BUNDLED
    _replay(benchmark, store, configuration, backend, workers, dask_address, work, timeout, trusted, unsafe_no_sandbox,
            retry_errors, concurrency, patch_fuzz)


@app.command()
def score(
    store: Annotated[Path, typer.Argument(help="store root")],
    benchmark: Annotated[Optional[Path], typer.Option(help="also measure coverage of the reference change")] = None,
    backend: BackendOpt = "local",
    work: WorkOpt = None,
) -> None:
    """Compute the leaderboard (with bootstrap intervals) from the stored runs and print it."""
    trusted = benchmark is not None and benchmark.resolve() == BUNDLED
    _score(store, benchmark, work, backend, trusted)


PredictionsOpt = Annotated[list[Path], typer.Option(
    help="SWE-bench prediction file (JSON lines, JSON list or preds.json); repeatable",
    exists=True, dir_okay=False, readable=True)]
DiffsOpt = Annotated[list[Path], typer.Option(help="folder of DIR/<instance_id>/<name>.diff; repeatable",
                                              exists=True, file_okay=False)]
PanelOpt = Annotated[PanelMode, typer.Option(
    help="testprism: reference + 4 valid + 5 invalid, chosen for diversity; pool: every deduplicated candidate")]
OutOpt = Annotated[Optional[Path], typer.Option(help="write the panels here as a benchmark folder to replay")]
NearOpt = Annotated[float, typer.Option(
    help="cosine of token counts at or above which two candidates of one label are near duplicates")]
DistanceOpt = Annotated[float, typer.Option(
    help="testprism panel: the valid candidates' mean pairwise AST distance must exceed it")]
JaccardOpt = Annotated[float, typer.Option(
    help="testprism panel: the most two invalid candidates' failed checks may overlap (Jaccard)")]


@app.command()
def collect(
    benchmark: Annotated[Path, typer.Argument(help="benchmark folder (instances/ with program, reference, checks)")],
    store: Annotated[Path, typer.Option(help="store root", file_okay=False)],
    predictions: PredictionsOpt = [],  # noqa: B006
    diffs: DiffsOpt = [],  # noqa: B006
    panel: PanelOpt = PanelMode.TESTPRISM,
    out: OutOpt = None,
    near_duplicate: NearOpt = NEAR_DUPLICATE_COSINE,
    min_valid_distance: DistanceOpt = PanelRule.min_valid_distance,
    max_invalid_jaccard: JaccardOpt = PanelRule.max_invalid_jaccard,
    backend: BackendOpt = "local",
    workers: WorkersOpt = 1,
    dask_address: DaskOpt = None,
    work: WorkOpt = None,
    timeout: Annotated[float, typer.Option(help="wall-clock limit of one run of the checks, seconds")] = 300.0,
    unsafe_no_sandbox: Annotated[bool, typer.Option(help="run untrusted patches without isolation")] = False,
    patch_fuzz: PatchFuzzOpt = DEFAULT_FUZZ,
) -> None:
    """Ingest candidate patches, label them by the official checks, and choose panels."""
    # Only the bundled benchmark's own code is trusted: patches from outside never are.
    trusted = benchmark.resolve() == BUNDLED and not predictions and not diffs
    open_inputs(str(benchmark), str(store), (), backend, work or default_work_root(), trusted=trusted,
                unsafe=unsafe_no_sandbox)
    from testprism.flows.collect import collect_flow

    summary = collect_flow(
        benchmark=str(benchmark), store=str(store), predictions=[str(p) for p in predictions],
        diffs=[str(d) for d in diffs], panel=panel, out=str(out) if out else None, backend=backend, workers=workers,
        dask_address=dask_address, work=str(work) if work else None, timeout_s=timeout, near_duplicate=near_duplicate,
        rule=PanelRule(min_valid_distance=min_valid_distance, max_invalid_jaccard=max_invalid_jaccard),
        trusted=trusted, unsafe=unsafe_no_sandbox, patch_fuzz=patch_fuzz,
    )
    agree, compared = summary.agreement
    log.info("collect %s: %d verifications run, %d reused from the store; %d panels%s", summary.flow_run,
             summary.executed, summary.reused, summary.panels, f" written to {summary.out}" if summary.out else "")
    if compared:
        log.info("labels agree with the sources' on %d of %d candidates (plausibility, not ground truth)",
                 agree, compared)
    if summary.out:
        log.info("next: testprism replay %s --store %s", summary.out, store)


@app.command()
def report(
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
    from testprism.flows.report import report_flow

    path = report_flow(store=str(store), out=str(out), benchmark=str(benchmark) if benchmark else None)
    log.info("report written to %s", path)


@app.command()
def sweep(work: WorkOpt = None) -> None:
    """Remove what crashed or killed runs left behind, for every backend: workspaces of
    processes that are gone, and their containers (docker). Live replays are left alone."""
    from testprism.tasks.sandbox.base import sweep_all

    for name, removed in sweep_all(WorkPaths(work or default_work_root())).items():
        if isinstance(removed, int):
            log.info("%s: %d leftovers removed", name, removed)
        else:
            log.warning("%s: not swept: %s", name, removed)


@app.command()
def demo(
    out: Annotated[Path, typer.Option(help="where the demo's store goes", file_okay=False)] = Path("demo-out"),
    backend: BackendOpt = "local",
    workers: WorkersOpt = 1,
    work: WorkOpt = None,
) -> None:
    """Replay and score the bundled benchmark (trusted code: runs even without bubblewrap)."""
    start = time.monotonic()
    from testprism.flows.report import report_flow

    _replay(BUNDLED, out, [], backend, workers, None, work, 300.0, True, False)
    _score(out, BUNDLED, work, backend, trusted=True)
    report = report_flow(store=str(out), out=str(out / "report.html"), benchmark=str(BUNDLED))
    log.info("demo finished in %.1f s; store at %s, report at %s", time.monotonic() - start, out, report)


if __name__ == "__main__":
    app()
