"""The limits of one Harbor solve.sh run, apart from harbor.py (the docker SDK, the
sandbox, the importer's folders) because `testprism import harbor --help` shows the timeout
as its default and must not import those to print a number."""

from testprism.tasks.sandbox.base import Limits

#: the limits of one solve.sh run (a task's `[agent] timeout_sec` replaces the timeout)
SOLVE_LIMITS = Limits(timeout_s=600.0)
