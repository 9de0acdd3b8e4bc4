"""`testprism --help` answers at once: the CLI module and its help import none of the heavy
libraries a command uses when it runs (Prefect, SciPy, polars, pyarrow, Dask). Checked in a
fresh interpreter, since this test process has imported them all already. The time it takes
is measured by bench/cli_start.py, not asserted here."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys

import pytest

from testprism.flows.errors import USER_ERRORS, user_error_status

HEAVY = ("prefect", "scipy", "polars", "pyarrow", "dask", "distributed")
#: testprism's own modules a `--help` must not pay for: the sandbox's interface and the
#: benchmark model behind it (a third of the import once), the tree-sitter grammars
OWN_HEAVY = ("testprism.tasks.sandbox.base", "testprism.tasks.model.benchmark", "testprism.tasks.model.benchmark_format",
             "testprism.tasks.model.syntax")


def _loaded_after(statement: str, modules: tuple[str, ...]) -> set[str]:
    """Which of `modules` a fresh interpreter has loaded after `statement` (a package is
    loaded whenever any module of it is)."""
    report = f"import sys; print(sorted(set(sys.modules) & {set(modules)!r}))"
    done = subprocess.run([sys.executable, "-c", f"{statement}\n{report}"], capture_output=True, text=True, check=True)
    return set(eval(done.stdout.strip().splitlines()[-1]))  # noqa: S307 -- our own print of a sorted list


def _heavy_after(statement: str) -> list[str]:
    return sorted(_loaded_after(statement, HEAVY + OWN_HEAVY))


def _cli(args: list[str]) -> str:
    """A statement that runs the CLI on `args` and checks it ended well."""
    return ("from testprism.flows.cli import app\ntry:\n    app(%r)\nexcept SystemExit as exc:\n"
            "    assert exc.code == 0, exc.code" % (args,))


def test_importing_the_cli_loads_no_heavy_library() -> None:
    assert _heavy_after("import testprism.flows.cli") == []


@pytest.mark.parametrize("args", [["--help"], ["replay", "--help"], ["collect", "--help"], ["import", "harbor", "--help"]])
def test_help_loads_no_heavy_library(args: list[str]) -> None:
    assert _heavy_after(_cli(args)) == []


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


#: what building a command's options costs: pydantic (typer coerces with it, the settings
#: are its models) and the stages' settings models
SETTINGS = ("pydantic", "typer._adapters", "testprism.tasks.replay.settings", "testprism.tasks.collect.settings",
            "testprism.tasks.generate.settings")


def test_the_command_list_builds_no_command() -> None:
    """`testprism --help` lists the commands from their help text alone
    (flows/command_group.py): no settings model, no pydantic. The control is `replay --help`,
    which builds replay's options, and so loads pydantic and replay's settings (only)."""
    assert _loaded_after(_cli(["--help"]), SETTINGS) == set()
    assert _loaded_after(_cli(["replay", "--help"]), SETTINGS) == {"pydantic", "testprism.tasks.replay.settings"}


_SUB_HELP = """import typer, typer.core
from testprism.flows.command_group import Commands
app = typer.Typer(cls={cls}, add_completion=False)  # as the CLI: completion options are coerced too
@app.callback()
def main() -> None: pass
@app.command()
def sub(n: int = 1) -> None: pass
try:
    app(["sub", "--help"])
except SystemExit as exc:
    assert exc.code == 0, exc.code"""


def test_a_group_s_absent_help_flag_is_not_coerced_through_pydantic() -> None:
    """`Commands.get_help_option`: `testprism replay --help` does not pay for typer's pydantic
    coercion of the group's own absent `--help`. Control: typer's own group does."""
    assert _loaded_after(_SUB_HELP.format(cls="Commands"), ("typer._adapters",)) == set()
    assert _loaded_after(_SUB_HELP.format(cls="typer.core.TyperGroup"), ("typer._adapters",)) == {"typer._adapters"}


def test_the_command_list_shows_what_typer_builds() -> None:
    """Each command's summary in the list is the command typer builds (its help, short help,
    panel, hidden and deprecated marks), for every command and group, in typer's order."""
    import typer.main

    from testprism.flows.cli import app, commands

    built = typer.main.get_group(commands)  # typer's own group, every command built up front
    group = typer.main.get_command(app)
    ctx = typer.Context(group)
    assert group.list_commands(ctx) == list(built.commands)
    for name, command in built.commands.items():
        summary = group.summary(name)  # what the group hands out while its help is drawn
        assert summary is not None and not summary.params
        seen = ("name", "help", "short_help", "hidden", "deprecated", "rich_help_panel", "rich_markup_mode")
        assert {k: getattr(summary, k) for k in seen} == {k: getattr(command, k) for k in seen}, name
    replay = group.get_command(ctx, "replay")
    assert replay is not None and [p.name for p in replay.params] == [p.name for p in built.commands["replay"].params]


def test_a_mistyped_command_is_answered_with_the_one_meant() -> None:
    from typer.testing import CliRunner

    from testprism.flows.cli import app

    result = CliRunner().invoke(app, ["replai"])
    assert result.exit_code == 2
    assert "Did you mean 'replay'" in result.output


def test_the_command_list_shows_each_command_s_first_sentence_whole() -> None:
    """`Commands.format_commands`: click would cut "Replay every suite on buggy, reference and
    every candidate;..." at the line's width. Control: typer's own group over the same
    commands does cut it."""
    import typer.main
    from typer.testing import CliRunner

    from testprism.flows.cli import app, commands

    def listed(text: str) -> str:
        return "".join(text.split())  # wrapped anywhere, at hyphens too

    built = typer.main.get_group(commands)
    shown = listed(CliRunner().invoke(app, ["--help"]).output)
    firsts = {name: listed(command.get_short_help_str(limit=10_000)) for name, command in built.commands.items()}
    assert all(first in shown for first in firsts.values())
    plain = typer.core.TyperGroup(name="testprism", commands=built.commands, rich_markup_mode=None)
    assert not all(first in listed(plain.get_help(typer.Context(plain))) for first in firsts.values())


def test_a_group_with_nothing_after_it_prints_its_help_on_stdout() -> None:
    """`testprism` alone (or `testprism import`): the help on stdout, as `--help` has it, so
    `testprism | less` pages it; exit 2. Control: typer's own group writes it to stderr."""
    from typer.testing import CliRunner

    from testprism.flows.cli import app, import_app

    for group in (app, import_app):
        result = CliRunner().invoke(group, [])
        assert result.exit_code == 2 and "Usage:" in result.stdout and not result.stderr
    import typer

    plain = typer.Typer(no_args_is_help=True, add_completion=False, rich_markup_mode=None)
    plain.command()(lambda: None)
    plain.command("other")(lambda: None)
    result = CliRunner().invoke(plain, [])
    assert "Usage:" in result.stderr and not result.stdout


def test_a_settings_model_that_is_not_there_is_named() -> None:
    """A wrong "module:Class" in `settings_options` says so when the command is built, not
    as a NameError from typer about the command's annotations."""
    from testprism.flows.settings_options import SettingsCommand

    def command(*, settings: object) -> None:
        """A command."""

    wrong = SettingsCommand(command, {"settings": "testprism.tasks.replay.settings:ReplaySetting"})
    with pytest.raises(LookupError, match="has no ReplaySetting"):
        inspect.signature(wrong)
