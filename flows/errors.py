"""How a command ends when its user got something wrong: one line naming the file and the
field, an exit status that tells the kind of mistake, and the traceback only with --verbose.

One place does it for every command: `Commands` (flows/command_group.py), the group class of
every typer app of the CLI, maps the project's error types (`USER_ERRORS`) to an exit status,
so no command catches them one by one. Any other exception is a bug and keeps its traceback.
The flows' inputs are checked before a flow starts (flows.runner.open_inputs,
tasks.score.scores.scorable_store), so a mistake never reaches Prefect, which would log its
own traceback of the failed flow run.

Exit statuses (docs/commands.md, "Exit status"):

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

import sys
from enum import IntEnum

import typer
from rich.console import Console


class ExitStatus(IntEnum):
    DONE = 0
    FAILED = 1
    USAGE = 2
    UNAVAILABLE = 3


#: The errors a user causes, and the exit status of each, by where each is defined. Their
#: messages name the file and the field already (BenchmarkError, RecipeError: "path: field f:
#: problem"). Named, not imported: an error can only be raised once its module is loaded, so
#: `user_error_status` looks each up among the loaded modules and importing the CLI (for its
#: `--help`) imports none of them.
USER_ERRORS: dict[str, ExitStatus] = {
    "testprism.tasks.model.input_error.BenchmarkError": ExitStatus.USAGE,
    "testprism.tasks.importing.recipe.RecipeError": ExitStatus.USAGE,
    "testprism.tasks.importing.image_names.ImageMapError": ExitStatus.USAGE,
    "testprism.tasks.importing.image_specs.SpecsError": ExitStatus.USAGE,
    "testprism.tasks.generate.selection.SelectionError": ExitStatus.USAGE,
    "testprism.tasks.importing.sources.SourceError": ExitStatus.USAGE,
    "testprism.storage.errors.StoreError": ExitStatus.USAGE,
    # SandboxUnavailable, or an engine that fails to answer
    "testprism.tasks.sandbox.base.SandboxError": ExitStatus.UNAVAILABLE,
    "testprism.tasks.model.workdir.WorkspacesUnsafe": ExitStatus.USAGE,
}


def user_error_status(exc: BaseException) -> ExitStatus | None:
    """The exit status of `exc` when it is a user's mistake (`USER_ERRORS`), else None."""
    for where, status in USER_ERRORS.items():
        module, _, name = where.rpartition(".")
        loaded = sys.modules.get(module)
        if loaded is not None and isinstance(exc, getattr(loaded, name)):
            return status
    return None


console = Console(stderr=True, soft_wrap=True, highlight=False)


def known_backend(name: str) -> str:
    """`--backend` callback: an unknown name is a usage error (2) found while the command line
    is parsed, not a sandbox unavailable on this machine (3)."""
    from testprism.tasks.sandbox.base import SandboxUnavailable, backend_class

    try:
        backend_class(name)
    except SandboxUnavailable as exc:
        raise typer.BadParameter(str(exc).removeprefix("--backend: ")) from exc
    return name
