"""The `testprism` command line, every command of it: parse, check the inputs (so a mistake
ends in one line, flows/errors.py), set up display, call a flow. No domain logic."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.console import Console
from rich.logging import RichHandler
from rich.table import Table

from testprism.flows import progress
from testprism.flows.command_group import Commands, LazyCommands
from testprism.flows.errors import ExitStatus, known_backend
from testprism.flows.settings_options import settings_options
from testprism.tasks.importing.harbor_limits import SOLVE_TIMEOUT_S
from testprism.tasks.model.bundled import BUNDLED
from testprism.tasks.report.formats import ExportFormat
from testprism.tasks.model.patch_fuzz import DEFAULT_FUZZ
from testprism.tasks.model.workdir import WorkPaths, default_work_root

if TYPE_CHECKING:
    import polars as pl

    from testprism.tasks.collect.settings import CollectSettings
    from testprism.tasks.gate.settings import CheckSettings
    from testprism.tasks.generate.settings import GenerateSettings, RsiSettings, SelectSettings
    from testprism.tasks.importing.rows import ImportReport
    from testprism.tasks.replay.settings import ReplaySettings

# Every command imports what it uses in its body: `testprism --help` (and tab completion)
# must not pay for Prefect, SciPy, polars or pyarrow (tests/test_cli_start.py). The commands
# are registered on `commands`; `app` builds the one it runs (flows/command_group.py).

#: what `testprism --help` opens with: what the tool does for its user
USAGE = (
    "How reliable are generated test suites? testprism replays each suite on the buggy program, the reference "
    "fix and hidden panels of valid and invalid candidate patches, in a sandbox, and scores every configuration "
    "jointly (GRR, CAR, WDR, F1, JVR, with intervals).\n\n"
    "Typical sequence: import (SWE-bench rows, test patches) -> curate (screen, dedup, audit, split) -> "
    "collect (label candidates, choose panels) -> replay -> score -> report. `testprism demo` replays, scores and "
    "reports the bundled benchmark."
)

def _group(cls: type[Commands] = Commands, **settings: object) -> typer.Typer:
    """A typer app of the CLI. Its help is click's plain text: typer's rich panels cost about
    0.1 s of imports (markdown-it, pygments) and drawing on every `--help`, a third of the
    0.3 s budget (docs/performance.md, "CLI start")."""
    return typer.Typer(cls=cls, add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                       **settings)  # type: ignore[arg-type]


commands = _group()
app = _group(LazyCommands.over(commands), help=USAGE)
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


@app.callback()
def main(verbose: VerboseOpt = False) -> None:
    # Our own handler on our own logger: importing Prefect configures the root logger, so a
    # root-level basicConfig would silently do nothing. (Prefect's API handler is on it too:
    # flows/__init__.py.)
    if not any(isinstance(h, RichHandler) for h in log.handlers):
        log.addHandler(RichHandler(console=console, show_path=False))
    log.setLevel(logging.DEBUG if verbose else logging.INFO)
    log.propagate = False
    for noisy in ("prefect", "httpx", "distributed", "asyncio"):
        logging.getLogger(noisy).setLevel(logging.INFO if verbose else logging.WARNING)
    progress.quiet_console(verbose)  # read when Prefect is imported, which the commands do after this


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


def _replay(benchmark: Path, store: Path, settings: ReplaySettings, backend: str, workers: int,
            dask_address: str | None, work: Path | None, trusted: bool, unsafe: bool,
            patch_fuzz: int = DEFAULT_FUZZ, next_step: bool = True) -> None:
    from testprism.flows.replay import replay_flow
    from testprism.flows.runner import open_inputs

    started = time.monotonic()

    open_inputs(str(benchmark), str(store), settings.configurations, backend, work or default_work_root(),
                announce=False, trusted=trusted, unsafe=unsafe)
    with _progress_bar():
        summary = replay_flow(
            benchmark=str(benchmark), store=str(store), settings=settings, backend=backend, workers=workers,
            dask_address=dask_address, work=str(work) if work else None, trusted=trusted, unsafe=unsafe,
            patch_fuzz=patch_fuzz,
        )
    elapsed = time.monotonic() - started
    outcomes = " · ".join(f"{k} {n}" for k, n in sorted(summary.outcomes.items())) or "none"
    _finish(f"replay {benchmark} → {store}", [
        f"{summary.planned} runs planned: {summary.skipped} already stored, {summary.executed} executed, "
        f"{summary.reused} taken from the same work stored",
        f"outcomes: {outcomes} (P passed, F failed, E unresolved)",
        f"isolation {summary.isolation} · {summary.builds} state builds · {elapsed:.0f} s",
    ], f"testprism score {store}" if next_step else None)


def _score(store: Path, benchmark: Path | None = None, work: Path | None = None, backend: str = "local",
           trusted: bool = False, next_step: bool = True, include_failed_gate: bool = False) -> pl.DataFrame:
    from testprism.flows.score import score_flow
    from testprism.flows.runner import open_inputs
    from testprism.tasks.score.scores import scorable_store

    scorable_store(str(store))
    if benchmark:
        open_inputs(str(benchmark), str(store), (), backend, work or default_work_root(), announce=False,
                    trusted=trusted, unsafe=False)
    with _progress_bar():  # the coverage passes (with a benchmark) run through the stage driver
        board = score_flow(store=str(store), benchmark=str(benchmark) if benchmark else None,
                           work=str(work) if work else None, backend=backend, trusted=trusted,
                           include_failed_gate=include_failed_gate)
    out.print(_leaderboard_table(board, f"leaderboard ({store})"))
    if next_step:
        _finish(f"score {store}", [f"{board.height} configurations scored (scores/ in the store)"],
                f"testprism report {store} --out report.html   (or: testprism export {store} --format markdown)")
    return board


BackendOpt = Annotated[str, typer.Option(help="sandbox backend: local (bubblewrap) or docker", callback=known_backend)]
WorkersOpt = Annotated[int, typer.Option(help="> 1: run batches on a local Dask cluster of this many workers")]
DaskOpt = Annotated[Optional[str], typer.Option(help="scheduler address of an existing Dask cluster")]
WorkOpt = Annotated[Optional[Path], typer.Option(help="working area for environments and states (a cache)")]
TimeoutOpt = Annotated[float, typer.Option(help="wall-clock limit of one run, seconds")]
#: the one `--patch-fuzz` of replay and collect: the fuzz of the `patch` fallback (SWE-bench: 5)
PatchFuzzOpt = Annotated[int, typer.Option(
    min=0, help="fuzz of the `patch --batch -p1` fallback after `git apply`, for every patch (SWE-bench uses 5)")]


@commands.command()
@settings_options("testprism.tasks.replay.settings:ReplaySettings")
def replay(
    benchmark: Annotated[Path, typer.Argument(help="benchmark folder (instances/, suites/)")],
    store: Annotated[Path, typer.Option(help="store root", file_okay=False)],
    backend: BackendOpt = "local",
    workers: WorkersOpt = 1,
    dask_address: DaskOpt = None,
    work: WorkOpt = None,
    unsafe_no_sandbox: Annotated[bool, typer.Option(help="run untrusted suites without isolation")] = False,
    patch_fuzz: PatchFuzzOpt = DEFAULT_FUZZ,
    *,
    settings: ReplaySettings,
) -> None:
    """Replay every suite on buggy, reference and every candidate; skip runs already settled.

    Runs that ended in infrastructure errors (sandbox_error) are always redone. The replay's
    own options are tasks/replay/settings.py's fields."""
    trusted = benchmark.resolve() == BUNDLED
    _replay(benchmark, store, settings, backend, workers, dask_address, work, trusted, unsafe_no_sandbox, patch_fuzz)


