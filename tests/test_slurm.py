"""Replay batches on SLURM jobs through dask-jobqueue's SLURMCluster, on a one-node SLURM
cluster this module starts from Debian's `slurmctld`, `slurmd` and `munge`: its own munge
key, socket and slurm.conf in a temporary folder, every daemon on 127.0.0.1 and on ports
of its own, so that it touches neither a SLURM installation of the machine nor the network.
The replay's leaderboard must equal a local (threads) replay's of the same benchmark."""

from __future__ import annotations

import logging
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from polars.testing import assert_frame_equal

from tests.benchfixture import CHECKS, WEAK, make_benchmark
from tests.test_dask import check, expected
from testprism.tasks.score.settings import ScoreSettings
from testprism.tasks.execution.run_settings import RunSettings

pytestmark = [pytest.mark.slow, pytest.mark.requires("sandbox", "slurm")]

log = logging.getLogger(__name__)

#: how long the daemons may take to come up, and the node to become idle
START_TIMEOUT_S = 60


@dataclass(frozen=True)
class Slurm:
    """A running one-node cluster. `SLURM_CONF` names its slurm.conf in os.environ while the
    fixture lives, so that sbatch, squeue and scancel (which dask-jobqueue runs) reach it."""

    node: str
    jobcomp: Path  # one line per finished job (jobcomp/filetxt): no accounting database needed


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _slurm_conf(root: Path, node: str, socket_path: Path) -> str:
    """One node of this host's 2 cores on 127.0.0.1. No cgroups (proctrack/linuxproc,
    task/none: a container has no cgroup to delegate), no accounting database, root as the
    daemons' user, and CR_Core so that each job holds only the cores it asks for."""
    return f"""\
ClusterName=testprism
SlurmctldHost={node}(127.0.0.1)
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={socket_path}
MailProg=/bin/true
StateSaveLocation={root / "state"}
SlurmdSpoolDir={root / "spool"}
SlurmctldPidFile={root / "slurmctld.pid"}
SlurmdPidFile={root / "slurmd.pid"}
SlurmctldLogFile={root / "logs" / "slurmctld.log"}
SlurmdLogFile={root / "logs" / "slurmd.log"}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={root / "logs" / "jobcomp.txt"}
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SlurmdTimeout=60
NodeName={node} NodeAddr=127.0.0.1 CPUs=2 RealMemory=2048 State=UNKNOWN
PartitionName=testprism Nodes={node} Default=YES MaxTime=60 State=UP
"""


def _node_state(env: dict[str, str]) -> str:
    done = subprocess.run(["sinfo", "-h", "-N", "-o", "%t"], env=env, capture_output=True, text=True, timeout=30)
    return done.stdout.strip() if done.returncode == 0 else f"sinfo failed: {done.stderr.strip()}"


def wait_for_no_jobs(env: dict[str, str] | None = None, timeout_s: float = 60) -> None:
    """Until squeue lists no job: a cancelled job is COMPLETING for a moment, and only then
    in the jobcomp file, with its log complete."""
    deadline = time.monotonic() + timeout_s
    while subprocess.run(["squeue", "-h"], env=env, capture_output=True, text=True, timeout=30).stdout.strip():
        if time.monotonic() > deadline:
            raise TimeoutError(f"SLURM jobs still queued or running after {timeout_s:.0f} s")
        time.sleep(0.5)


def _stop(procs: list[subprocess.Popen]) -> None:
    for proc in reversed(procs):  # slurmd, then slurmctld, then munged: each outlives its clients
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def slurm(tmp_path_factory) -> Iterator[Slurm]:
    """munged, slurmctld and slurmd in the foreground as this test's children, until the node
    is idle; at the end every job still there is cancelled and the daemons stopped. A cluster
    that does not come up fails the test with the daemons' logs."""
    root = tmp_path_factory.mktemp("slurm")
    for name in ("key", "socket", "state", "spool", "logs"):
        (root / name).mkdir()
    (root / "key").chmod(0o700)  # munged refuses a key that others can read
    (root / "socket").chmod(0o755)  # and a socket folder its clients cannot reach
    key = root / "key" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    socket_path = root / "socket" / "munge.socket"
    node = socket.gethostname().split(".")[0]  # what slurmctld checks SlurmctldHost against
    conf = root / "slurm.conf"
    conf.write_text(_slurm_conf(root, node, socket_path))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    logs = root / "logs"
    procs: list[subprocess.Popen] = []

    def start(name: str, *args: str) -> None:
        with open(logs / f"{name}.out", "wb") as out:
            procs.append(subprocess.Popen([name, *args], env=env, stdout=out, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL))

    def fail(why: str) -> None:
        tails = "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-2000:]}" for p in sorted(logs.glob("*")))
        pytest.fail(f"the one-node SLURM cluster did not come up: {why}\n{tails}", pytrace=False)

    try:
        # -f: munged's checks of the folders above a test's temporary folder are not ours to satisfy
        start("munged", "-F", "-f", f"--socket={socket_path}", f"--key-file={key}",
              f"--log-file={logs / 'munged.log'}", f"--pid-file={root / 'socket' / 'munged.pid'}",
              f"--seed-file={root / 'key' / 'munged.seed'}")
        began = time.monotonic()
        deadline = began + START_TIMEOUT_S
        while not socket_path.exists():
            if procs[0].poll() is not None or time.monotonic() > deadline:
                fail("munged did not create its socket")
            time.sleep(0.1)
        start("slurmctld", "-D")
        start("slurmd", "-D", "-N", node)
        while (state := _node_state(env)) != "idle":
            if any(p.poll() is not None for p in procs) or time.monotonic() > deadline:
                fail(f"node {node} is {state!r}")
            time.sleep(0.5)
        log.info("SLURM: node %s idle %.1f s after munged started", node, time.monotonic() - began)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("SLURM_CONF", str(conf))
            yield Slurm(node, logs / "jobcomp.txt")
    finally:
        if len(procs) == 3:
            subprocess.run(["scancel", "--user", "root"], env=env, capture_output=True, timeout=30)
            try:
                wait_for_no_jobs(env, 30)
            except TimeoutError as exc:  # said, and the daemons stopped all the same
                log.warning("%s at teardown", exc)
        _stop(procs)


