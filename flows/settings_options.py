"""A stage's settings object as CLI options: the one declaration (a pydantic model in the
stage's folder, e.g. tasks/replay/settings.py) is what typer shows and checks.

`@settings_options(Model)` on a command whose last parameter is `*, settings: Model`
(keyword-only, no default: `--help` makes no settings object, whose schema is deferred to
its first use) replaces that parameter by one option per field: its name (`--timeout-s`, or the field's
`json_schema_extra["cli"]`), default and help text are the field's; a tuple field is a
repeatable option; a bool is a `--x/--no-x` flag; a field without a default is a required
option; `json_schema_extra["typer"]` adds typer's own checks (`exists`, `dir_okay`).

A field whose type is itself a model (generate's `caps: Caps`) is flattened: each of its
fields is an option of its own (`--run-tokens`), gathered back into the nested model,
except those whose `json_schema_extra["cli"]` is False (they keep the nested model's
default). Flattened here rather than in the model: the nested model is shared (Caps is
also a crossval config's section, an rsi space's and a generation's key), so spelling it
out in each stage's settings would declare its fields again.

What the user gave is validated by the model itself, so its bounds are the CLI's: a value
out of them ends as typer's usage error naming the option (exit 2), never a traceback.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Iterator
from typing import Annotated, Any, TypeVar

import typer
from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)

#: the separator of a flattened field's parameter name (`caps__run_tokens`)
NESTED = "__"


def _extra(field: Any) -> dict:
    return field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}


def _cli_name(name: str, field: Any) -> str:
    return str(_extra(field).get("cli") or "--" + name.replace("_", "-"))


def _nested(field: Any) -> type[BaseModel] | None:
    annotation = field.annotation
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def _fields(model: type[BaseModel]) -> Iterator[tuple[str, Any]]:
    """(parameter name, field) of every option: a nested model's fields flattened."""
    for name, field in model.model_fields.items():
        inner = _nested(field)
        if inner is None:
            yield name, field
            continue
        for sub, subfield in inner.model_fields.items():
            if _extra(subfield).get("cli") is not False:
                yield f"{name}{NESTED}{sub}", subfield


def _option(name: str, field: Any) -> inspect.Parameter:
    """One field as a keyword parameter typer reads: a repeated option for a tuple."""
    annotation = field.annotation
    default = inspect.Parameter.empty if field.is_required() else field.default
    if typing.get_origin(annotation) is tuple:
        annotation = list[typing.get_args(annotation)[0]]
        default = default if default is inspect.Parameter.empty else list(default)
    flag = _cli_name(name.split(NESTED)[-1], field)
    decls = [f"{flag}/--no-{flag[2:]}"] if annotation is bool else [flag]
    option = typer.Option(*decls, help=field.description, **_extra(field).get("typer", {}))
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                             annotation=Annotated[annotation, option])


def _values(model: type[BaseModel], given: dict[str, Any]) -> dict[str, Any]:
    """The model's values from the command's keyword arguments (popped from `given`)."""
    values: dict[str, Any] = {}
    for name, _ in _fields(model):
        value = given.pop(name)
        if NESTED in name:
            outer, inner = name.split(NESTED)
            values.setdefault(outer, {})[inner] = value
        else:
            values[name] = value
    return values


def _hint(model: type[BaseModel], loc: tuple) -> str | None:
    """The option a validation error's location names (None: the settings as a whole)."""
    if not loc:
        return None
    field = model.model_fields.get(str(loc[0]))
    if field is None:
        return None
    inner = _nested(field)
    if inner is not None and len(loc) > 1 and str(loc[1]) in inner.model_fields:
        return _cli_name(str(loc[1]), inner.model_fields[str(loc[1])])
    return _cli_name(str(loc[0]), field)


def settings_options(model: type[M]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The decorator: `model`'s fields become the command's options, handed back as one
    `settings` object."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(command)
        hints = typing.get_type_hints(command, include_extras=True)  # typer reads the signature's, evaluated
        kept = [p.replace(annotation=hints.get(p.name, p.annotation))
                for p in signature.parameters.values() if p.name != "settings"]
        added = [_option(name, field) for name, field in _fields(model)]

        @functools.wraps(command)
        def wrapper(**given: Any) -> Any:
            values = _values(model, given)
            try:
                settings = model(**values)
            except ValidationError as exc:
                error = exc.errors()[0]
                raise typer.BadParameter(error["msg"], param_hint=_hint(model, tuple(error["loc"]))) from None
            return command(**given, settings=settings)

        wrapper.__annotations__ = {p.name: p.annotation for p in (*kept, *added)} | {"return": None}
        wrapper.__signature__ = signature.replace(parameters=[*kept, *added])  # type: ignore[attr-defined]
        return wrapper

    return decorate
