"""The docker backend's own settings, declared once: each a field with its default and help,
read from `TESTPRISM_DOCKER_<FIELD>` when not given (pydantic-settings' convention: what is
given > the environment > the default).

They were environment switches read where each was needed (the backend's constructor, the
base image, the copy mode), so they showed in no `--help`, no run form and no pipeline
config. Here they are the typed sandbox part of where runs happen: `RunSettings.docker`
(tasks/execution/run_settings.py) carries them to every batch, so a Dask worker runs with
the flow's settings rather than its own environment's; the CLI shows them (`--docker-reuse`,
...) and a pipeline config's `[run.docker]` holds them. The variables stay as overrides for
what no option was given.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class DockerSettings(BaseSettings):
    """How the docker backend runs (docs/docker.md)."""

    #: the copy mode's variable is TESTPRISM_DOCKER_COPY (a field cannot be named `copy`: pydantic's own method)
    model_config = SettingsConfigDict(env_prefix="TESTPRISM_DOCKER_", extra="forbid", frozen=True,
                                      populate_by_name=True, env_ignore_empty=True)

    base: str | None = Field(
        None, description="base image of the environments' images (default: testprism-base:bookworm)",
        json_schema_extra={"cli": "--docker-base"})
    reuse: bool = Field(
        False, description="fast mode: one container kept per environment and worker, reset between runs "
                           "(a run can tell it is not the first: docs/docker.md)",
        json_schema_extra={"cli": "--docker-reuse"})
    cpus: float | None = Field(
        None, gt=0, description="CPU quota of a run's container (default: every core, as a local run has)",
        json_schema_extra={"cli": "--docker-cpus"})
    copy_mode: Literal["bind", "archive"] | None = Field(
        None, validation_alias=AliasChoices("copy_mode", "copy", "TESTPRISM_DOCKER_COPY"), description="how a run gets its workspace: bind (the engine shares this host's files) "
                                        "or archive (default: bind where the engine is on this host, not rootless)",
        json_schema_extra={"cli": "--docker-copy"})
    prewarm: bool = Field(
        False, description="start each run's container ahead (-0.1 s a run; its start time then tells a run "
                           "whether it was its worker's first: docs/docker.md)",
        json_schema_extra={"cli": "--docker-prewarm"})
    runtime: str | None = Field(
        None, description="the engine's runtime for runs, e.g. runsc (gVisor: a kernel of the run's own)",
        json_schema_extra={"cli": "--docker-runtime"})
