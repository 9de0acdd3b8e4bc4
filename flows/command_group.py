"""The CLI's command groups: `Commands`, the class of each typer app of the CLI, and
`LazyCommands`, the `testprism` group, whose commands typer builds when one is asked for.

`Commands` ends a user's mistake in one line and an exit status (flows/errors.py), and draws
its help as click's plain text, with two fixes of its own (below).

`LazyCommands`: typer builds every command of an app before it parses a word. For each,
it reads the function's signature and evaluates its annotations twice, and a command whose
options come from a stage's settings model (flows/settings_options.py) loads pydantic and
the model. That was most of what `testprism --help` cost, for options it does not show.
Here the commands are registered on a `source` app as usual; the group builds one with
typer's own `get_command_from_info` (or `get_group_from_info`, for `import` and `images`)
on its first use, and keeps it. The group's own help lists each command by its name and
help text, which need no signature: while it is drawn, the group hands out summaries (a
command with the same name, help and panel, and no options).

Click documents the pattern ("Lazily Loading Subcommands"); `commands` stays a mapping, so
typer's "did you mean" and code that reads `group.commands[name]` see every command.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import typer
import typer.main
from typer import _click
from typer.core import TyperCommand, TyperGroup
from typer.models import CommandInfo, TyperInfo

from testprism.flows.errors import console, user_error_status


class Commands(TyperGroup):
    """A typer group that ends a user's mistake raised by any of its commands per
    `USER_ERRORS` (flows/errors.py). Nested groups each have it, so a sub-app invoked on its
    own (tests) behaves as it does under `testprism`; the innermost one handles the error."""

    def get_help_option(self, ctx: typer.Context) -> Any:
        # typer gives `--help` no default, so a group's absent `--help` (as in `testprism
        # replay --help`) is coerced through a pydantic TypeAdapter: ~50 ms of imports and
        # plugin discovery before any help is drawn. False is what an absent flag means, and
        # a bool skips the coercion (typer.core._TyperParameter.process_value).
        option = super().get_help_option(ctx)
        if option is not None and option.default is None:
            option.default = False
        return option

    def format_commands(self, ctx: typer.Context, formatter: Any) -> None:
        """click's command list, with each command's first sentence whole, wrapped: click cuts
        it at one line's width ("Replay every suite on buggy, reference and every candidate;...")."""
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=len(command.help or "") + 1)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        # Nothing after the group: its help on stdout as for `--help` (`testprism | less`
        # pages it), exit status 2. click's NoArgsIsHelpError would write it to stderr.
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            typer.echo(ctx.get_help(), color=ctx.color)
            ctx.exit(2)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: typer.Context) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as exc:
            status = user_error_status(exc)
            if status is None:
                raise
            console.print(f"testprism: error: {exc}", markup=False)
            if ctx.find_root().params.get("verbose"):
                console.print_exception()
            raise typer.Exit(status) from exc


def _name(info: CommandInfo | TyperInfo) -> str:
    if isinstance(info, TyperInfo):
        return str(info.name)
    return info.name or typer.main.get_command_name(info.callback.__name__)  # type: ignore[union-attr]


class _Built(Mapping[str, _click.Command]):
    """`source`'s commands by name, in the order they were registered; each built on first
    access."""

    def __init__(self, source: typer.Typer, rich_markup_mode: Any) -> None:
        self._source = source
        self._markup = rich_markup_mode
        self._infos = {_name(info): info for info in (*source.registered_commands, *source.registered_groups)}
        self._built: dict[str, _click.Command] = {}

    def info(self, name: str) -> CommandInfo | TyperInfo | None:
        return self._infos.get(name)

    def __getitem__(self, name: str) -> _click.Command:
        if name not in self._built:
            info = self._infos[name]
            short = self._source.pretty_exceptions_short
            if isinstance(info, TyperInfo):
                self._built[name] = typer.main.get_group_from_info(
                    info, pretty_exceptions_short=short, rich_markup_mode=self._markup,
                    suggest_commands=self._source.suggest_commands)
            else:
                self._built[name] = typer.main.get_command_from_info(
                    info, pretty_exceptions_short=short, rich_markup_mode=self._markup)
        return self._built[name]

    def __contains__(self, name: object) -> bool:
        return name in self._infos  # Mapping's own would build it

    def __iter__(self) -> Iterator[str]:
        return iter(self._infos)

    def __len__(self) -> int:
        return len(self._infos)


#: set in a context's `meta` while the group draws its help there
_DRAWING_HELP = "testprism.drawing_help"


class LazyCommands(Commands):
    """A `Commands` group over `source`'s commands, built as they are used (module doc).
    `over(source)` makes the class typer is given as `cls=`."""

    source: ClassVar[typer.Typer]

    @classmethod
    def over(cls, source: typer.Typer) -> type[LazyCommands]:
        return type(cls.__name__, (cls,), {"source": source, "__doc__": cls.__doc__})

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = _Built(self.source, self.rich_markup_mode)  # type: ignore[assignment]

    def list_commands(self, ctx: _click.Context) -> list[str]:
        return list(self.commands)  # the names alone: typer's own reads every command

    def get_command(self, ctx: _click.Context, cmd_name: str) -> _click.Command | None:
        if cmd_name not in self.commands:
            return None
        if ctx.meta.get(_DRAWING_HELP):
            return self.summary(cmd_name)
        return self.commands[cmd_name]

    def format_help(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        # marked on the context, not the group: another call's context never sees summaries
        ctx.meta[_DRAWING_HELP] = True
        try:
            super().format_help(ctx, formatter)
        finally:
            del ctx.meta[_DRAWING_HELP]

    def summary(self, name: str) -> _click.Command:
        """What the group's help shows of a command, from what typer would build it with."""
        info = self.commands.info(name)  # type: ignore[attr-defined]
        if isinstance(info, TyperInfo):
            group = typer.main.solve_typer_info_defaults(info)
            return TyperGroup(name=name, help=group.help, hidden=group.hidden, deprecated=group.deprecated,
                              rich_markup_mode=self.rich_markup_mode, rich_help_panel=group.rich_help_panel)
        text = inspect.getdoc(info.callback) if info.help is None else inspect.cleandoc(info.help)
        return TyperCommand(name=name, help=text, short_help=info.short_help, hidden=info.hidden,
                            deprecated=info.deprecated, rich_markup_mode=self.rich_markup_mode,
                            rich_help_panel=info.rich_help_panel)
