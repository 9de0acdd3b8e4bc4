"""The commands that run several stages or serve them: pipeline (a configuration file's stages),
sweep (the work area's leftovers), agent (the provided agent in a sandbox) and demo (the
bundled benchmark, replayed, scored and reported)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from testprism.flows.cli_shared import WorkOpt, _cell, _finish, _print_taxonomy, _progress_bar, _replay, _score, commands, log
from testprism.flows.settings_options import RUN_SETTINGS, settings_options
from testprism.tasks.model.bundled import BUNDLED
from testprism.tasks.model.workdir import WorkPaths, default_work_root

if TYPE_CHECKING:
    from testprism.tasks.execution.run_settings import RunSettings


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
        open_inputs(str(first), str(chosen.store), configurations, chosen.run, announce=False, trusted=trusted)
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
@settings_options(run=RUN_SETTINGS)
def demo(
    out: Annotated[Path, typer.Option(help="where the demo's store goes", file_okay=False)] = Path("demo-out"),
    benchmark: Annotated[Path, typer.Option(
        help="a benchmark folder with the demo's generators/ (default: the bundled one)", exists=True,
        file_okay=False)] = BUNDLED,
    full: Annotated[bool, typer.Option(
        "--full", help="the whole bundled benchmark (ten languages, ~25 min) instead of its quick part")] = False,
    *,
    run: RunSettings,
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
                          command=f"python3 tmp/.task/tools/{tool.name}", out=str(generated), run=run,
                          trusted=trusted)
    _replay(benchmark, out, ReplaySettings(), run, trusted, next_step=False)
    _replay(generated, out, ReplaySettings(), run, trusted, next_step=False)
    board = _score(out, benchmark, run, trusted=trusted, next_step=False)
    report = report_flow(store=str(out), out=str(out / "report.html"), benchmark=str(benchmark))
    _print_taxonomy(out)
    leader = board.sort("jvr", descending=True, nulls_last=True).row(0, named=True) if board.height else None
    _finish("demo", [
        f"{board.height} configurations replayed and scored in {time.monotonic() - start:.0f} s; store at {out}",
        *([f"best JVR: {leader['configuration']} {_cell(leader['jvr'])}"] if leader else []),
        f"report at {report} ({Path(report).resolve().as_uri()})",
    ], f"testprism export {out} --format markdown   (or: --format swt-bench --out swt-report)")
