"""A stage's settings object as CLI options: the one declaration (a pydantic model in the
stage's folder, e.g. tasks/replay/settings.py) is what typer shows and checks.

`@settings_options("module:Model")` on a command whose last parameter is `*, settings: Model`
(keyword-only, no default) replaces that parameter by one option per field; `run="module:Run"`
(any keyword) does the same for a keyword-only parameter of that name, so a stage's command
takes its own settings and where it runs (tasks/execution/run_settings.py) as two objects: its name
(`--timeout-s`, or the field's `json_schema_extra["cli"]`), default and help text are the
field's; a tuple field is a repeatable option; a bool is a `--x/--no-x` flag; a field
without a default is a required option; `json_schema_extra["typer"]` adds typer's own
checks (`exists`, `dir_okay`).

A field whose type is itself a model (generate's `caps: Caps`) is flattened: each of its
fields is an option of its own (`--run-tokens`), gathered back into the nested model,
except those whose `json_schema_extra["cli"]` is False (they keep the nested model's
default). A field marked so at the top level (a run's `dask_cluster`) is no option either. Flattened here rather than in the model: the nested model is shared (Caps is
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
        if _extra(field).get("cli") is False:
            continue
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


def _values(model: type[BaseModel], given: dict[str, Any], defaulted: frozenset[str] = frozenset()
            ) -> dict[str, Any]:
    """The model's values from the command's keyword arguments (popped from `given`). An
    option of a nested settings model left at its default (`defaulted`) is not passed: the
    nested model's environment variables then fill it, as pydantic-settings does when
    nothing is given (a run's docker settings, TESTPRISM_DOCKER_*)."""
    values: dict[str, Any] = {}
    for name, _ in _fields(model):
        value = given.pop(name)
        if NESTED in name and name in defaulted and _is_settings(model, name.split(NESTED)[0]):
            values.setdefault(name.split(NESTED)[0], {})
            continue
        if NESTED in name:
            outer, inner = name.split(NESTED)
            values.setdefault(outer, {})[inner] = value
        else:
            values[name] = value
    return values


def _is_settings(model: type[BaseModel], field: str) -> bool:
    """Whether `model`'s field `field` is a pydantic-settings model (read from the environment)."""
    from pydantic_settings import BaseSettings

    inner = _nested(model.model_fields[field])
    return inner is not None and issubclass(inner, BaseSettings)


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


def _load(path: str) -> type[BaseModel]:
    module, _, name = path.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except AttributeError:
        # not an AttributeError: `inspect` reads `__signature__` through hasattr, which
        # would hide it and let typer fail later on the command's own annotations
        raise LookupError(f"settings_options: {module} has no {name}") from None


class SettingsCommand:
    """A command whose settings parameters (`settings`, `run`...) are replaced by their
    models' fields. Its signature (what typer reads) is made on first use, so defining the
    CLI's commands loads neither a model nor pydantic: `testprism --help` never reads one
    (flows/command_group.py)."""

    def __init__(self, command: Callable[..., Any], models: dict[str, str]) -> None:
        functools.update_wrapper(self, command, assigned=("__module__", "__name__", "__qualname__", "__doc__"))
        self._command = command
        self._model_paths = models

    @functools.cached_property
    def models(self) -> dict[str, type[BaseModel]]:
        """Parameter name → its model."""
        return {param: _load(path) for param, path in self._model_paths.items()}

    @functools.cached_property
    def __signature__(self) -> inspect.Signature:
        signature = inspect.signature(self._command)
        # typer reads the signature's annotations evaluated; the settings parameters' name their models
        hints = typing.get_type_hints(self._command, localns={m.__name__: m for m in self.models.values()},
                                      include_extras=True)
        kept = [p.replace(annotation=hints.get(p.name, p.annotation))
                for p in signature.parameters.values() if p.name not in self.models]
        added = [_option(name, field) for model in self.models.values() for name, field in _fields(model)]
        names = [p.name for p in (*kept, *added)]
        clash = sorted({n for n in names if names.count(n) > 1})
        if clash:
            raise LookupError(f"settings_options: {self._command.__name__} declares {', '.join(clash)} twice")
        return signature.replace(parameters=[*kept, *added], return_annotation=None)

    @functools.cached_property
    def __annotations__(self) -> dict[str, Any]:  # type: ignore[override]
        return {p.name: p.annotation for p in self.__signature__.parameters.values()} | {"return": None}

    def __call__(self, **given: Any) -> Any:
        from pydantic import ValidationError

        # typer's own click (typer._click): the context the command runs in
        from typer._click.core import ParameterSource
        from typer._click.globals import get_current_context

        context = get_current_context(silent=True)
        defaulted = frozenset(name for name in given if context is not None
                              and context.get_parameter_source(name) is ParameterSource.DEFAULT)
        objects = {}
        for param, model in self.models.items():
            values = _values(model, given, defaulted)
            try:
                objects[param] = model(**values)
            except ValidationError as exc:
                error = exc.errors()[0]
                hint = _hint(model, tuple(error["loc"]))
                # as click names an option it checked itself: quoted, the message without pydantic's prefix
                raise typer.BadParameter(str(error["msg"]).removeprefix("Value error, "),
                                         param_hint=f"'{hint}'" if hint else None) from None
        return self._command(**given, **objects)


#: where a stage's runs happen: the model every sandboxed stage's command takes as `run`
RUN_SETTINGS = "testprism.tasks.execution.run_settings:RunSettings"


def settings_options(model: str | None = None, **models: str) -> Callable[[Callable[..., Any]], SettingsCommand]:
    """The decorator: the fields of `model` ("module:Class") become the command's options,
    handed back as one `settings` object; each of `models` (parameter name → "module:Class",
    e.g. `run=RUN_SETTINGS`) likewise as the object of that name."""
    return functools.partial(SettingsCommand, models=({"settings": model} if model else {}) | models)
