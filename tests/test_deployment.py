"""Deployments against a real Prefect server on 127.0.0.1: the score flow served, run by
deployment name (as from the UI), writes the leaderboard and publishes its artifact; and the
project's own prefect.yaml deployed whole (the README's "Deployments" walkthrough, step by
step), its pipeline run by a worker of the process pool, its logs and artifacts read back
through the API the UI uses."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from testprism.storage import Store
from tests.synthbench import make_synthetic
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
    try:
        yield {**env, "PREFECT_API_URL": url}
    finally:
        stop(proc)


def stop(proc: subprocess.Popen) -> None:
    """Terminate a process we started, by its id; its whole group if it does not go."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            if os.getpgid(proc.pid) == proc.pid:  # started in a session of its own: its children too
                os.killpg(proc.pid, signal.SIGKILL)
            else:
                proc.kill()
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


ROOT = Path(__file__).resolve().parents[1]
DEPLOYMENTS = {"curate", "collect", "replay", "score", "report", "pipeline"}


def api(env: dict[str, str], path: str, body: dict | None = None) -> dict | list:
    """One call to the server's REST API (what the UI calls), on 127.0.0.1 only."""
    url = env["PREFECT_API_URL"]
    assert url.startswith("http://127.0.0.1:")
    request = urllib.request.Request(f"{url}{path}", data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"},
                                     method="GET" if body is None else "POST")
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def prefect(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "prefect", *args], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


@pytest.mark.requires("sandbox")
def test_the_projects_deployments_run_the_pipeline_by_a_worker(server, tmp_path, work_root):
    env = {**server, "TESTPRISM_HOME": str(ROOT), "COLUMNS": "200"}
    make_synthetic(tmp_path / "bench", 3)
    config = tmp_path / "pipeline.toml"  # examples/pipeline.toml's shape, on a benchmark that replays in seconds
    config.write_text(f'store = "unused"\nwork = "{work_root}"\n[replay]\nbenchmark = "bench"\n'
                      '[score]\nreplicates = 200\n')
    store = tmp_path / "store"

    prefect(env, "work-pool", "create", "testprism", "--type", "process")
    prefect(env, "--no-prompt", "deploy", "--all")
    deployments = {d["name"]: d for d in api(env, "/deployments/filter", {})}
    assert set(deployments) == DEPLOYMENTS
    listed = prefect(env, "deployment", "ls")
    assert all(f"{name}/{name}" in listed for name in DEPLOYMENTS), listed
    pipeline = deployments["pipeline"]
    assert [s["schedule"]["cron"] for s in pipeline["schedules"]] == ["0 2 * * *"]
    assert deployments["replay"]["global_concurrency_limit"]["limit"] == 1  # two replays never share cores
    assert pipeline["work_pool_name"] == "testprism" and "pipeline" in pipeline["tags"]

    worker = subprocess.Popen([sys.executable, "-m", "prefect", "worker", "start", "--pool", "testprism"], env=env,
                              cwd=tmp_path, stdout=open(tmp_path / "worker.log", "w"), stderr=subprocess.STDOUT,
                              start_new_session=True)
    try:
        started = time.monotonic()
        run = api(env, f"/deployments/{pipeline['id']}/create_flow_run",
                  {"parameters": {"config": str(config), "store": str(store)}})
        while True:
            state = api(env, f"/flow_runs/{run['id']}")["state"]
            if state["type"] in {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"} or time.monotonic() - started > 400:
                break
            time.sleep(2)
        assert state["type"] == "COMPLETED", (state, (tmp_path / "worker.log").read_text()[-4000:])
        runs = api(env, "/flow_runs/filter", {})
        children = {r["id"] for r in runs if r["parent_task_run_id"]}
        assert len(children) == 3  # replay, score and report, each a subflow of the pipeline
        assert any(r["state"]["type"] == "SCHEDULED" for r in runs)  # the nightly runs, waiting for 02:00
        expected = ["pipeline done: store", "66 runs planned, 0 already stored, 66 to execute"]
        # A run's logs reach the server in batches, after its state: the worker stays up until they
        # are in (stopping it may stop the run's process before it sends its last batch).
        deadline = time.monotonic() + 60
        while True:
            logs = api(env, "/logs/filter", {"logs": {"flow_run_id": {"any_": [run["id"], *children]},
                                                      "level": {"ge_": 20}}, "limit": 200})
            lines = [entry["message"] for entry in logs if entry["name"].startswith("testprism")]  # not Prefect's own
            if all(any(text in line for line in lines) for text in expected) or time.monotonic() > deadline:
                break
            time.sleep(2)
        assert all(any(text in line for line in lines) for text in expected), [e["message"][:80] for e in logs]
    finally:
        stop(worker)
    artifacts = api(env, "/artifacts/filter", {"artifacts": {"key": {"any_": ["leaderboard", "report"]}}})
    assert {a["key"] for a in artifacts} == {"leaderboard", "report"}
    assert {a["flow_run_id"] for a in artifacts} <= children
    board = Store(store).read_table("leaderboard")
    assert sorted(board["configuration"].to_list()) == ["good", "lax"]
    assert (store / "report.html").is_file()