@commands.command()
@settings_options("testprism.tasks.generate.settings:GenerateSettings")
def generate(
    benchmark: Annotated[Path, typer.Argument(help="benchmark folder (instances/)")],
    store: Annotated[Path, typer.Option(help="store root", file_okay=False)],
    configuration: Annotated[str, typer.Option(help="name of the generated suites' configuration",
                                               callback=lambda v: _configuration(v))],
    command: Annotated[str, typer.Option(
        help="the agent's command, run from the buggy program's root in the sandbox ('testprism agent': the provided one)")],
    out: Annotated[Optional[Path], typer.Option(help="benchmark folder for suites/<configuration>/ (default: BENCHMARK)",
                                                file_okay=False)] = None,
    backend: BackendOpt = "local",
    workers: WorkersOpt = 1,
    dask_address: DaskOpt = None,
    work: WorkOpt = None,
    unsafe_no_sandbox: Annotated[bool, typer.Option(help="run the agent without isolation")] = False,
    *,
    settings: GenerateSettings,
) -> None:
    """Run an agent per instance in the sandbox and keep the suites it writes as a configuration.

    What the runs are given (mode, tools, strategy, caps, endpoint) are tasks/generate/settings.py's fields."""
    from testprism.flows.generate import generate_flow
    from testprism.flows.runner import open_inputs
    from testprism.tasks.generate.strategy import load_strategy

    load_strategy(settings.strategy)
    inputs = open_inputs(str(benchmark), str(store), (), backend, work or default_work_root(), announce=False,
                         trusted=False, unsafe=unsafe_no_sandbox)
    unknown = sorted(set(settings.instances) - set(inputs.benchmark.instances))
    if unknown:
        raise typer.BadParameter(f"not in {benchmark}: {', '.join(unknown)}", param_hint="'--instance'")
    with _progress_bar():
        summary = generate_flow(
            benchmark=str(benchmark), store=str(store), configuration=configuration, command=command,
            out=str(out) if out else None, settings=settings, backend=backend, workers=workers,
            dask_address=dask_address, work=str(work) if work else None, unsafe=unsafe_no_sandbox)
    log.info("generate: %d planned, %d already stored, %d executed; outcomes %s; %d suites in %s",
             summary.planned, summary.skipped, summary.executed, summary.outcomes or "{}", summary.suites, summary.out)


@commands.command()
def crossval(
    config: Annotated[Path, typer.Argument(help="crossval config: agents, mode, caps, out (docs/generate.md)",
                                           exists=True, dir_okay=False)],
    store: Annotated[Path, typer.Option(help="store root", file_okay=False)],
    backend: BackendOpt = "local",
    workers: WorkersOpt = 1,
    dask_address: DaskOpt = None,
    work: WorkOpt = None,
    unsafe_no_sandbox: Annotated[bool, typer.Option(help="run the agents and tests without isolation")] = False,
) -> None:
    """Heterogeneous synthesis and peer cross-validation: K agents' tests on each other's repairs."""
    from testprism.flows.crossval import crossval_flow
    from testprism.flows.runner import open_inputs
    from testprism.tasks.generate.crossval_config import load_crossval

    chosen = load_crossval(config)
    open_inputs(str(chosen.benchmark), str(store), (), backend, work or default_work_root(), announce=False,
                trusted=False, unsafe=unsafe_no_sandbox)
    with _progress_bar():
        summary = crossval_flow(config=str(config), store=str(store), backend=backend, workers=workers,
                                dask_address=dask_address, work=str(work) if work else None, unsafe=unsafe_no_sandbox)
    for round_, counts in summary.verdicts.items():
        log.info("crossval round %s: %s", round_, ", ".join(f"{n} {v}" for v, n in counts.items()))
    log.info("crossval: %d instances, %d merged suites in %s", summary.instances, summary.merged, summary.out)


