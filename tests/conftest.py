"""Shared fixtures: a work area the sandbox's unprivileged uid can traverse (pytest's own
tmp folders are private to root), and the tiny benchmark of tests/benchfixture.py."""

from __future__ import annotations

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
