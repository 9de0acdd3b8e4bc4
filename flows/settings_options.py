"""A stage's settings object as CLI options: the one declaration (a pydantic model in the
stage's folder, e.g. tasks/replay/settings.py) is what typer shows and checks.

`@settings_options(Model)` on a command whose last parameter is `settings: Model` replaces
that parameter by one option per field: its name (`--timeout-s`, or the field's
`json_schema_extra["cli"]`), default and help text are the field's; a tuple field is a
repeatable option; a bool is a `--x/--no-x` flag. What the user gave is validated by the
model itself, so its bounds are the CLI's: a value out of them ends as typer's usage error
naming the option (exit 2), never a traceback.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer
from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


def _cli_name(name: str, field: Any) -> str:
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    return str(extra.get("cli") or "--" + name.replace("_", "-"))


def _option(name: str, field: Any) -> inspect.Parameter:
    """One field as a keyword parameter typer reads: a repeated option for a tuple."""
    annotation, default = field.annotation, field.default
    if typing.get_origin(annotation) is tuple:
        annotation, default = list[typing.get_args(annotation)[0]], list(default)
    flag = _cli_name(name, field)
    decls = [f"{flag}/--no-{flag[2:]}"] if annotation is bool else [flag]
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                             annotation=Annotated[annotation, typer.Option(*decls, help=field.description)])


def settings_options(model: type[M]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The decorator: `model`'s fields become the command's options, handed back as one
    `settings` object."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(command)
        hints = typing.get_type_hints(command, include_extras=True)  # typer reads the signature's, evaluated
        kept = [p.replace(annotation=hints.get(p.name, p.annotation))
                for p in signature.parameters.values() if p.name != "settings"]
        added = [_option(name, field) for name, field in model.model_fields.items()]

        @functools.wraps(command)
        def wrapper(**given: Any) -> Any:
            values = {name: given.pop(name) for name in model.model_fields}
            try:
                settings = model(**values)
            except ValidationError as exc:
                error = exc.errors()[0]
                name = str(error["loc"][0])
                raise typer.BadParameter(error["msg"], param_hint=_cli_name(name, model.model_fields[name])) from None
            return command(**given, settings=settings)

        wrapper.__annotations__ = {p.name: p.annotation for p in (*kept, *added)} | {"return": None}
        wrapper.__signature__ = signature.replace(parameters=[*kept, *added])  # type: ignore[attr-defined]
        return wrapper

    return decorate