@commands.command()
@settings_options("testprism.tasks.generate.settings:SelectSettings")
def select(
    store: Annotated[Path, typer.Argument(help="store root, scored (`testprism score`)")],
    out: Annotated[Path, typer.Option(help="the demonstrations, one JSON object a line", dir_okay=False)],
    *,
    settings: SelectSettings,
) -> None:
    """Export the generated suites that meet a metric, with their trajectories, as fine-tuning demonstrations."""
    from testprism.flows.select import select_flow

    select_flow(store=str(store), out=str(out), settings=settings)


@commands.command()
@settings_options("testprism.tasks.generate.settings:RsiSettings")
def rsi(
    benchmark: Annotated[Path, typer.Argument(help="benchmark folder to search on: curate's TRAINING split, never the test split")],
    store: Annotated[Path, typer.Option(help="store root (the search's history: `searches`)", file_okay=False)],
    command: Annotated[str, typer.Option(help="the agent's command, as for generate")],
    backend: BackendOpt = "local",
    workers: WorkersOpt = 1,
    dask_address: DaskOpt = None,
    work: WorkOpt = None,
    unsafe_no_sandbox: Annotated[bool, typer.Option(help="run the agent and suites without isolation")] = False,
    *,
    settings: RsiSettings,
) -> None:
    """Search generation strategies within the space's bounds under its fixed token caps; print the history.

    The search's options are tasks/generate/settings.py's fields."""
    from testprism.flows.rsi import rsi_flow
    from testprism.tasks.generate.search import table
    from testprism.tasks.generate.strategy import load_space

    load_space(settings.space)  # a bad space ends here, in one line
    with _progress_bar():
        summary = rsi_flow(benchmark=str(benchmark), store=str(store), command=command, settings=settings,
                           backend=backend, workers=workers, dask_address=dask_address,
                           work=str(work) if work else None, unsafe=unsafe_no_sandbox)
    rows = table(summary.rounds, summary.space)
    history_table = Table(title=f"rsi {summary.search_id[:8]} ({store})")
    for column in rows[0] if rows else ():
        history_table.add_column(column, justify="left" if column in ("proposer", "status") else "right")
    for rec in rows:
        history_table.add_row(*("—" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)
                                for v in rec.values()))
    out.print(history_table)
    if summary.best is not None:
        log.info("rsi: %d rounds run now, %d stored; best JSF %.3f in round %d%s", summary.executed,
                 len(summary.rounds), summary.best.jsf, summary.best.round,
                 f", exported to {summary.export}" if summary.export else "")


@commands.command()
def score(
    store: Annotated[Path, typer.Argument(help="store root")],
    benchmark: Annotated[Optional[Path], typer.Option(help="also measure coverage of the reference change")] = None,
    backend: BackendOpt = "local",
    work: WorkOpt = None,
    include_failed_gate: Annotated[bool, typer.Option(
        help="also score the instances whose newest release gate verdict is not ok (docs/gate.md)")] = False,
) -> None:
    """Compute the leaderboard (with bootstrap intervals) from the stored runs and print it."""
    trusted = benchmark is not None and benchmark.resolve() == BUNDLED
    _score(store, benchmark, work, backend, trusted, include_failed_gate=include_failed_gate)


PredictionsOpt = Annotated[list[Path], typer.Option(
    help="SWE-bench prediction file (JSON lines, JSON list or preds.json); repeatable",
    exists=True, dir_okay=False, readable=True)]
DiffsOpt = Annotated[list[Path], typer.Option(help="folder of DIR/<instance_id>/<name>.diff; repeatable",
                                              exists=True, file_okay=False)]
OutOpt = Annotated[Optional[Path], typer.Option(help="write the panels here as a benchmark folder to replay")]


@commands.command()
def curate(
    config: Annotated[Path, typer.Argument(help="curate config (TOML): sources, bounds, split, difficulty",
                                           exists=True, dir_okay=False, readable=True)],
    store: Annotated[Path, typer.Option(help="store root: the funnel goes here", file_okay=False)],
    out: Annotated[Path, typer.Option(help="benchmark folder for the test split; the training split goes to OUT-train",
                                      file_okay=False)],
    work: WorkOpt = None,
    overwrite: Annotated[bool, typer.Option(help="replace OUT and OUT-train when they exist")] = False,
    workers: WorkersOpt = 1,
    dask_address: DaskOpt = None,
) -> None:
    """Curate source benchmarks into a screened, deduplicated, repository-disjoint test and training split."""
    from testprism.flows.curate import curate_flow
    from testprism.tasks.model.benchmark import BenchmarkError
    from testprism.tasks.curate.config import load_config
    from testprism.tasks.curate.curation import train_folder

    load_config(config)  # a bad config ends here, in one line
    for folder in (out, train_folder(out)):
        if folder.exists() and not overwrite:
            raise BenchmarkError(folder, "(folder)", "exists; pass --overwrite to replace it")
    summary = curate_flow(config=str(config), store=str(store), out=str(out), work=str(work) if work else None,
                          overwrite=overwrite, workers=workers, dask_address=dask_address)
    log.info("curate %s: %d test and %d training instances; next: testprism collect %s --store %s",
             summary.flow_run, summary.test, summary.train, summary.out, store)


