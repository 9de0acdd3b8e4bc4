"""Where runs happen is one model (tasks/execution/run_settings.py): the CLI's options of every
sandboxed command, a flow's `run=`, a pipeline config's [run]; the docker backend's own
switches are its typed part, the TESTPRISM_DOCKER_* variables filling only what no option,
table or parameter gives (pydantic-settings' order)."""

from __future__ import annotations

import typer
from typer.testing import CliRunner

from testprism.flows.command_group import Commands
from testprism.flows.settings_options import RUN_SETTINGS, settings_options
from testprism.tasks.execution.run_settings import RunSettings
from testprism.tasks.sandbox.docker.settings import DockerSettings


def _seen(args: list[str]) -> RunSettings:
    """The RunSettings a sandboxed command is handed for `args`."""
    app = typer.Typer(cls=Commands)
    seen: list[RunSettings] = []

    @app.command()
    @settings_options(run=RUN_SETTINGS)
    def stage(*, run: RunSettings) -> None:
        seen.append(run)

    @app.command()
    def other() -> None:  # two commands: typer then expects the command's name
        pass

    result = CliRunner().invoke(app, ["stage", *args])
    assert result.exit_code == 0, result.output
    return seen[0]


def test_the_environment_fills_what_no_option_gives_and_an_option_wins(monkeypatch):
    monkeypatch.setenv("TESTPRISM_DOCKER_RUNTIME", "runsc")
    monkeypatch.setenv("TESTPRISM_DOCKER_REUSE", "1")
    run = _seen(["--backend", "docker", "--workers", "2"])
    assert (run.backend, run.workers, run.docker.runtime, run.docker.reuse) == ("docker", 2, "runsc", True)
    assert run.sandbox() == run.docker
    run = _seen(["--backend", "docker", "--docker-runtime", "runc", "--no-docker-reuse"])
    assert (run.docker.runtime, run.docker.reuse) == ("runc", False)
    # control: without the variables, the defaults
    monkeypatch.delenv("TESTPRISM_DOCKER_RUNTIME")
    monkeypatch.delenv("TESTPRISM_DOCKER_REUSE")
    assert _seen([]).docker == DockerSettings() and DockerSettings().runtime is None


def test_a_table_or_parameter_is_filled_the_same_way_and_only_docker_gets_them(monkeypatch):
    monkeypatch.setenv("TESTPRISM_DOCKER_COPY", "archive")
    run = RunSettings.model_validate({"backend": "docker", "docker": {"prewarm": True}})
    assert (run.docker.prewarm, run.docker.copy_mode) == (True, "archive")
    assert RunSettings(backend="local").sandbox() is None


def test_a_bad_value_is_a_usage_error_naming_its_option():
    app = typer.Typer(cls=Commands)

    @app.command()
    @settings_options(run=RUN_SETTINGS)
    def stage(*, run: RunSettings) -> None:
        pass

    @app.command()
    def other() -> None:
        pass

    for args, option in ((["--backend", "nope"], "'--backend'"), (["--workers", "0"], "'--workers'"),
                         (["--docker-copy", "scp"], "--docker-copy")):
        result = CliRunner().invoke(app, ["stage", *args])
        assert result.exit_code == 2 and option in result.output, result.output
