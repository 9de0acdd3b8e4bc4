"""What every command module of the CLI shares: the typer groups commands register on, the
consoles, the options several commands declare alike, and the few lines a command ends with.
Each command group is a module of its own (flows/cli_stages.py, cli_pipeline.py, cli_import.py,
cli_images.py); flows/cli.py is the `testprism` app that gathers them."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from testprism.flows import progress
from testprism.flows.command_group import Commands
from testprism.flows.errors import known_backend

if TYPE_CHECKING:
    import polars as pl

    from testprism.tasks.execution.run_settings import RunSettings
    from testprism.tasks.replay.settings import ReplaySettings
    from testprism.tasks.score.settings import ScoreSettings


def _group(cls: type[Commands] = Commands, **settings: object) -> typer.Typer:
    """A typer app of the CLI. Its help is click's plain text: typer's rich panels cost about
    0.1 s of imports (markdown-it, pygments) and drawing on every `--help`, a third of the
    0.3 s budget (docs/performance.md, "CLI start")."""
    return typer.Typer(cls=cls, add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                       **settings)  # type: ignore[arg-type]



commands = _group()
import_app = _group(
    help="Bring published files into the benchmark format: SWE-bench rows, Harbor task folders and exercise "
         "tracks as instances, generated test patches as suites. A bad row (or task) never stops a batch: every "
         "issue is listed with its row and field, and the exit status is non-zero when nothing was imported "
         "(or, with --strict, on any issue).",
)
images_app = _group(help="Docker images of the docker backend: one per environment, on a local base image.")
commands.add_typer(import_app, name="import")
commands.add_typer(images_app, name="images")
console = Console(stderr=True)
out = Console(width=max(120, Console().width))
log = logging.getLogger("testprism")


VerboseOpt = Annotated[bool, typer.Option(
    "--verbose", "-v", help="also Prefect's and Dask's own log lines, debug lines and tracebacks")]




def _finish(title: str, lines: list[str], next_command: str | None = None) -> None:
    """The few lines a command ends with: what it did, and the command to run next. With a
    Prefect server configured, where its flow runs are (their names and logs)."""
    from rich.markup import escape
    from rich.panel import Panel

    body = [escape(line) for line in lines]
    if next_command:
        body.append(f"[bold]next:[/] {escape(next_command)}")
    server = os.environ.get("PREFECT_API_URL")
    if server:
        body.append(escape(f"flow runs and their logs: {server.removesuffix('/api')}/runs"))
    console.print(Panel("\n".join(body), title=escape(title), title_align="left", expand=False))


def _cell(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _leaderboard_table(board: pl.DataFrame, title: str) -> Table:
    """Point estimates, and JVR with its 95% bootstrap interval; best JVR first."""
    from testprism.storage.schema import METRICS

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


def _print_taxonomy(store: Path) -> None:
    """The failure taxonomy's count and share of each kind per configuration, and pooled
    (`scores/failure_taxonomy_shares`: tasks/score/taxonomy.py), in the rules' order."""
    import polars as pl

    from testprism.storage import Store
    from testprism.tasks.score.taxonomy import KINDS, pooled_shares

    found = Store(store)
    shares = pl.concat([found.read_table("failure_taxonomy_shares"), pooled_shares(found.read_table("failure_taxonomy"))])
    cells = {(r["configuration"], r["kind"]): r for r in shares.iter_rows(named=True)}
    table = Table(title=f"failure taxonomy of the S = 0 instances: count (share) ({store})")
    table.add_column("configuration")
    for kind in KINDS:
        table.add_column(kind.replace("_", " "), justify="right")
    for name in sorted(shares["configuration"].unique().to_list(), key=lambda n: (n == "(all)", n)):
        table.add_row(name, *(f"{cells[(name, k)]['count']} ({_cell(cells[(name, k)]['share'])})" for k in KINDS))
    out.print(table)


@contextmanager
def _progress_bar() -> Iterator[None]:
    """The flows' progress (flows/progress.py) shown on stderr: one line per stage."""
    display = progress.StageDisplay(console)
    try:
        with progress.reporting_to(display):
            yield
    finally:
        display.finish()


def _replay(benchmark: Path, store: Path, settings: ReplaySettings, run: RunSettings, trusted: bool,
            next_step: bool = True) -> None:
    from testprism.flows.replay import replay_flow
    from testprism.flows.runner import open_inputs

    started = time.monotonic()

    open_inputs(str(benchmark), str(store), settings.configurations, run, announce=False, trusted=trusted)
    with _progress_bar():
        summary = replay_flow(benchmark=str(benchmark), store=str(store), settings=settings, run=run, trusted=trusted)
    elapsed = time.monotonic() - started
    outcomes = " · ".join(f"{k} {n}" for k, n in sorted(summary.outcomes.items())) or "none"
    _finish(f"replay {benchmark} → {store}", [
        f"{summary.planned} runs planned: {summary.skipped} already stored, {summary.executed} executed, "
        f"{summary.reused} taken from the same work stored",
        f"outcomes: {outcomes} (P passed, F failed, E unresolved)",
        f"isolation {summary.isolation} · {summary.builds} state builds · {elapsed:.0f} s",
    ], f"testprism score {store}" if next_step else None)


def _score(store: Path, benchmark: Path | None = None, run: RunSettings | None = None, trusted: bool = False,
           next_step: bool = True, settings: ScoreSettings | None = None) -> pl.DataFrame:
    from testprism.flows.score import score_flow
    from testprism.flows.runner import open_inputs
    from testprism.tasks.execution.run_settings import RunSettings
    from testprism.tasks.score.scores import scorable_store
    from testprism.tasks.score.settings import ScoreSettings

    run = run or RunSettings()
    scorable_store(str(store))
    if benchmark:
        open_inputs(str(benchmark), str(store), (), run, announce=False, trusted=trusted)
    with _progress_bar():  # the coverage passes (with a benchmark) run through the stage driver
        board = score_flow(store=str(store), settings=settings or ScoreSettings(),
                           benchmark=str(benchmark) if benchmark else None, run=run, trusted=trusted)
    out.print(_leaderboard_table(board, f"leaderboard ({store})"))
    if next_step:
        _finish(f"score {store}", [f"{board.height} configurations scored (scores/ in the store)"],
                f"testprism report {store} --out report.html   (or: testprism export {store} --format markdown)")
    return board


#: the commands that run no stage but use the sandbox (an import's solve.sh or --verify, the
#: agent) name a backend and a work area too: these options say them alike
BackendOpt = Annotated[str, typer.Option(help="sandbox backend: local (bubblewrap) or docker", callback=known_backend)]
WorkOpt = Annotated[Optional[Path], typer.Option(help="working area for environments and states (a cache)")]
TimeoutOpt = Annotated[float, typer.Option(help="wall-clock limit of one run, seconds")]


def _configuration(name: str | None) -> str | None:
    """`--configuration` callback: it names a folder, so a bad name is a usage error."""
    from testprism.tasks.importing.suite_import import checked_configuration

    try:
        return None if name is None else checked_configuration(name)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