@commands.command()
@settings_options("testprism.tasks.collect.settings:CollectSettings")
def collect(
    benchmark: Annotated[Path, typer.Argument(help="benchmark folder (instances/ with program, reference, checks)")],
    store: Annotated[Path, typer.Option(help="store root", file_okay=False)],
    predictions: PredictionsOpt = [],  # noqa: B006
    diffs: DiffsOpt = [],  # noqa: B006
    out: OutOpt = None,
    backend: BackendOpt = "local",
    workers: WorkersOpt = 1,
    dask_address: DaskOpt = None,
    work: WorkOpt = None,
    unsafe_no_sandbox: Annotated[bool, typer.Option(help="run untrusted patches without isolation")] = False,
    patch_fuzz: PatchFuzzOpt = DEFAULT_FUZZ,
    *,
    settings: CollectSettings,
) -> None:
    """Ingest candidate patches, label them by the official checks, and choose panels.

    The collect's own options are tasks/collect/settings.py's fields."""
    # Only the bundled benchmark's own code is trusted: patches from outside never are.
    from testprism.flows.runner import open_inputs

    trusted = benchmark.resolve() == BUNDLED and not predictions and not diffs
    open_inputs(str(benchmark), str(store), (), backend, work or default_work_root(), announce=False,
                trusted=trusted, unsafe=unsafe_no_sandbox)
    from testprism.flows.collect import collect_flow

    summary = collect_flow(
        benchmark=str(benchmark), store=str(store), predictions=[str(p) for p in predictions],
        diffs=[str(d) for d in diffs], out=str(out) if out else None, settings=settings, backend=backend,
        workers=workers, dask_address=dask_address, work=str(work) if work else None, trusted=trusted,
        unsafe=unsafe_no_sandbox, patch_fuzz=patch_fuzz,
    )
    agree, compared = summary.agreement
    log.info("collect %s: %d verifications run, %d reused from the store; %d panels%s", summary.flow_run,
             summary.executed, summary.reused, summary.panels, f" written to {summary.out}" if summary.out else "")
    if compared:
        log.info("labels agree with the sources' on %d of %d candidates (plausibility, not ground truth)",
                 agree, compared)
    if summary.out:
        log.info("next: testprism replay %s --store %s", summary.out, store)


@commands.command()
@settings_options("testprism.tasks.gate.settings:CheckSettings")
def check(
    benchmark: Annotated[Path, typer.Argument(help="benchmark folder (instances/ with program, reference, checks)")],
    store: Annotated[Path, typer.Option(help="store root: the verdicts and the manifest go here", file_okay=False)],
    backend: BackendOpt = "local",
    workers: WorkersOpt = 1,
    dask_address: DaskOpt = None,
    work: WorkOpt = None,
    unsafe_no_sandbox: Annotated[bool, typer.Option(help="run the checks without isolation")] = False,
    patch_fuzz: PatchFuzzOpt = DEFAULT_FUZZ,
    *,
    settings: CheckSettings,
) -> None:
    """Release gate: per row, the checks fail on buggy, pass on the reference, and the empty patch resolves
    nothing; a checksum manifest of the folder. Exit 1 when a row fails (docs/gate.md)."""
    from testprism.flows.check import check_flow, open_check_inputs

    trusted = benchmark.resolve() == BUNDLED
    open_check_inputs(str(benchmark), str(store), backend, work or default_work_root(), trusted=trusted,
                      unsafe=unsafe_no_sandbox)
    with _progress_bar():
        summary = check_flow(benchmark=str(benchmark), store=str(store), settings=settings, backend=backend,
                             workers=workers, dask_address=dask_address, work=str(work) if work else None,
                             trusted=trusted, unsafe=unsafe_no_sandbox, patch_fuzz=patch_fuzz)
    table = Table(title=f"gate {summary.gate_run} ({benchmark})")
    for column in summary.table.columns:
        table.add_column(column, justify="left" if column in ("source", "language") else "right")
    for row in summary.table.iter_rows():
        table.add_row(*map(str, row))
    out.print(table)
    if summary.failed:
        failing = Table(title="rows that fail the gate")
        for column in ("instance_id", "verdict", "detail"):
            failing.add_column(column, overflow="fold")
        for v in summary.failed:
            failing.add_row(v.instance_id, v.verdict.value, v.detail)
        out.print(failing)
    changed = ("first gate of this folder" if summary.changes is None else
               f"changed since gate {summary.previous}: {summary.changes.summary()}" if summary.changes else
               f"unchanged since gate {summary.previous}")
    _finish(f"check {benchmark} → {store}", [
        f"{len(summary.verdicts) - len(summary.failed)} of {len(summary.verdicts)} rows ok; manifest: {changed}",
        f"{summary.executed} check runs executed, {summary.reused} taken from the store",
    ], f"testprism collect {benchmark} --store {store}" if not summary.failed else None)
    if summary.failed:
        raise typer.Exit(code=ExitStatus.FAILED)


@commands.command()
def report(
    store: Annotated[Path, typer.Argument(help="store root, after `testprism score`", file_okay=False)],
    out: Annotated[Path, typer.Option(help="the HTML file to write", dir_okay=False)] = Path("report.html"),
    benchmark: Annotated[
        Optional[Path], typer.Option(help="benchmark folder: show candidate diffs and notes in the audit")
    ] = None,
    open_it: Annotated[bool, typer.Option(
        "--open", help="also open it in a browser, where one is found ($BROWSER or the desktop's)")] = False,
) -> None:
    """Write a self-contained HTML report of a scored store (opens offline, no network)."""
    from testprism.tasks.report.data import scored_store

    scored_store(store)  # the inputs, checked before the flow starts (flows.errors)
    if benchmark:
        from testprism.tasks.model.benchmark import load_benchmark

        load_benchmark(benchmark)
    from testprism.flows.report import report_flow

    path = report_flow(store=str(store), out=str(out), benchmark=str(benchmark) if benchmark else None)
    url = Path(path).resolve().as_uri()
    log.info("report written to %s (%s)", path, url)
    if open_it:
        _open_in_browser(url)
    _finish(f"report {store}", [f"written to {path}", url],
            f"testprism export {store} --format markdown   (the leaderboard for a paper; csv, latex, json too)")


