"""The docker backend on a real engine: parity with the local backend, and the limits it
promises (timeout, no network, memory, processes, output), fresh state per run, container
removal and sweep.

The hostile suites of tests/test_sandbox.py run under this backend too. No engine here:
these tests fail when TESTPRISM_REQUIRE_DOCKER is set (make test sets it), else skip
(tests/conftest.py, `require`).
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from testprism.storage import Store
from testprism.tasks.replay.settings import ReplaySettings
from testprism.tasks.model.bundled import BUNDLED
from testprism.tasks.model.benchmark import load_benchmark
from testprism.tasks.model.benchmark_format import EnvironmentSpec
from testprism.tasks.sandbox.environment import EnvironmentBuildError
from testprism.tasks.sandbox.base import Limits, RunRequest, SandboxUnavailable
from testprism.tasks.sandbox.docker.backend import DockerBackend  # registers "docker"
from testprism.tasks.sandbox.docker.base_image import DEFAULT_BASE
from testprism.tasks.sandbox.docker.engine import BUILD_PREFIX, LABEL, OWNER_LABEL, RUN_LABEL, SESSION_LABEL, api_client
from testprism.tasks.sandbox.docker.environment_image import ENV_REPOSITORY, environment_tag
from testprism.tasks.model.workdir import WorkPaths
from testprism.tasks.execution.run_settings import RunSettings
from tests.docker_fixture import EXPECTED, make_docker_benchmark

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture(scope="session")
def backend(docker_engine, work_root) -> DockerBackend:
    """The default: a fresh container per run, made for it (bind mode, on this host)."""
    b = DockerBackend(WorkPaths(work_root), reuse=False)
    assert b.copy == "bind" and not b.prewarm
    b.environment = b.prepare(EnvironmentSpec())  # builds the image once (the base too if missing)
    yield b
    b.close()


@pytest.fixture(scope="session")
def backends(docker_engine, work_root, backend) -> dict[str, DockerBackend]:
    """Every way of running: fresh or reused container, workspace bind-mounted or copied."""
    made = {"fresh-bind": backend}
    for name, reuse, copy, prewarm in (("fresh-bind-ahead", False, "bind", True), ("fresh-archive", False, "archive", False),
                                       ("reused-bind", True, "bind", False), ("reused-archive", True, "archive", False)):
        b = DockerBackend(WorkPaths(work_root), reuse=reuse, copy=copy, prewarm=prewarm)
        b.environment = b.prepare(EnvironmentSpec())
        made[name] = b
    yield made
    for b in made.values():
        if b is not backend:
            b.close()


MODES = ["fresh-bind", "fresh-bind-ahead", "fresh-archive", "reused-bind", "reused-archive"]


@pytest.fixture(scope="session")
def empty_tree(work_root) -> Path:
    tree = work_root / "empty-tree"
    tree.mkdir(exist_ok=True)
    (tree / "README").write_text("nothing here\n")
    return tree


def request_for(b: DockerBackend, tree: Path, command: str, **limits) -> RunRequest:
    return RunRequest(tree=tree, suite_folder=None, suite_files=(), command=command, environment=b.environment,
                      limits=Limits(**{"timeout_s": 60, **limits}))


def our_containers(b: DockerBackend) -> list[dict]:
    api = api_client()
    try:
        return api.containers(all=True, filters={"label": f"{SESSION_LABEL}={b.session}"})
    finally:
        api.close()


# -- parity with the local backend ------------------------------------------------------------


def _outcomes(store_root: Path) -> dict[str, tuple[str, str, str, str | None]]:
    runs = Store(store_root).scan("runs").collect()
    return {
        r["run_key"]: (r["configuration"], r["instance_id"],
                       f"candidate:{r['candidate_id']}" if r["candidate_id"] else r["state"], r["outcome"])
        for r in runs.iter_rows(named=True)
    }


@pytest.fixture(scope="module")
def parity_bench(tmp_path_factory) -> Path:
    return make_docker_benchmark(tmp_path_factory.mktemp("docker-bench"))


@pytest.fixture(scope="module")
def local_store(parity_bench, work_root, tmp_path_factory, require) -> Path:
    from testprism.flows.replay import replay_flow

    require("sandbox")  # trusted would run it unisolated: parity is with the sandboxed local backend
    store = tmp_path_factory.mktemp("store-local")
    replay_flow(benchmark=str(parity_bench), store=str(store), run=RunSettings(backend="local", work=str(work_root)), settings=ReplaySettings(timeout_s=120), trusted=True)
    return store


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_local_and_docker_give_the_same_outcome_for_every_run_key(backend, parity_bench, local_store, work_root, tmp_path):
    from testprism.flows.replay import replay_flow

    store = tmp_path / "store-docker"
    summary = replay_flow(benchmark=str(parity_bench), store=str(store), run=RunSettings(backend="docker", work=str(work_root)), settings=ReplaySettings(timeout_s=120))
    assert summary.isolation == "container"
    local, docker = _outcomes(local_store), _outcomes(store)
    assert len(local) == len(EXPECTED) and local.keys() == docker.keys()
    assert {k: v[3] for k, v in docker.items()} == {k: v[3] for k, v in local.items()}
    assert {v[:3]: v[3] for v in docker.values()} == EXPECTED
    runs = Store(store).scan("runs").collect()
    assert set(runs["backend"]) == {"docker"}
    # per-test results came back from the container (JUnit XML) for the pytest suites
    strong_ref = runs.filter((runs["configuration"] == "strong") & (runs["state"] == "reference")
                             & (runs["instance_id"] == "tiny__clamp-above"))
    assert len(strong_ref["tests"][0]) == 3


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_fast_mode_gives_the_same_outcomes(docker_engine, parity_bench, local_store, work_root, tmp_path, monkeypatch):
    from testprism.tasks.replay.runs import execute_batch, plan
    from testprism.tasks.execution.batch import ExecutionOptions

    monkeypatch.setenv("TESTPRISM_DOCKER_REUSE", "1")
    store = tmp_path / "store-reuse"
    options = ExecutionOptions(backend="docker", work_root=work_root, store_root=store, concurrency=2,
                               limits=Limits(timeout_s=120.0))
    summary = execute_batch(plan(load_benchmark(parity_bench), options), options)
    assert summary.executed == len(EXPECTED)
    runs = Store(store).scan("runs").collect()
    assert set(runs["isolation"]) == {"container-reused"}
    local = _outcomes(local_store)
    assert {k: v[3] for k, v in _outcomes(store).items()} == {k: v[3] for k, v in local.items()}


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.requires("sandbox")  # the local side of the parity
def test_parity_on_the_bundled_benchmark(backend, work_root, tmp_path):
    """The first instances of examples/ (all of them with TESTPRISM_PARITY_ALL=1). The
    bundled benchmark ships with the repository (tests/test_examples.py checks its shape): a
    broken one fails here too rather than skipping the parity check."""
    from testprism.tasks.replay.runs import execute_batch, plan
    from testprism.tasks.execution.batch import ExecutionOptions

    bench = load_benchmark(EXAMPLES)
    chosen = sorted(bench.instances)[: None if os.environ.get("TESTPRISM_PARITY_ALL") else 2]
    results = {}
    for name in ("local", "docker"):
        options = ExecutionOptions(backend=name, work_root=work_root, store_root=tmp_path / name,
                                   concurrency=2, trusted=True, limits=Limits(timeout_s=120.0))
        specs = [s for s in plan(bench, options) if s.instance.id in chosen and s.runs_in_sandbox]
        execute_batch(specs, options)
        results[name] = _outcomes(tmp_path / name)
    assert results["local"] and results["docker"].keys() == results["local"].keys()
    differ = {k: (results["local"][k], results["docker"][k][3]) for k in results["local"]
              if results["local"][k][3] != results["docker"][k][3]}
    assert not differ


# -- what each run is promised -----------------------------------------------------------------


@pytest.mark.parametrize("mode", ["fresh-bind", "fresh-bind-ahead", "reused-bind"])
def test_timeout_kills_the_command(mode, backends, empty_tree):
    b = backends[mode]
    start = time.monotonic()
    result = b.run(request_for(b, empty_tree, "echo started; sleep 60", timeout_s=2))
    assert result.timed_out and not result.output_exceeded
    assert "started" in result.output_tail
    assert time.monotonic() - start < 20
    if mode == "fresh-bind":
        assert our_containers(b) == []
    # closing its output does not let a command outlive its deadline
    quiet = b.run(request_for(b, empty_tree, "echo bye; exec >/dev/null 2>&1; sleep 60", timeout_s=2))
    assert quiet.timed_out and "bye" in quiet.output_tail
    assert time.monotonic() - start < 40


NETWORK_PROBE = r'''
import os, socket
assert sorted(os.listdir("/sys/class/net")) == ["lo"], os.listdir("/sys/class/net")
for target in [("1.1.1.1", 53), ("8.8.8.8", 443), ("172.17.0.1", 2375), ("169.254.169.254", 80)]:
    try:
        socket.create_connection(target, timeout=3)
    except OSError as exc:
        print("blocked", target, exc)
    else:
        raise SystemExit(f"reached {target}")
try:
    socket.getaddrinfo("pypi.org", 443)
except OSError as exc:
    print("no dns:", exc)
else:
    raise SystemExit("resolved pypi.org")
print("ISOLATED")
'''


def test_no_network_at_run_time(backend, empty_tree, work_root):
    suite = work_root / "net-suite"
    suite.mkdir(exist_ok=True)
    (suite / "probe.py").write_text(NETWORK_PROBE)
    request = RunRequest(tree=empty_tree, suite_folder=suite, suite_files=("probe.py",), command="python tmp/probe.py",
                         environment=backend.environment, limits=Limits(timeout_s=60))
    result = backend.run(request)
    assert result.exit_code == 0, result.output_tail
    assert "ISOLATED" in result.output_tail


@pytest.mark.parametrize("mode", ["fresh-bind", "reused-bind"])
def test_memory_limit(mode, backends, empty_tree):
    backend = backends[mode]
    grab = "python -c 'b = bytearray({mb} * 1024 * 1024); b[::4096] = b\"x\" * len(b[::4096]); print(\"got it\")'"
    small = backend.run(request_for(backend, empty_tree, grab.format(mb=16), memory_mb=128))
    assert small.exit_code == 0 and "got it" in small.output_tail
    big = backend.run(request_for(backend, empty_tree, grab.format(mb=512), memory_mb=128))
    assert big.exit_code != 0 and "got it" not in big.output_tail
    assert not big.timed_out


CPU_QUOTA = ("python -c 'import pathlib; cg = pathlib.Path(\"/sys/fs/cgroup\"); "
             "v2 = cg / \"cpu.max\"; "
             "q, p = v2.read_text().split() if v2.exists() else ((cg / \"cpu/cpu.cfs_quota_us\").read_text(), "
             "(cg / \"cpu/cpu.cfs_period_us\").read_text()); print(\"cpus\", int(q) / int(p))'")


def test_cpu_quota_is_every_core_unless_set(backend, docker_engine, work_root, empty_tree, monkeypatch):
    """A run may use every core, as a local run may (a 1-CPU quota throttled Go's parallel
    compile and not pytest); TESTPRISM_DOCKER_CPUS sets a quota, and so does a run's own
    `cpus` (an instance's task.toml), below the backend's."""
    result = backend.run(request_for(backend, empty_tree, CPU_QUOTA))
    assert f"cpus {float(os.cpu_count())}" in result.output_tail, result.output_tail
    own = backend.run(request_for(backend, empty_tree, CPU_QUOTA, cpus=0.25))
    assert "cpus 0.25" in own.output_tail, own.output_tail
    monkeypatch.setenv("TESTPRISM_DOCKER_CPUS", "0.5")
    capped = DockerBackend(WorkPaths(work_root), reuse=False, prewarm=False)
    try:
        capped.environment = capped.prepare(EnvironmentSpec())
        result = capped.run(request_for(capped, empty_tree, CPU_QUOTA))
    finally:
        capped.close()
    assert "cpus 0.5" in result.output_tail, result.output_tail


@pytest.mark.parametrize("mode", ["fresh-bind", "reused-bind"])
def test_process_limit(mode, backends, empty_tree):
    backend = backends[mode]
    spawn = ("python -c 'import subprocess\n"
             "procs = [subprocess.Popen([\"sleep\", \"30\"]) for _ in range(64)]\n"
             "print(\"spawned\", len(procs))'")
    result = backend.run(request_for(backend, empty_tree, spawn, processes=16, timeout_s=30))
    assert result.exit_code != 0 and "spawned" not in result.output_tail
    assert "Resource temporarily unavailable" in result.output_tail or "BlockingIOError" in result.output_tail
    assert not result.timed_out  # the sleeps died with the container


@pytest.mark.parametrize("mode", ["fresh-bind", "reused-bind"])
def test_output_bound_keeps_the_tail(mode, backends, empty_tree):
    backend = backends[mode]
    result = backend.run(request_for(
        backend, empty_tree, "for i in $(seq 1 200000); do echo line-$i; done; sleep 30",
        output_bytes=256 * 1024, tail_bytes=4096, timeout_s=30,
    ))
    assert result.output_exceeded and not result.timed_out
    assert len(result.output_tail.encode()) <= 4096
    assert "line-" in result.output_tail and "line-1\n" not in result.output_tail


@pytest.mark.parametrize("mode", MODES)
def test_unprivileged_and_nothing_leaks_between_runs(mode, backends, empty_tree):
    b = backends[mode]
    first = b.run(request_for(
        b, empty_tree,
        "id -u; echo x > left-behind; echo x > /tmp/left-behind; echo x > /dev/shm/left-behind; "
        "ipcmk -M 4096 >/dev/null; (sleep 300 &); echo x > /opt/testprism/escape 2>/dev/null && echo WROTE-ENV; true",
    ))
    assert first.exit_code == 0, first.output_tail
    assert int(first.output_tail.split()[0]) >= 200_000, first.output_tail
    assert "WROTE-ENV" not in first.output_tail
    second = b.run(request_for(
        b, empty_tree,
        "ls left-behind /tmp/left-behind /dev/shm/left-behind 2>/dev/null; "
        "echo IPC=$(ipcs -m | grep -c '^0x'); "
        "echo SLEEPS=$(for p in /proc/[0-9]*/comm; do cat $p; done 2>/dev/null | grep -c '^sleep$')",
    ))
    assert "left-behind" not in second.output_tail
    assert "IPC=0" in second.output_tail
    # fast mode keeps its own `sleep infinity` as the container's main process
    assert f"SLEEPS={0 if mode.startswith('fresh') else 1}" in second.output_tail


@pytest.mark.parametrize("mode", MODES)
def test_stdout_and_stderr_are_one_ordered_stream(mode, backends, empty_tree):
    b = backends[mode]
    result = b.run(request_for(b, empty_tree, "for i in 1 2 3 4 5; do echo out$i; echo err$i >&2; done"))
    assert result.output_tail == "".join(f"out{i}\nerr{i}\n" for i in range(1, 6))


@pytest.mark.parametrize("mode", MODES)
def test_junit_is_fetched_back_and_never_through_a_link(mode, backends, empty_tree):
    """A run owns its output folder: links it leaves there must not make the host read
    anything else into the store."""
    b = backends[mode]
    result = b.run(request_for(b, empty_tree, 'echo "<testsuite tests=\\"0\\"/>" > "$TESTPRISM_JUNIT"'))
    assert result.exit_code == 0 and result.junit_xml == b'<testsuite tests="0"/>\n'
    assert b.run(request_for(b, empty_tree, "true")).junit_xml is None
    linked = b.run(request_for(b, empty_tree, 'ln -sf /etc/passwd "$TESTPRISM_JUNIT"'))  # over the report pipe
    assert linked.exit_code == 0 and linked.junit_xml is None
    secret = b.work.root / "not-for-runs"  # a host folder holding a junit.xml
    secret.mkdir(exist_ok=True)
    (secret / "junit.xml").write_text("<secret/>")
    moved = b.run(request_for(b, empty_tree, f'cd .. && mv out elsewhere && ln -s {secret} out'))
    assert moved.exit_code == 0 and moved.junit_xml is None


def test_every_container_is_removed(backend, empty_tree):
    made_for_the_run = DockerBackend(backend.work)  # the default
    made_for_the_run.environment = backend.environment
    for command in ("true", "exit 3", "sleep 30"):
        made_for_the_run.run(request_for(made_for_the_run, empty_tree, command, timeout_s=2))
    assert our_containers(made_for_the_run) == []  # before close(): each run removed its own
    made_for_the_run.close()
    for reuse, prewarm in ((False, True), (True, False)):
        b = DockerBackend(backend.work, reuse=reuse, prewarm=prewarm)
        b.environment = backend.environment
        for command in ("true", "exit 3", "sleep 30"):
            b.run(request_for(b, empty_tree, command, timeout_s=2))
        # what stays until close(): the reused container, or the one started ahead
        assert len(our_containers(b)) <= 2
        b.close()
        assert our_containers(b) == []


@pytest.mark.parametrize("reuse", [False, True])
def test_an_image_pruned_during_a_replay_is_built_again(reuse, backend, empty_tree):
    b = DockerBackend(backend.work, reuse=reuse, prewarm=False)
    b.environment = b.prepare(EnvironmentSpec(packages=()))
    api = api_client()
    try:
        api.remove_image(environment_tag(b.environment.name), force=True)
    finally:
        api.close()
    result = b.run(request_for(b, empty_tree, "python -c 'print(6 * 7)'"))
    assert result.exit_code == 0 and "42" in result.output_tail
    b.close()


def test_sweep_removes_only_leftovers_of_dead_processes(backend):
    api = api_client()
    dead = subprocess.Popen(["true"])
    dead.wait()
    gone_owner = f"{socket.gethostname()}:{dead.pid}:0"
    labels = {LABEL: "1", RUN_LABEL: "1"}
    tag = f"{ENV_REPOSITORY}:{backend.environment.name}"
    leftover = api.create_container(tag, command=["true"], labels={**labels, OWNER_LABEL: gone_owner})["Id"]
    alive = api.create_container(tag, command=["true"], labels={**labels, OWNER_LABEL: backend.owner})["Id"]
    build = api.create_container(tag, command=["true"], name=f"{BUILD_PREFIX}{dead.pid}.0-cafe")["Id"]
    workspace = backend.work.workspaces / f"docker-{dead.pid}.0-abc"
    workspace.mkdir(parents=True)
    try:
        assert DockerBackend.sweep(backend.work) >= 3
        ids = {c["Id"] for c in api.containers(all=True)}
        assert leftover not in ids and build not in ids and alive in ids
        assert not workspace.exists()
    finally:
        for cid in (leftover, alive, build):
            try:
                api.remove_container(cid, force=True)
            except Exception:  # noqa: BLE001 - already gone is fine
                pass
        api.close()


def test_python_missing_from_the_base_is_a_build_error(backend):
    with pytest.raises(EnvironmentBuildError, match="python3.7"):
        backend.prepare(EnvironmentSpec(python="3.7", packages=()))


def test_no_engine_is_unavailable(monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/nothing.sock")
    with pytest.raises(SandboxUnavailable, match="start-dockerd"):
        DockerBackend(WorkPaths(tmp_path))


def test_images_cli_builds_lists_and_prunes(backend, parity_bench):
    from typer.testing import CliRunner

    from testprism.flows.cli import images_app

    runner = CliRunner()
    built = runner.invoke(images_app, ["build", str(parity_bench)])
    assert built.exit_code == 0, built.output
    listed = runner.invoke(images_app, ["list"], env={"COLUMNS": "200"})
    assert listed.exit_code == 0, listed.output
    assert "testprism-base" in listed.output and "environment" in listed.output
    # prune --keep: what the benchmarks use stays, an unused environment image goes (the
    # bundled benchmark's are kept too: later tests build their Go and Node images on them)
    api = api_client()
    tag = f"{ENV_REPOSITORY}:{backend.environment.name}"
    holder = api.create_container(tag, command=["true"])["Id"]
    api.commit(holder, repository=ENV_REPOSITORY, tag="unused-by-tests",
               conf={"Labels": {"testprism.kind": "environment", "testprism.environment": "unused"}})
    api.remove_container(holder, force=True)
    pruned = runner.invoke(images_app, ["prune", "--keep", str(parity_bench), "--keep", str(BUNDLED)])
    assert pruned.exit_code == 0, pruned.output
    remaining = {t for image in api.images(filters={"label": "testprism=1"}) for t in image.get("RepoTags") or ()}
    assert f"{ENV_REPOSITORY}:unused-by-tests" not in remaining
    assert tag in remaining and DEFAULT_BASE in remaining
    api.close()
