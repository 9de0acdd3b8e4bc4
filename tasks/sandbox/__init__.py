"""Sandbox backends: `local` (bubblewrap) and, with the docker extra, `docker`."""

from testprism.tasks.sandbox import local  # noqa: F401  (registers the backend)
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
