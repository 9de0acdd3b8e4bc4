"""Where a stage's runs happen, declared once: every stage that runs sandboxed work (replay,
collect, check, generate, crossval, rsi, score's coverage passes) takes one `RunSettings`
beside its own settings object.

The sandbox backend, the placement of batches (threads, a LocalCluster of `workers`, a
cluster by address or started from its class), the work area, whether untrusted code runs
unisolated, and the fuzz of the patch fallback were loose parameters repeated across every
flow, CLI command and the pipeline configuration. Here they are fields, with their defaults,
bounds and help text: the CLI's options are made from them (flows/settings_options.py), the
flows take the object whole (so Prefect's run form shows each field with its description),
the pipeline configuration's `[run]` section is this model, and each stage stores it with
what it ran (tasks/execution/stage_record.py). Adding a setting of where runs happen is
adding a field.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from testprism.tasks.execution.cluster import DaskCluster
from testprism.tasks.model.patch_fuzz import DEFAULT_FUZZ
from testprism.tasks.model.workdir import default_work_root
from testprism.tasks.sandbox.docker.settings import DockerSettings


class RunSettings(BaseModel):
    """Where runs happen, whatever the stage (the CLI, a deployment, a pipeline config)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    backend: str = Field("local", description="sandbox backend: local (bubblewrap) or docker")
    workers: int = Field(1, gt=0, description="> 1: run batches on a local Dask cluster of this many workers")
    dask_address: str | None = Field(None, description="scheduler address of an existing Dask cluster")
    #: a cluster started for the stage from its class (a pipeline's `[run.dask_cluster]`, a
    #: deployment's parameter): no CLI option, a class and its arguments do not fit one
    dask_cluster: DaskCluster | None = Field(
        None, description="a Dask cluster started for the stage from its class: class, kwargs, adapt",
        json_schema_extra={"cli": False})
    work: Path | None = Field(None, description="working area for environments and states (a cache)")
    unsafe_no_sandbox: bool = Field(False, description="run untrusted code without isolation")
    patch_fuzz: int = Field(
        DEFAULT_FUZZ, ge=0,
        description="fuzz of the `patch --batch -p1` fallback after `git apply`, for every patch (SWE-bench uses 5)")
    #: the docker backend's own settings (its options are --docker-reuse, --docker-runtime, ...;
    #: a pipeline config's [run.docker]); what none gives comes from TESTPRISM_DOCKER_* or the default
    docker: DockerSettings = Field(default_factory=DockerSettings,
                                   description="the docker backend's settings (tasks/sandbox/docker/settings.py)")

    @field_validator("docker", mode="before")
    @classmethod
    def _docker_from_environment(cls, value: object) -> object:
        """A mapping (a config's table, a deployment's parameter, the CLI's given options)
        made with DockerSettings' own constructor, so the TESTPRISM_DOCKER_* variables fill
        what it leaves out, as they do when nothing is given."""
        return DockerSettings(**value) if isinstance(value, dict) else value

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, name: str) -> str:
        """A name no installed backend registers is the user's mistake, found here; a
        backend that cannot run on this machine is found when the stage opens it."""
        from testprism.tasks.sandbox.base import backend_names

        known = backend_names()
        if name not in known:
            raise ValueError(f"unknown backend {name!r}; known: {', '.join(known)}")
        return name

    @model_validator(mode="after")
    def _one_cluster(self) -> RunSettings:
        if self.dask_address and self.dask_cluster:
            raise ValueError("dask_address and dask_cluster name two clusters: give one")
        return self

    def sandbox(self) -> DockerSettings | None:
        """The chosen backend's own settings, for its constructor: docker's; None for others."""
        return self.docker if self.backend == "docker" else None

    @property
    def work_root(self) -> Path:
        """The work area: the given one, else the user's cache."""
        return self.work if self.work is not None else default_work_root()
