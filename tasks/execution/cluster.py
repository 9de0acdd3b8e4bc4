"""A Dask cluster a flow starts for itself, named by configuration: the class and its keyword
arguments, never code.

Batches reach a cluster one of three ways (flows/runner.py's `Placement`): a LocalCluster of
`workers` processes on this host, an existing scheduler's address (`dask scheduler` on a
login node with `dask worker` jobs, a Dask-operator `DaskCluster` on Kubernetes), or a
cluster class the flow starts and stops with the run: dask-jobqueue's `SLURMCluster` or
`PBSCluster`, dask-kubernetes' `KubeCluster`. The last is what a scheduled deployment wants
on a batch system: the jobs exist only while a replay runs, and `adapt` grows and shrinks
them with the work left. docs/deployments.md has the walkthrough.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator


class DaskCluster(BaseModel):
    """`class` (an import path) called with `kwargs`; `adapt`, when given, is passed to the
    cluster's `adapt()` (minimum, maximum workers) instead of a fixed size.

    Its workers need `PREFECT_API_URL` of the flow's server where they start (a jobqueue
    cluster's `job_script_prologue`, a KubeCluster's `env`); a LocalCluster named here gets
    the flow's own, as the `workers` LocalCluster does."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    class_path: str = Field(alias="class", pattern=r"^[A-Za-z_][\w.]*\.[A-Za-z_]\w*$")
    kwargs: dict[str, Any] = Field(default_factory=dict)
    adapt: dict[str, Any] | None = None

    @field_validator("class_path")
    @classmethod
    def _importable(cls, value: str) -> str:
        """A missing package fails when the config is read, with what to install, not in
        the middle of a flow run."""
        module = value.rpartition(".")[0]
        try:
            found = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            found = None
        if found is None:
            package = module.split(".")[0].replace("_", "-")
            raise ValueError(f"cannot import {module!r} (is {package} installed? pip install {package})")
        return value

    @property
    def is_local(self) -> bool:
        """Workers on this host, sharing its cores (distributed's LocalCluster)."""
        return self.class_path.rpartition(".")[2] == "LocalCluster"
