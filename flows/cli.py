"""The `testprism` command line: the app that gathers every command group's module
(flows/cli_stages.py: the stages; cli_pipeline.py: pipeline, sweep, agent, demo; cli_import.py;
cli_images.py; what they share: cli_shared.py). Each command parses, checks the inputs (so a
mistake ends in one line, flows/errors.py), sets up display and calls a flow: no domain logic."""

from __future__ import annotations

import logging

from rich.logging import RichHandler

from testprism.flows import progress
# the command modules register their commands on `commands` when imported, in this order (help lists them so)
from testprism.flows import cli_stages, cli_pipeline, cli_import, cli_images  # noqa: F401
from testprism.flows.cli_shared import VerboseOpt, _group, commands, console, images_app, import_app, log
from testprism.flows.command_group import LazyCommands

__all__ = ["app", "commands", "images_app", "import_app"]

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

app = _group(LazyCommands.over(commands), help=USAGE)


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


if __name__ == "__main__":
    app()
