"""Backends are plugins: a package of its own declares an entry point in the
`testprism.sandboxes` group, and `testprism replay --backend NAME` finds and uses it, with
no change to testprism. The bundled `local` and `docker` are found the same way."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from testprism.storage import Store
from testprism.tasks.sandbox.base import ENTRY_POINTS, backend_class, backend_names
from testprism.tasks.sandbox.local import LocalBackend
from tests.benchfixture import CHECKS, make_benchmark

TESTPRISM = Path(sys.executable).with_name("testprism")

TINY = '''\
"""A third party's backend: the local sandbox under a label of its own."""

from testprism.tasks.sandbox.local import LocalBackend


class TinyBackend(LocalBackend):
    def __init__(self, work, *, trusted=False, unsafe=False):
        super().__init__(work, trusted=trusted, unsafe=unsafe)
        self.isolation = f"tiny+{self.isolation}"
'''


def tiny_package(folder: Path) -> Path:
    """An installed distribution as importlib.metadata sees one: a module and its
    dist-info with an entry point, on a folder that goes on PYTHONPATH."""
    folder.mkdir(parents=True)
    (folder / "tiny_backend.py").write_text(TINY)
    info = folder / "tiny_backend-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tiny-backend\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINTS}]\ntiny = tiny_backend:TinyBackend\n")
    return folder


def test_the_bundled_backends_come_from_their_entry_points():
    assert {"local", "docker"} <= set(backend_names())
    assert backend_class("local") is LocalBackend and backend_class("local").name == "local"


@pytest.mark.slow
@pytest.mark.requires("sandbox")
def test_a_backend_of_another_package_is_used_by_replay(tmp_path, work_root):
    bench = make_benchmark(tmp_path / "bench", {"strong": {"test_m.py": CHECKS}})
    store = tmp_path / "store"
    env = {**os.environ, "TESTPRISM_WORK": str(work_root), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    unknown = subprocess.run([str(TESTPRISM), "replay", str(bench), "--store", str(store), "--backend", "tiny"],
                             capture_output=True, text=True, timeout=120, env=env)
    assert unknown.returncode == 2 and "unknown backend 'tiny'" in unknown.stderr
    env["PYTHONPATH"] = str(tiny_package(tmp_path / "site"))
    done = subprocess.run([str(TESTPRISM), "replay", str(bench), "--store", str(store), "--backend", "tiny"],
                          capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    runs = Store(store).scan("runs").collect()
    assert set(zip(runs["backend"], runs["isolation"])) == {("tiny", "tiny+bubblewrap")}
    outcomes = {r["candidate_id"] or r["state"]: r["outcome"] for r in runs.iter_rows(named=True)}
    assert outcomes == {"buggy": "F", "reference": "P", "stdlib": "P", "sorts-in-place": "F"}


def test_sweep_removes_what_gone_processes_left_and_keeps_live_ones(tmp_path):
    from typer.testing import CliRunner

    from testprism.flows.cli import app
    from testprism.tasks.model.workdir import WorkPaths, workspace_prefix

    work = WorkPaths(tmp_path / "work")
    work.ensure()
    gone = work.workspaces / "run-999999999.12345-abcdef"  # no such pid: its process is gone
    (gone / "program").mkdir(parents=True)
    live = work.workspaces / f"{workspace_prefix('run')}xyz"  # this process's: a run under way
    live.mkdir()
    result = CliRunner().invoke(app, ["sweep", "--work", str(work.root)])
    assert result.exit_code == 0, result.output
    assert not gone.exists() and live.exists()
