"""`testprism --help` answers at once: the CLI module and its help import none of the heavy
libraries a command uses when it runs (Prefect, SciPy, polars, pyarrow, Dask). Checked in a
fresh interpreter, since this test process has imported them all already. The time it takes
is measured by bench/cli_start.py, not asserted here."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from testprism.flows.errors import USER_ERRORS, user_error_status

HEAVY = ("prefect", "scipy", "polars", "pyarrow", "dask", "distributed")
#: testprism's own modules a `--help` must not pay for: the sandbox's interface and the
#: benchmark model behind it (a third of the import once), the tree-sitter grammars
OWN_HEAVY = ("testprism.tasks.sandbox.base", "testprism.tasks.model.benchmark", "testprism.tasks.model.syntax")

#: prints, after whatever the statement before it printed, the heavy modules loaded
_LOADED = (f"import sys; print(sorted(({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r})"
           f" | (set(sys.modules) & {set(OWN_HEAVY)!r})))")


def _heavy_after(statement: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", f"{statement}\n{_LOADED}"], capture_output=True, text=True,
                          check=True)
    return eval(done.stdout.strip().splitlines()[-1])  # noqa: S307 -- our own print of a sorted list


def test_importing_the_cli_loads_no_heavy_library() -> None:
    assert _heavy_after("import testprism.flows.cli") == []


@pytest.mark.parametrize("args", [["--help"], ["replay", "--help"], ["collect", "--help"], ["import", "harbor", "--help"]])
def test_help_loads_no_heavy_library(args: list[str]) -> None:
    statement = ("from testprism.flows.cli import app\ntry:\n    app(%r)\nexcept SystemExit as exc:\n"
                 "    assert exc.code == 0, exc.code" % (args,))
    assert _heavy_after(statement) == []


def test_the_control_a_command_s_flow_does_load_them() -> None:
    """The check above can see a heavy import: the replay flow's module loads Prefect and
    the sandbox's interface."""
    assert {"prefect", *OWN_HEAVY} <= set(_heavy_after("import testprism.flows.replay"))


@pytest.mark.parametrize("where", list(USER_ERRORS))
def test_every_user_error_named_exists(where: str) -> None:
    """USER_ERRORS names its classes (so the CLI need not import them): each name resolves to
    an exception, and an instance of it maps to its status."""
    module, _, name = where.rpartition(".")
    kind = getattr(importlib.import_module(module), name)
    assert issubclass(kind, Exception)
    assert user_error_status(kind.__new__(kind)) is USER_ERRORS[where]


def test_an_error_not_named_is_not_a_user_error() -> None:
    assert user_error_status(KeyError("x")) is None