@commands.command()
def export(
    store: Annotated[Path, typer.Argument(help="store root, after `testprism score`", file_okay=False)],
    format_: Annotated[ExportFormat, typer.Option(
        "--format", help="swt-bench or swe-bench: each configuration's reports as that harness writes them "
                         "(a folder); csv, markdown, latex, json: the leaderboard with its 95% intervals")],
    out: Annotated[Optional[Path], typer.Option(
        help="where to write: a folder for swt-bench and swe-bench (default: ./FORMAT-report), a file for a "
             "table (default: standard output)")] = None,
) -> None:
    """Export a scored store's results in the formats other tools read (docs/export.md)."""
    from testprism.tasks.report.export import export as export_store

    written = export_store(store, format_, out)
    if isinstance(written, str):
        typer.echo(written, nl=False)
        return
    log.info("%s export of %s: %s", format_.value, store, ", ".join(str(p) for p in written))


def _open_in_browser(url: str) -> None:
    """Open `url` in the browser Python's webbrowser finds ($BROWSER first); on a machine
    without one (a server, CI) say so and leave the URL printed above."""
    import webbrowser

    try:
        browser = webbrowser.get()
    except webbrowser.Error:
        log.info("no browser found here: open %s where one is", url)
        return
    if not browser.open(url):
        log.info("the browser did not take %s: open it by hand", url)


@commands.command()
def pipeline(
    config: Annotated[Path, typer.Argument(help="pipeline config (TOML): store, curate, collect, generate, replay, score, report",
                                           exists=True, dir_okay=False, readable=True)],
    store: Annotated[Optional[Path], typer.Option(help="store root (default: the config's store)",
                                                  file_okay=False)] = None,
) -> None:
    """Run the whole pipeline of a config: curate and collect when configured, then replay, score and report.

    Each stage skips what the store already holds, so a rerun costs only what changed."""
    from testprism.flows.pipeline import pipeline_flow
    from testprism.flows.runner import open_inputs
    from testprism.tasks.curate.config import load_config
    from testprism.tasks.pipeline.config import load_pipeline

    chosen = load_pipeline(config, store)  # a bad config ends here, in one line
    if chosen.curate:
        load_config(chosen.curate.config)
    else:  # the first stage reads a benchmark that exists already: check it and the sandbox now
        if chosen.collect is not None:
            first, configurations, trusted = chosen.collect_benchmark, (), chosen.collect_trusted
        elif chosen.generate is not None:  # an agent's command: never trusted
            first, configurations, trusted = chosen.generate_benchmark, (), False
        else:
            first, configurations, trusted = chosen.replay_benchmark, chosen.replay.configurations, chosen.replay_trusted
        open_inputs(str(first), str(chosen.store), configurations, chosen.backend, chosen.work or default_work_root(),
                    announce=False, trusted=trusted, unsafe=chosen.unsafe)
    with _progress_bar():
        summary = pipeline_flow(config=str(config), store=str(store) if store else None)
    log.info("pipeline: %d runs executed, %d already stored; %d configurations scored; report at %s",
             summary.replay.executed, summary.replay.skipped, summary.configurations, summary.report)


@commands.command()
def sweep(work: WorkOpt = None) -> None:
    """Remove what crashed or killed runs left behind, for every backend.

    Workspaces of processes that are gone, and their containers (docker); live replays are
    left alone."""
    from testprism.tasks.sandbox.base import sweep_all

    for name, removed in sweep_all(WorkPaths(work or default_work_root())).items():
        if isinstance(removed, int):
            log.info("%s: %d leftovers removed", name, removed)
        else:
            log.warning("%s: not swept: %s", name, removed)


@commands.command()
def agent(
    program: Annotated[Path, typer.Argument(help="the program root: the agent's working directory",
                                            exists=True, file_okay=False)] = Path("."),
    task_dir: Annotated[Optional[Path], typer.Option(
        help="the task folder: instruction.md, strategy.json, optional reference.diff and feedback.md "
             "(default: PROGRAM/tmp/.task)", exists=True, file_okay=False)] = None,
    python: Annotated[Optional[str], typer.Option(
        help="the interpreter that runs the generated tests (default: testprism's own)")] = None,
    language: Annotated[Optional[str], typer.Option(
        help="the program's language: writes the task folder's language.json, how a test of it is written "
             "and run (default: the folder's own language.json, else python)")] = None,
) -> None:
    """Run the provided test-writing agent on a program folder, here, outside any sandbox.

    The same agent a generate command beginning with `testprism agent` runs in the sandbox
    (docs/generate.md): it asks the chat endpoint at $OPENAI_BASE_URL (key $OPENAI_API_KEY)
    for a test file of the language, runs it until one fails on the program by an assertion,
    and leaves the test (tmp/test_generated.py for Python), tmp/run_tests.sh and usage.json
    in the task folder (with `repair: true` also a fix of the program). The tests it writes
    run unsandboxed: use it on a program and a model you trust. Exit status 0 when a test
    was written, 1 when none, 2 when the task folder or the environment is unusable."""
    from testprism.tasks.generate.agent import TASK_FOLDER, run
    from testprism.tasks.generate.task_folder import language_json
    from testprism.tasks.model import syntax

    task = task_dir or program / TASK_FOLDER
    if language is not None or (task / "instruction.md").is_file() and not (task / "language.json").exists():
        try:
            record = syntax.named(language or "python")
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--language") from None
        (task / "language.json").write_text(language_json(record))
    status = run(program, task_dir, python)
    if status:
        raise typer.Exit(code=status)


