"""Deployments against a real Prefect server on 127.0.0.1: the score flow served, run by
deployment name (as from the UI), writes the leaderboard and publishes its artifact."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from testprism.storage import Store
from tests.test_metrics import build_store

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture()
def server(tmp_path):
    port = free_port()
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect-home"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
           "DO_NOT_TRACK": "1", "PREFECT_UI_ENABLED": "false"}
    proc = subprocess.Popen([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/api"
    deadline = time.monotonic() + 180
    while True:
        try:
            urllib.request.urlopen(f"{url}/health", timeout=2)
            break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                pytest.fail("prefect server did not start")
            time.sleep(1)
    yield {**env, "PREFECT_API_URL": url}
    proc.terminate()
    proc.wait(timeout=30)


def test_score_deployment_runs_on_a_real_server(server, tmp_path):
    pools = {"a": {"valid": ["v1"], "invalid": ["x1"]}}
    build_store(tmp_path, pools, {("k", "a", "buggy"): "F", ("k", "a", "reference"): "P", ("k", "a", "v1"): "P",
                                  ("k", "a", "x1"): "F"})
    serve = subprocess.Popen(
        [sys.executable, "-c", "from testprism.flows.score import score_flow; score_flow.serve(name='nightly')"],
        env=server, stdout=subprocess.DEVNULL, stderr=open(tmp_path / "serve.log", "w"),
    )
    try:
        driver = (
            "import sys; from prefect.deployments import run_deployment\n"
            "deadline = __import__('time').monotonic() + 120\n"
            "while True:\n"
            "    try:\n"
            "        run = run_deployment('score/nightly', parameters={'store': sys.argv[1], 'replicates': 200}, timeout=180)\n"
            "        break\n"
            "    except Exception:\n"  # the deployment appears once `serve` has registered it
            "        if __import__('time').monotonic() > deadline: raise\n"
            "        __import__('time').sleep(2)\n"
            "print(run.state.type.value)\n"
        )
        done = subprocess.run([sys.executable, "-c", driver, str(tmp_path / "store")], env=server,
                              capture_output=True, text=True, timeout=400)
        log = (tmp_path / "serve.log").read_text()[-3000:]
        assert done.stdout.strip().splitlines()[-1] == "COMPLETED", log
    finally:
        serve.terminate()
        serve.wait(timeout=30)
    board = Store(tmp_path / "store").read_table("leaderboard")
    assert board["jvr"].to_list() == [1.0]
