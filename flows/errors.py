"""How a command ends when its user got something wrong: one line naming the file and the
field, an exit status that tells the kind of mistake, and the traceback only with --verbose.

One place does it for every command: `Commands`, the group class of every typer app of the
CLI, maps the project's error types (`USER_ERRORS`) to an exit status, so no command catches
them one by one. Any other exception is a bug and keeps its traceback. The flows' inputs are
checked before a flow starts (flows.runner.open_inputs, tasks.score.scores.scorable_store), so a
mistake never reaches Prefect, which would log its own traceback of the failed flow run.

Exit statuses (README, "Exit status"):

- 0: done.
- 1: done, but the command's rule says it failed (import: nothing imported, or any issue with
  --strict; images build: an environment did not build); also any unexpected error (a bug).
- 2: the input is wrong: a missing or malformed benchmark, store, recipe, prediction or
  mapping file, an unknown configuration or backend, a bad option (click's own usage errors
  exit 2 as well).
- 3: this machine cannot run it: the sandbox is unavailable (no bubblewrap without
  --unsafe-no-sandbox, no Docker engine, no base image).
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any

import typer
from rich.console import Console
from typer.core import TyperGroup

from testprism.storage import StoreError
from testprism.tasks.model.benchmark import BenchmarkError
from testprism.tasks.generate.selection import SelectionError
from testprism.tasks.importing.image_names import ImageMapError
from testprism.tasks.importing.image_specs import SpecsError
from testprism.tasks.importing.recipe import RecipeError
from testprism.tasks.model.workdir import WorkspacesUnsafe
from testprism.tasks.sandbox.base import SandboxError, SandboxUnavailable, backend_class
from testprism.tasks.importing.sources import SourceError


class ExitStatus(IntEnum):
    DONE = 0
    FAILED = 1
    USAGE = 2
    UNAVAILABLE = 3


#: The errors a user causes, and the exit status of each. Their messages name the file and
#: the field already (BenchmarkError, RecipeError: "path: field f: problem").
USER_ERRORS: dict[type[Exception], ExitStatus] = {
    BenchmarkError: ExitStatus.USAGE,
    RecipeError: ExitStatus.USAGE,
    ImageMapError: ExitStatus.USAGE,
    SpecsError: ExitStatus.USAGE,
    SelectionError: ExitStatus.USAGE,
    SourceError: ExitStatus.USAGE,
    StoreError: ExitStatus.USAGE,
    SandboxError: ExitStatus.UNAVAILABLE,  # SandboxUnavailable, or an engine that fails to answer
    WorkspacesUnsafe: ExitStatus.USAGE,
}

console = Console(stderr=True, soft_wrap=True, highlight=False)


class Commands(TyperGroup):
    """A typer group that ends a user's mistake raised by any of its commands per
    `USER_ERRORS`. Nested groups each have it, so a sub-app invoked on its own (tests) behaves
    as it does under `testprism`; the innermost one handles the error."""

    def invoke(self, ctx: typer.Context) -> Any:
        try:
            return super().invoke(ctx)
        except tuple(USER_ERRORS) as exc:
            status = next(code for kind, code in USER_ERRORS.items() if isinstance(exc, kind))
            console.print(f"testprism: error: {exc}", markup=False)
            if ctx.find_root().params.get("verbose"):
                console.print_exception()
            raise typer.Exit(status) from exc


def known_backend(name: str) -> str:
    """`--backend` callback: an unknown name is a usage error (2) found while the command line
    is parsed, not a sandbox unavailable on this machine (3)."""
    try:
        backend_class(name)
    except SandboxUnavailable as exc:
        raise typer.BadParameter(str(exc).removeprefix("--backend: ")) from exc
    return name