@commands.command()
def demo(
    out: Annotated[Path, typer.Option(help="where the demo's store goes", file_okay=False)] = Path("demo-out"),
    backend: BackendOpt = "local",
    workers: WorkersOpt = 1,
    work: WorkOpt = None,
    benchmark: Annotated[Path, typer.Option(
        help="a benchmark folder with the demo's generators/ (default: the bundled one)", exists=True,
        file_okay=False)] = BUNDLED,
    full: Annotated[bool, typer.Option(
        "--full", help="the whole bundled benchmark (ten languages, ~25 min) instead of its quick part")] = False,
) -> None:
    """Generate suites with the bundled scripted generators, then replay, score and report a
    part of the bundled benchmark with them (examples/demo.toml: five instances, three
    languages, about three minutes; `--full`: all of it). The bundled code is trusted: it runs
    even without bubblewrap. `--benchmark` runs the same on another folder of that shape:
    that is someone else's code, never trusted, so it needs the sandbox."""
    start = time.monotonic()
    trusted = benchmark.resolve() == BUNDLED.resolve()
    if trusted and not full:
        from testprism.tasks.model.bundled import bundled_part, quick_demo

        benchmark = bundled_part(out / "quick-benchmark", quick_demo())
    from testprism.flows.generate import generate_flow
    from testprism.flows.report import report_flow
    from testprism.tasks.generate.settings import GenerateSettings
    from testprism.tasks.generate.task_folder import Mode
    from testprism.tasks.replay.settings import ReplaySettings

    generated = out / "generated-benchmark"  # beside the store's own generated/ (what runs left)
    for name, mode in (("from-reference", Mode.TESTPRISM), ("from-instruction", Mode.PLAIN)):
        tool = benchmark / "generators" / f"{name.replace('-', '_')}.py"
        with _progress_bar():
            generate_flow(benchmark=str(benchmark), store=str(out), configuration=name,
                          settings=GenerateSettings(mode=mode, tools=(tool,)),
                          command=f"python3 tmp/.task/tools/{tool.name}", out=str(generated), backend=backend,
                          workers=workers, work=str(work) if work else None, trusted=trusted)
    _replay(benchmark, out, ReplaySettings(), backend, workers, None, work, trusted, False, next_step=False)
    _replay(generated, out, ReplaySettings(), backend, workers, None, work, trusted, False, next_step=False)
    board = _score(out, benchmark, work, backend, trusted=trusted, next_step=False)
    report = report_flow(store=str(out), out=str(out / "report.html"), benchmark=str(benchmark))
    _print_taxonomy(out)
    leader = board.sort("jvr", descending=True, nulls_last=True).row(0, named=True) if board.height else None
    _finish("demo", [
        f"{board.height} configurations replayed and scored in {time.monotonic() - start:.0f} s; store at {out}",
        *([f"best JVR: {leader['configuration']} {_cell(leader['jvr'])}"] if leader else []),
        f"report at {report} ({Path(report).resolve().as_uri()})",
    ], f"testprism export {out} --format markdown   (or: --format swt-bench --out swt-report)")


# -- testprism import ---------------------------------------------------------------------------


class ScopeChoice(StrEnum):
    tests = "tests"
    files = "files"


def _summarise(report: ImportReport, what: str, strict: bool) -> None:
    """Print what was imported and every issue; exit non-zero per the documented rule."""
    log.info("%s: %d imported, %d already present, %d rejected", what, len(report.imported), len(report.existing),
             len(report.failed))
    if report.issues:
        table = Table(title=f"{what}: issues")
        for column in ("row", "instance_id", "field", "problem", "result"):
            table.add_column(column, overflow="fold")
        for issue in report.issues:
            table.add_row(issue.row, issue.instance_id or "?", issue.field, issue.message,
                          "rejected" if issue.fatal else "imported with caveat")
        console.print(table)
    summary = Table(title=what)
    for column in ("imported", "already present", "rejected", "caveats"):
        summary.add_column(column, justify="right")
    caveats = len(report.issues) - len(report.failed)
    summary.add_row(str(len(report.imported)), str(len(report.existing)), str(len(report.failed)), str(caveats))
    console.print(summary)
    nothing = not report.imported and not report.existing
    if nothing or (strict and report.issues):
        raise typer.Exit(code=ExitStatus.FAILED)


def _configuration(name: str | None) -> str | None:
    """`--configuration` callback: it names a folder, so a bad name is a usage error."""
    from testprism.tasks.importing.suite_import import checked_configuration

    try:
        return None if name is None else checked_configuration(name)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc


StrictOpt = Annotated[bool, typer.Option(help="exit non-zero on any issue, not only when nothing was imported")]
OverwriteOpt = Annotated[bool, typer.Option(help="replace folders already in the benchmark (default: keep them)")]


class Route(StrEnum):
    source = "source"
    image = "image"


