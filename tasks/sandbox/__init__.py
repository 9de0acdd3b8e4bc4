"""Sandbox backends: `local` (bubblewrap) and, with the docker extra, `docker`."""

from testprism.tasks.sandbox import docker, local  # noqa: F401  (registers the backends; docker's SDK loads lazily)
from testprism.tasks.sandbox.base import (
    ExecResult,
    Limits,
    RunRequest,
    SandboxBackend,
    SandboxError,
    SandboxUnavailable,
    backend_class,
    register,
)

__all__ = [
    "ExecResult",
    "Limits",
    "RunRequest",
    "SandboxBackend",
    "SandboxError",
    "SandboxUnavailable",
    "backend_class",
    "register",
]