def flow_api_url() -> str:
    """The Prefect API the flow will use, which the jobs' workers must report to: the one
    PREFECT_API_URL names, else the session's temporary server, started now if need be (the
    flow, started later, finds the same one)."""
    from prefect.server.api.server import SubprocessASGIServer

    from testprism.flows.runner import flow_api_env

    url = flow_api_env().get("PREFECT_API_URL")
    if url:
        return url
    server = SubprocessASGIServer()
    server.start(timeout=120)
    return server.api_url


@pytest.mark.timeout(600)
def test_batches_run_as_slurm_jobs_and_score_as_a_local_replay(slurm, tmp_path, work_root):
    """A replay with `dask_cluster` = dask-jobqueue's SLURMCluster: the flow submits a worker
    job with sbatch, the job's worker (reporting to the flow's Prefect API) runs the batches
    in the sandbox, and the flow cancels the job when it ends. The stored outcomes and the
    `score` leaderboard equal those of the default placement, threads in this process."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    from testprism.flows.replay import replay_flow
    from testprism.flows.score import score_flow
    from testprism.tasks.execution.cluster import DaskCluster

    bench = make_benchmark(tmp_path / "bench", {"strong": {"test_m.py": CHECKS}, "weak": {"test_m.py": WEAK}})
    jobs = tmp_path / "jobs"
    # docs/deployments.md: the SLURM example, with everything on loopback and sized for this host.
    cluster = DaskCluster.model_validate({
        "class": "dask_jobqueue.SLURMCluster",
        "kwargs": {
            "cores": 1, "processes": 1, "memory": "1GB", "walltime": "00:10:00", "n_workers": 1,
            "python": sys.executable,
            "job_script_prologue": [f"export PREFECT_API_URL={flow_api_url()}"],
            # distributed's HTTP servers (health, metrics) listen on all interfaces unless told
            "scheduler_options": {"host": "127.0.0.1", "dashboard_address": "127.0.0.1:0"},
            "worker_extra_args": ["--host", "127.0.0.1", "--dashboard-address", "127.0.0.1:0"],
            "log_directory": str(jobs),
        },
    })
    started = time.monotonic()
    state = replay_flow(benchmark=str(bench), store=str(tmp_path / "slurm-store"), run=RunSettings(work=str(work_root), dask_cluster=cluster),
                        return_state=True)
    log.info("replay on SLURM: %.1f s", time.monotonic() - started)
    summary = state.result()
    assert summary.executed == summary.planned == 8
    check(tmp_path / "slurm-store")

    # The batches were recorded on the flow's API (the job's worker did not start a temporary
    # Prefect server of its own) ...
    with get_client(sync_client=True) as client:
        batches = client.read_task_runs(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[state.state_details.flow_run_id])))
    assert batches and all(t.name.startswith("replay-batch") and t.state.is_completed() for t in batches)
    # ... and ran in the SLURM job: a job of dask-jobqueue's name on this node (cancelled by
    # the flow at its end, as SLURMCluster stops its jobs), whose log shows its worker joining
    # the flow's scheduler on loopback and finishing every batch.
    wait_for_no_jobs()
    records = [line for line in slurm.jobcomp.read_text().splitlines() if "Name=dask-worker" in line]
    assert records and all(f"NodeList={slurm.node}" in r for r in records), records
    job_ids = [re.search(r"JobId=(\d+)", r)[1] for r in records]
    job_logs = "".join(p.read_text(errors="replace") for i in job_ids for p in jobs.glob(f"*-{i}.*"))
    assert re.search(r"Registered to:\s+tcp://127\.0\.0\.1:", job_logs), job_logs[-3000:]
    for batch in batches:
        assert f"Task run '{batch.name}' - Finished in state Completed()" in job_logs, job_logs[-3000:]

    local = replay_flow(benchmark=str(bench), store=str(tmp_path / "local-store"), run=RunSettings(work=str(work_root)))
    assert local.executed == 8
    assert expected(tmp_path / "slurm-store") == expected(tmp_path / "local-store")
    assert_frame_equal(score_flow(store=str(tmp_path / "slurm-store"), settings=ScoreSettings(replicates=500)),
                       score_flow(store=str(tmp_path / "local-store"), settings=ScoreSettings(replicates=500)))
