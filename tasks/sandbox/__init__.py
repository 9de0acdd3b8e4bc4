"""Sandbox backends: `local` (bubblewrap) and, with the docker extra, `docker`; others come
from packages that declare an entry point in the `testprism.sandboxes` group
(tasks/sandbox/base.py, docs/architecture.md).

Nothing is imported here: a module that needs only a run's limits (limits.py) must not load
the backends' interface and the benchmark model with it (the CLI's `--help`, issue 32)."""
