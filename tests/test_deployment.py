"""Deployments against a real Prefect server on 127.0.0.1: the score flow served, run by
deployment name (as from the UI), writes the leaderboard and publishes its artifact; and the
project's own prefect.yaml deployed whole (docs/deployments.md's walkthrough, step by
step), its pipeline run by a worker of the process pool, its logs and artifacts read back
through the API the UI uses."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
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
            "        run = run_deployment('score/nightly', parameters={'store': sys.argv[1], 'settings': {'replicates': 200}}, timeout=180)\n"
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
DEPLOYMENTS = {"curate", "check", "collect", "generate", "crossval", "rsi", "select", "replay", "score", "report", "pipeline"}


def api(env: dict[str, str], path: str, body: dict | None = None) -> dict | list:
    """One call to the server's REST API (what the UI calls), on 127.0.0.1 only."""
    url = env["PREFECT_API_URL"]
    assert url.startswith("http://127.0.0.1:")
    request = urllib.request.Request(f"{url}{path}", data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"},
                                     method="GET" if body is None else "POST")
    for attempt in range(6):
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return json.loads(answer.read())
        except urllib.error.HTTPError as exc:  # a busy server (its database locked) answers 503: ask again
            if exc.code != 503 or attempt == 5:
                raise
            time.sleep(2 * (attempt + 1))


def prefect(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "prefect", *args], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


TERMINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


def wait_for(env: dict[str, str], run_id: str, log: Path, timeout_s: float = 400) -> dict:
    """The flow run once it is in a terminal state (its state record)."""
    deadline = time.monotonic() + timeout_s
    while True:
        state = api(env, f"/flow_runs/{run_id}")["state"]
        if state["type"] in TERMINAL:
            return state
        assert time.monotonic() < deadline, (state, log.read_text()[-4000:])
        time.sleep(1)


def start_run(env: dict[str, str], deployment: dict, parameters: dict) -> str:
    """What the UI's "Run" (and `prefect deployment run`) does: a flow run of a deployment."""
    return api(env, f"/deployments/{deployment['id']}/create_flow_run", {"parameters": parameters})["id"]


def logged_lines(env: dict[str, str], run_ids: list[str], expected: list[str]) -> list[str]:
    """testprism's own log lines of these flow runs (not Prefect's), once `expected` are in:
    a run's logs reach the server in batches, after its state."""
    deadline = time.monotonic() + 60
    while True:
        logs = api(env, "/logs/filter", {"logs": {"flow_run_id": {"any_": run_ids}, "level": {"ge_": 20}},
                                         "limit": 200})
        lines = [entry["message"] for entry in logs if entry["name"].startswith("testprism")]
        if all(any(text in line for line in lines) for text in expected) or time.monotonic() > deadline:
            return lines
        time.sleep(2)


def stored_rows(store: Path) -> int:
    return Store(store).scan("runs").select("run_key").collect().height if (store / "runs").is_dir() else 0


