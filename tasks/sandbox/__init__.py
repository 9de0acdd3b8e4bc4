"""Sandbox backends: `local` (bubblewrap) and, with the docker extra, `docker`; others come
from packages that declare an entry point in the `testprism.sandboxes` group
(tasks/sandbox/base.py, docs/architecture.md)."""

from testprism.tasks.sandbox.base import (
    ExecResult,
    Limits,
    RunRequest,
    SandboxBackend,
    SandboxError,
    SandboxUnavailable,
    backend_class,
    backend_names,
    register,
)
from testprism.tasks.sandbox.outputs import RunOutputs

__all__ = [
    "ExecResult",
    "Limits",
    "RunOutputs",
    "RunRequest",
    "SandboxBackend",
    "SandboxError",
    "SandboxUnavailable",
    "backend_class",
    "backend_names",
    "register",
]
