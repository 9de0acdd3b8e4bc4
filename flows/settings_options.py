"""A stage's settings object as CLI options: the one declaration (a pydantic model in the
stage's folder, e.g. tasks/replay/settings.py) is what typer shows and checks.

`@settings_options("module:Model")` on a command whose last parameter is `*, settings: Model`
(keyword-only, no default) replaces that parameter by one option per field: its name
(`--timeout-s`, or the field's `json_schema_extra["cli"]`), default and help text are the
field's; a tuple field is a repeatable option; a bool is a `--x/--no-x` flag; a field
without a default is a required option; `json_schema_extra["typer"]` adds typer's own
checks (`exists`, `dir_okay`).

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
import importlib
import inspect
import typing
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from pydantic import BaseModel

#: the separator of a flattened field's parameter name (`caps__run_tokens`)
NESTED = "__"


def _extra(field: Any) -> dict:
    return field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}


def _cli_name(name: str, field: Any) -> str:
    return str(_extra(field).get("cli") or "--" + name.replace("_", "-"))


def _nested(field: Any) -> type[BaseModel] | None:
    from pydantic import BaseModel

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


class SettingsCommand:
    """A command whose `settings` parameter is replaced by the model's fields. Its signature
    (what typer reads) is made on first use, so defining the CLI's commands loads neither the
    model nor pydantic: `testprism --help` never reads one (flows/command_group.py)."""

    def __init__(self, command: Callable[..., Any], model: str) -> None:
        functools.update_wrapper(self, command, assigned=("__module__", "__name__", "__qualname__", "__doc__"))
        self._command = command
        self._model_path = model

    @functools.cached_property
    def model(self) -> type[BaseModel]:
        module, _, name = self._model_path.partition(":")
        try:
            return getattr(importlib.import_module(module), name)
        except AttributeError:
            # not an AttributeError: `inspect` reads `__signature__` through hasattr, which
            # would hide it and let typer fail later on the command's own annotations
            raise LookupError(f"settings_options: {module} has no {name}") from None

    @functools.cached_property
    def __signature__(self) -> inspect.Signature:
        signature = inspect.signature(self._command)
        # typer reads the signature's annotations evaluated; `settings`'s names the model
        hints = typing.get_type_hints(self._command, localns={self.model.__name__: self.model}, include_extras=True)
        kept = [p.replace(annotation=hints.get(p.name, p.annotation))
                for p in signature.parameters.values() if p.name != "settings"]
        added = [_option(name, field) for name, field in _fields(self.model)]
        return signature.replace(parameters=[*kept, *added], return_annotation=None)

    @functools.cached_property
    def __annotations__(self) -> dict[str, Any]:  # type: ignore[override]
        return {p.name: p.annotation for p in self.__signature__.parameters.values()} | {"return": None}

    def __call__(self, **given: Any) -> Any:
        from pydantic import ValidationError

        values = _values(self.model, given)
        try:
            settings = self.model(**values)
        except ValidationError as exc:
            error = exc.errors()[0]
            raise typer.BadParameter(error["msg"], param_hint=_hint(self.model, tuple(error["loc"]))) from None
        return self._command(**given, settings=settings)


def settings_options(model: str) -> Callable[[Callable[..., Any]], SettingsCommand]:
    """The decorator: the fields of `model` ("module:Class") become the command's options,
    handed back as one `settings` object."""
    return functools.partial(SettingsCommand, model=model)
