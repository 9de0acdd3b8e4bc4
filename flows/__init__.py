"""Prefect flows (thin wiring of `testprism.tasks`) and the command line.

Nothing here may phone home: Prefect's analytics are off unless the user turns them on.
"""

import os

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")
# The temporary API server migrates its database on first start; on a busy 2-core machine
# that takes longer than Prefect's default 20 s.
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