@import_app.command("swebench")
def swebench(
    rows: Annotated[Path, typer.Argument(help="SWE-bench rows: JSON Lines or a JSON list (with --route image also "
                                              "SWE-bench Pro and Multi-SWE-bench rows)", exists=True, dir_okay=False,
                                         readable=True)],
    out: Annotated[Path, typer.Option(help="benchmark folder to write instances/<id>/ into")],
    route: Annotated[Route, typer.Option(
        help="source: rebuild the program from a clone or release with a recipe; image: keep the benchmark's "
             "per-instance image, test command and log parser (docs/swebench.md)")] = Route.source,
    recipes: Annotated[Optional[list[Path]], typer.Option(
        help="recipe file or folder of *.toml (repeatable; --route source)")] = None,
    repos: Annotated[Optional[Path], typer.Option(help="folder of clones named owner__name, or a mapping file")] = None,
    releases: Annotated[Optional[Path], typer.Option(
        help="folder of release folders named by instance id, or a mapping file (instance id or owner/name@version)")] = None,
    images: Annotated[Optional[Path], typer.Option(
        help="--route image: TOML file of \"<instance_id>\" = \"<image>\" overriding the benchmark's names",
        exists=True, dir_okay=False)] = None,
    specs: Annotated[Optional[Path], typer.Option(
        help="--route image: TOML [swebench]/[multi_swe_bench] tables over the bundled per-repository specs",
        exists=True, dir_okay=False)] = None,
    pro_scripts: Annotated[Optional[Path], typer.Option(
        help="--route image: SWE-bench Pro's run_scripts/ folder (<instance_id>/run_script.sh, parser.py)",
        exists=True, file_okay=False)] = None,
    source: Annotated[str, typer.Option(help="the `source` of every imported instance")] = "swe-bench-lite",
    fuzz: Annotated[int, typer.Option(help="fuzz allowed when a patch does not apply as published")] = DEFAULT_FUZZ,
    verify: Annotated[bool, typer.Option(
        help="run the checks on buggy and reference and refuse rows whose FAIL_TO_PASS/PASS_TO_PASS do not reproduce")] = False,
    backend: Annotated[str, typer.Option(help="sandbox backend for --verify", callback=known_backend)] = "local",
    work: Annotated[Optional[Path], typer.Option(help="working area for environments and states (a cache)")] = None,
    timeout: Annotated[float, typer.Option(help="wall-clock limit of one check run with --verify, seconds")] = 900.0,
    unsafe_no_sandbox: Annotated[bool, typer.Option(help="with --verify: run without isolation if bubblewrap is missing")] = False,
    overwrite: OverwriteOpt = False,
    strict: StrictOpt = False,
) -> None:
    """Import SWE-bench rows as instances: the program at base_commit (or the benchmark's image), reference,
    checks, instruction."""
    from testprism.tasks.importing.image_names import ImageMap
    from testprism.tasks.importing.image_route import ImageRoute, import_image_rows
    from testprism.tasks.importing.image_specs import ImageSpecs
    from testprism.tasks.importing.recipe import load_recipes
    from testprism.tasks.importing.sources import ProgramSources
    from testprism.tasks.importing.swebench import import_rows
    from testprism.tasks.importing.verifier import Verifier
    from testprism.tasks.sandbox.base import Limits, backend_class

    if route is Route.image:
        unused = [name for name, given in (("--recipes", recipes), ("--repos", repos), ("--releases", releases),
                                            ("--verify", verify)) if given]
        if unused:
            raise typer.BadParameter(f"{', '.join(unused)}: the image route keeps the benchmark's image; these are "
                                     "options of --route source", param_hint="--route")
        image_route = ImageRoute(ImageSpecs.load(specs), ImageMap.read(images), pro_scripts)
        report = import_image_rows(rows, out, image_route, source=source, overwrite=overwrite)
        _summarise(report, f"import swebench --route image {rows} → {out}", strict)
        return
    unused = [name for name, given in (("--images", images), ("--specs", specs), ("--pro-scripts", pro_scripts))
              if given]
    if unused:
        raise typer.BadParameter(f"{', '.join(unused)}: options of --route image", param_hint="--route")
    if not recipes:
        raise typer.BadParameter("the source route builds environments from recipes: give --recipes",
                                 param_hint="--recipes")
    book = load_recipes(recipes)
    sources = ProgramSources.from_options(repos, releases)
    verifier = None
    if verify:
        paths = WorkPaths(work or default_work_root())
        verifier = Verifier(backend_class(backend)(paths, unsafe=unsafe_no_sandbox), paths, Limits(timeout_s=timeout))
    try:
        report = import_rows(rows, out, book, sources, source=source, overwrite=overwrite, fuzz=fuzz, verifier=verifier)
    finally:
        if verifier is not None:
            verifier.backend.close()
    _summarise(report, f"import swebench {rows} → {out}", strict)


SourceOpt = Annotated[str, typer.Option(help="the `source` of every imported instance (its stratum)")]


@import_app.command("harbor")
def harbor(
    tasks: Annotated[Path, typer.Argument(help="folder of Harbor task folders (task.toml, instruction.md, "
                                               "environment/, solution/solve.sh, tests/)", exists=True, file_okay=False)],
    out: Annotated[Path, typer.Option(help="benchmark folder to write instances/<id>/ into")],
    source: SourceOpt,
    backend: Annotated[str, typer.Option(help="sandbox backend solve.sh runs in, in the task's Dockerfile "
                                              "environment (docker: the local backend cannot build one)",
                                         callback=known_backend)] = "docker",
    work: Annotated[Optional[Path], typer.Option(help="working area for environments (a cache)")] = None,
    timeout: Annotated[float, typer.Option(help="wall-clock limit of one solve.sh run, seconds (a task's "
                                                "[agent] timeout_sec replaces it)")] = SOLVE_TIMEOUT_S,
    overwrite: OverwriteOpt = False,
    strict: StrictOpt = False,
) -> None:
    """Import Harbor tasks as instances: their Dockerfile, what solve.sh changes (sandboxed), test.sh's reward as the check."""
    from testprism.tasks.importing.harbor import import_harbor
    from testprism.tasks.sandbox.base import Limits, backend_class

    sandbox = backend_class(backend)(WorkPaths(work or default_work_root()))
    try:
        report = import_harbor(tasks, out, source=source, overwrite=overwrite, backend=sandbox,
                               limits=Limits(timeout_s=timeout))
    finally:
        sandbox.close()
    _summarise(report, f"import harbor {tasks} → {out}", strict)


