"""Shared fixtures: a work area the sandbox's unprivileged uid can traverse (pytest's own
tmp folders are private to root), and a Docker engine for the docker backend's tests.

No engine here: docker tests skip, unless TESTPRISM_REQUIRE_DOCKER is set (CI sets it,
after .ci/start-dockerd and .ci/base-image), where they fail instead."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from testprism.tasks.workdir import WorkPaths


@pytest.fixture(scope="session")
def work_root() -> Path:
    base = Path("/var/tmp") if Path("/var/tmp").is_dir() else Path(tempfile.gettempdir())
    root = Path(tempfile.mkdtemp(prefix="testprism-tests-", dir=base))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def work(work_root: Path) -> WorkPaths:
    paths = WorkPaths(work_root)
    paths.ensure()
    return paths


@pytest.fixture(scope="session")
def docker_engine() -> None:
    from testprism.tasks.sandbox.docker import engine_answers

    if engine_answers():
        return
    if os.environ.get("TESTPRISM_REQUIRE_DOCKER"):
        pytest.fail("TESTPRISM_REQUIRE_DOCKER is set but no Docker engine answers (run .ci/start-dockerd)")
    pytest.skip("no Docker engine answers (set TESTPRISM_REQUIRE_DOCKER to make this a failure)")


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Stop Prefect's temporary API servers while pytest's streams are still open: their
    atexit hook logs to a console that pytest has closed by then ("Logging error")."""
    from prefect.logging.handlers import APILogWorker
    from prefect.server.api.server import SubprocessASGIServer

    APILogWorker.drain_all(timeout=5)  # the run logs still queued go to the server before it stops
    logging.getLogger("prefect").setLevel(logging.WARNING)  # "Stopping temporary server": noise
    for server in list(SubprocessASGIServer._instances.values()):
        server.stop()
