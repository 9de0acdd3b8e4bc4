"""The public face: what a user scripts with is importable from `testprism` itself, and
importing it stays light (no Prefect until a flow is asked for)."""

from __future__ import annotations

import subprocess
import sys

import testprism


def test_the_public_names_resolve_to_the_working_objects():
    from testprism.flows.replay import replay_flow
    from testprism.storage import Store
    from testprism.tasks.model.benchmark import load_benchmark

    assert testprism.load_benchmark is load_benchmark and testprism.Store is Store
    assert testprism.replay is replay_flow
    assert set(testprism.__all__) >= {"load_benchmark", "Store", "replay", "score", "collect", "report",
                                      "backend_names"}
    for name in testprism.__all__:  # every promised name resolves
        assert getattr(testprism, name) is not None
    assert {"local", "docker"} <= set(testprism.backend_names())


def test_importing_testprism_does_not_import_prefect():
    probe = "import sys, testprism; testprism.load_benchmark; print('prefect' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout == "False\n"


def test_help_opens_with_what_the_tool_does():
    from typer.testing import CliRunner

    from testprism.flows.cli import app

    out = CliRunner().invoke(app, ["--help"]).output
    assert "How reliable are generated test suites?" in out and "No domain logic" not in out
