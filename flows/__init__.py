"""Prefect flows (thin wiring of `testprism.tasks`) and the command line.

Nothing here may phone home: Prefect's analytics are off unless the user turns them on.

testprism logs on its own logger, `testprism`, which Prefect does not capture by default: a
flow run's Logs tab would say "Waiting for logs…". PREFECT_LOGGING_EXTRA_LOGGERS gives the
logger Prefect's API handler when Prefect configures logging, i.e. on its first import: set
here for the CLI and any script that imports testprism first, and in prefect.yaml's job
variables for flow runs a worker starts (they import Prefect before this module). Outside a
flow run (the CLI's own lines) there is no run to send to, which is not worth a warning.
"""

import logging
import os

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")
# The temporary API server migrates its database on first start; on a busy 2-core machine
# that takes longer than Prefect's default 20 s.
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
os.environ.setdefault("PREFECT_LOGGING_EXTRA_LOGGERS", "testprism")
os.environ.setdefault("PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW", "ignore")
# Prefect copies only handlers to extra loggers; their level stays the root's (WARNING), which
# would drop the progress and summary lines a flow run's logs are for.
if logging.getLogger("testprism").level == logging.NOTSET:
    logging.getLogger("testprism").setLevel(logging.INFO)