@pytest.mark.timeout(1200)
@pytest.mark.requires("sandbox")
def test_the_projects_deployments_run_the_pipeline_by_a_worker(server, tmp_path, work_root):
    """docs/deployments.md, step by step: deploy the project's prefect.yaml, run the pipeline
    by a worker; kill a replay's flow-run process mid-replay (a machine failure), retry it
    as the UI does, and get the uninterrupted run's leaderboard without redoing a stored run;
    then the replay deployment on a Dask cluster reached by its address."""
    from tests.test_dask import dask_cluster

    env = {**server, "TESTPRISM_HOME": str(ROOT), "COLUMNS": "200"}
    bench = tmp_path / "bench"
    make_synthetic(bench, 6)  # 132 runs, four batches of 33
    for suite in bench.glob("suites/*/*/run_tests.sh"):  # ~0.2 s a run: a kill after the first batch lands mid-replay
        suite.write_text("sleep 0.2\n" + suite.read_text())
    config = tmp_path / "pipeline.toml"  # examples/pipeline.toml's shape, on a benchmark that replays in seconds
    config.write_text(f'store = "unused"\n[run]\nwork = "{work_root}"\n[replay]\nbenchmark = "bench"\n'
                      '[score]\nreplicates = 200\n')
    store = tmp_path / "store"
    worker_log = tmp_path / "worker.log"

    prefect(env, "work-pool", "create", "testprism", "--type", "process")
    prefect(env, "--no-prompt", "deploy", "--all")
    deployments = {d["name"]: d for d in api(env, "/deployments/filter", {})}
    assert set(deployments) == DEPLOYMENTS
    listed = prefect(env, "deployment", "ls")
    assert all(f"{name}/{name}" in listed for name in DEPLOYMENTS), listed
    pipeline = deployments["pipeline"]
    assert [s["schedule"]["cron"] for s in pipeline["schedules"]] == ["0 2 * * *"]
    assert "0 2 * * *" in prefect(env, "deployment", "inspect", "pipeline/pipeline")
    assert deployments["replay"]["global_concurrency_limit"]["limit"] == 1  # two replays never share cores
    assert pipeline["work_pool_name"] == "testprism" and "pipeline" in pipeline["tags"]

    worker = subprocess.Popen([sys.executable, "-m", "prefect", "worker", "start", "--pool", "testprism"], env=env,
                              cwd=tmp_path, stdout=open(worker_log, "w"), stderr=subprocess.STDOUT,
                              start_new_session=True)
    try:
        # 1. The pipeline, uninterrupted.
        run = start_run(env, pipeline, {"config": str(config), "store": str(store)})
        assert wait_for(env, run, worker_log)["type"] == "COMPLETED", worker_log.read_text()[-4000:]
        runs = api(env, "/flow_runs/filter", {})
        children = {r["id"] for r in runs if r["parent_task_run_id"]}
        assert len(children) == 3  # replay, score and report, each a subflow of the pipeline
        tasks = api(env, "/task_runs/filter", {"task_runs": {"flow_run_id": {"any_": sorted(children)}}})
        assert sum(t["name"].startswith("replay-batch") for t in tasks) == 4  # the coarse tasks, in the graph
        assert any(r["state"]["type"] == "SCHEDULED" for r in runs)  # the nightly runs, waiting for 02:00
        expected = ["pipeline done: store", "132 runs planned, 0 already stored, 132 to execute"]
        lines = logged_lines(env, [run, *children], expected)
        assert all(any(text in line for line in lines) for text in expected), lines

        # 2. A replay killed mid-replay, as a machine failure would kill it, then retried.
        killed = tmp_path / "killed"
        replay = start_run(env, deployments["replay"], {"benchmark": str(bench), "store": str(killed),
                                                       "run": {"work": str(work_root)}})
        deadline = time.monotonic() + 300
        while not list((killed / "runs").glob("part-*.parquet")):
            assert time.monotonic() < deadline, worker_log.read_text()[-4000:]
            time.sleep(0.2)
        pid = int(api(env, f"/flow_runs/{replay}")["infrastructure_pid"].rpartition(":")[2])
        os.kill(pid, signal.SIGKILL)
        assert wait_for(env, replay, worker_log)["type"] == "CRASHED"
        # The run is reported crashed twice: by the process runner at once and by the worker
        # seconds later (its proposal is refused when the first is in, and then it logs its
        # advice). A retry between the two is marked crashed again by the second, so retry
        # once the worker is done with it: its advice, the last thing it logs of this (the
        # only killed) run.
        reported = "prefect.flow_runs.worker - Check whether the flow run exceeded its memory allocation"
        deadline = time.monotonic() + 120
        while reported not in worker_log.read_text():
            assert time.monotonic() < deadline, worker_log.read_text()[-4000:]
            time.sleep(0.5)
        before = {p.name for p in (killed / "runs").glob("part-*.parquet")}
        settled = stored_rows(killed)
        assert 0 < settled < 132, settled
        prefect(env, "flow-run", "retry", replay)  # the UI's Retry: the run is scheduled again
        assert wait_for(env, replay, worker_log)["type"] == "COMPLETED", worker_log.read_text()[-4000:]
        done = Store(killed).scan("runs").select("run_key").collect()
        assert done.height == done["run_key"].n_unique() == 132  # nothing stored twice
        assert before <= {p.name for p in (killed / "runs").glob("part-*.parquet")}  # nothing lost
        # the rest executed, or taken from the same work (another configuration's suite on the
        # same state) that the killed run stored
        resumed = f"132 runs planned, {settled} already stored, "
        said = [re.search(r"(\d+) to execute .*; (\d+) taken from the same work", line)
                for line in logged_lines(env, [replay], [resumed]) if resumed in line]
        assert said and said[0] and int(said[0][1]) + int(said[0][2]) == 132 - settled, said
        scored = start_run(env, deployments["score"], {"store": str(killed), "settings": {"replicates": 200}})
        assert wait_for(env, scored, worker_log)["type"] == "COMPLETED"
        assert Store(killed).read_table("leaderboard").equals(Store(store).read_table("leaderboard"))

        # 3. The replay deployment on a Dask cluster reached by its address (docs/deployments.md, "On a cluster").
        with dask_cluster(1, env) as (address, _):
            clustered = tmp_path / "clustered"
            on_cluster = start_run(env, deployments["replay"], {"benchmark": str(bench), "store": str(clustered),
                                                               "run": {"work": str(work_root), "dask_address": address}})
            assert wait_for(env, on_cluster, worker_log)["type"] == "COMPLETED", worker_log.read_text()[-4000:]
            from distributed import Client

            with Client(address, timeout=30) as client:
                ran_there = client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
        # the batches ran on the cluster's worker: the stage driver's one task (flows/driver.py `stage_batch`,
        # run as "replay-batch"), whose function name is Dask's key prefix
        assert any(p in prefix for prefix in ran_there for p in ("replay-batch", "replay_batch", "stage_batch")), \
            ran_there
        assert stored_rows(clustered) == 132
    finally:
        stop(worker)
    artifacts = api(env, "/artifacts/filter", {"artifacts": {"key": {"any_": ["leaderboard", "report"]}}})
    assert {a["key"] for a in artifacts} == {"leaderboard", "report"}
    assert {a["flow_run_id"] for a in artifacts if a["key"] == "report"} <= children
    board = Store(store).read_table("leaderboard")
    assert sorted(board["configuration"].to_list()) == ["good", "lax"]
    assert (store / "report.html").is_file()
