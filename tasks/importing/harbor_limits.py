"""The wall-clock limit of one Harbor solve.sh run, apart from harbor.py (the docker SDK, the
sandbox, the importer's folders) and a number, not a `Limits`: `testprism import harbor
--help` shows it as its default, and the sandbox's module (with the benchmark model behind
it) costs the CLI's start a third of its time."""

#: seconds one solve.sh run may take (a task's `[agent] timeout_sec` replaces it)
SOLVE_TIMEOUT_S = 600.0
