"""`testprism import ...`: bring published files into the benchmark format.

Thin: parse options, call `tasks.swebench` / `tasks.suite_import`, print a summary table.
A bad row never stops a batch; the table lists every issue with its row and field, and the
exit status is non-zero when nothing was imported (or, with --strict, on any issue).
"""

from __future__ import annotations

import logging
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from testprism.flows.errors import Commands, ExitStatus, known_backend
from testprism.tasks.importing.recipe import load_recipes
from testprism.tasks.sandbox.base import Limits, backend_class
from testprism.tasks.importing.suite_import import checked_configuration, import_suites
from testprism.tasks.importing.rows import ImportReport
from testprism.tasks.importing.sources import ProgramSources
from testprism.tasks.importing.swebench import import_rows
from testprism.tasks.importing.verifier import Verifier
from testprism.tasks.model.state import DEFAULT_FUZZ
from testprism.tasks.model.workdir import WorkPaths, default_work_root

import_app = typer.Typer(cls=Commands, add_completion=False, no_args_is_help=True, help=__doc__)
console = Console(stderr=True)
log = logging.getLogger(__name__)


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
    try:
        return None if name is None else checked_configuration(name)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc


StrictOpt = Annotated[bool, typer.Option(help="exit non-zero on any issue, not only when nothing was imported")]
OverwriteOpt = Annotated[bool, typer.Option(help="replace folders already in the benchmark (default: keep them)")]


@import_app.command("swebench")
def swebench(
    rows: Annotated[Path, typer.Argument(help="SWE-bench rows: JSON Lines or a JSON list", exists=True, dir_okay=False,
                                         readable=True)],
    out: Annotated[Path, typer.Option(help="benchmark folder to write instances/<id>/ into")],
    recipes: Annotated[list[Path], typer.Option(help="recipe file or folder of *.toml (repeatable)")],
    repos: Annotated[Optional[Path], typer.Option(help="folder of clones named owner__name, or a mapping file")] = None,
    releases: Annotated[Optional[Path], typer.Option(
        help="folder of release folders named by instance id, or a mapping file (instance id or owner/name@version)")] = None,
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
    """Import SWE-bench rows as instances: the program at base_commit, reference, checks, instruction."""
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
    report = import_suites(predictions, out, configuration=configuration,
                           scope="tests" if scope is ScopeChoice.tests else "files", overwrite=overwrite, command=command)
    _summarise(report, f"import suites {predictions} → {out}", strict)