@import_app.command("exercises")
def exercises(
    track: Annotated[Path, typer.Argument(help="an Exercism-style Python track: exercises/practice/<slug>/",
                                          exists=True, file_okay=False)],
    out: Annotated[Path, typer.Option(help="benchmark folder to write instances/<source>__<slug>/ into")],
    source: SourceOpt,
    overwrite: OverwriteOpt = False,
    strict: StrictOpt = False,
) -> None:
    """Import exercise folders as instances: the stub, stub → example as reference, the test module as checks."""
    from testprism.tasks.importing.exercises import import_exercises

    _summarise(import_exercises(track, out, source=source, overwrite=overwrite),
               f"import exercises {track} → {out}", strict)


@import_app.command("suites")
def suites(
    predictions: Annotated[Path, typer.Argument(help="prediction file whose model_patch is a test patch", exists=True,
                                                dir_okay=False, readable=True)],
    out: Annotated[Path, typer.Option(help="benchmark folder holding the instances; suites/ is written there")],
    configuration: Annotated[Optional[str], typer.Option(
        help="configuration of every row (default: one per model_name_or_path, '/' → '__', docs/swebench.md)",
        callback=_configuration)] = None,
    scope: Annotated[ScopeChoice, typer.Option(
        help="tests: the tests the patch adds or changes decide; files: every test of the touched files")] = ScopeChoice.tests,
    command: Annotated[Optional[str], typer.Option(
        help="test command with {test_files} (default: the one recorded in the instance's origin.toml)")] = None,
    overwrite: OverwriteOpt = False,
    strict: StrictOpt = False,
) -> None:
    """Import generated test patches as suites: test.diff, run_tests.sh, suite.toml."""
    from testprism.tasks.importing.suite_import import import_suites

    report = import_suites(predictions, out, configuration=configuration,
                           scope="tests" if scope is ScopeChoice.tests else "files", overwrite=overwrite, command=command)
    _summarise(report, f"import suites {predictions} → {out}", strict)


# -- testprism images ---------------------------------------------------------------------------


BaseOpt = Annotated[Optional[str], typer.Option(
    help="base image (default: $TESTPRISM_DOCKER_BASE, else testprism-base:bookworm, bootstrapped when missing)",
)]


@images_app.command("build")
def build(
    benchmark: Annotated[Path, typer.Argument(help="benchmark folder (instances/, suites/)")],
    base: BaseOpt = None,
    work: Annotated[Optional[Path], typer.Option(help="working area (holds the build locks)")] = None,
) -> None:
    """Build the image of every environment the benchmark's instances use (once each)."""
    from testprism.tasks.model.benchmark import load_benchmark
    from testprism.tasks.sandbox.environment import EnvironmentBuildError
    from testprism.tasks.sandbox.base import SandboxError
    from testprism.tasks.sandbox.docker.backend import DockerBackend
    from testprism.tasks.sandbox.docker.environment_image import environment_tag

    bench = load_benchmark(benchmark)
    backend = DockerBackend(WorkPaths(work or default_work_root()), base_image=base)
    specs = {i.spec.environment.key: i.spec.environment for i in bench.instances.values()}
    failed = 0
    try:
        for spec in specs.values():
            try:
                handle = backend.prepare(spec)
            except (EnvironmentBuildError, SandboxError) as exc:
                failed += 1
                log.error("environment %s (%s): %s", spec.key, spec.summary, exc)
                continue
            log.info("%s ready (%s)", environment_tag(handle.name), spec.summary)
    finally:
        backend.close()
    if failed:
        raise typer.Exit(ExitStatus.FAILED)


@images_app.command("list")
def list_(all_: Annotated[bool, typer.Option("--all", help="also show each image's packages")] = False) -> None:
    """testprism's images: the base and one per environment."""
    from testprism.tasks.sandbox.docker.engine import api_client
    from testprism.tasks.sandbox.docker.images import list_images

    images = list_images(api_client())
    table = Table(title="testprism images")
    for column in ("image", "kind", "python", "packages", "MB", "created"):
        table.add_column(column, justify="right" if column == "MB" else "left", no_wrap=column in ("image", "created"))
    for info in images:
        packages = ", ".join(info.packages) if all_ or len(info.packages) <= 3 else f"{len(info.packages)} packages"
        if info.kind == "environment" and not info.packages:
            packages = "(none)"
        table.add_row(info.tag, info.kind, info.python, packages, f"{info.size_mb:.0f}", info.created)
    Console().print(table)


@images_app.command("prune")
def prune(
    keep: Annotated[Optional[list[Path]], typer.Option(
        help="keep the images this benchmark folder needs (repeatable)")] = None,
    base: Annotated[bool, typer.Option("--base", help="remove the base image too")] = False,
) -> None:
    """Remove environment images (all, or those no `--keep` benchmark uses), and run
    containers left by crashed processes."""
    from testprism.tasks.model.benchmark import load_benchmark
    from testprism.tasks.sandbox.docker.backend import DockerBackend
    from testprism.tasks.sandbox.docker.engine import api_client
    from testprism.tasks.sandbox.docker.images import prune_images

    kept = {i.spec.environment.key for folder in keep for i in load_benchmark(folder).instances.values()} if keep else None
    swept = DockerBackend.sweep(WorkPaths(default_work_root()))
    removed = prune_images(api_client(), keep=kept, include_base=base)
    for tag in removed:
        log.info("removed %s", tag)
    log.info("%d images removed, %d leftover containers removed", len(removed), swept)


if __name__ == "__main__":
    app()
