"""Red-team cases of issue 26 against the docker backend, each with a control that shows
the attack working where the defence is off.

- a container started ahead (the opt-in) looks exactly like one started for its run (a
  fingerprint suite of everything a run sees of its surroundings) but for its age, so by
  default every container is made for its run;
- memory across processes and through tmpfs ends as `E`/`memory_limit`, its container
  killed at the limit;
- a run that forks past its process limit is `E`/`process_limit`, as under local;
- a run that leaves a tree thousands of folders deep fails its own run at worst, never
  the batch, and nothing of it stays on disk;
- the opt-in gVisor runtime (`TESTPRISM_DOCKER_RUNTIME=runsc`): the host's page cache
  is not the run's.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from pathlib import Path

import pytest

from testprism.tasks.sandbox.base import Limits, RunRequest
from testprism.tasks.model.benchmark_format import EnvironmentSpec
from testprism.tasks.model.outcome import Outcome, Reason
from testprism.tasks.model.workdir import WorkPaths
from testprism.tasks.execution.verdict import classify
from testprism.tasks.sandbox.docker import fresh
from testprism.tasks.sandbox.docker.backend import DockerBackend
from tests.test_run_limits import FORKING_PAST_THE_LIMIT

BARE = EnvironmentSpec(python="3.11", packages=())

#: Everything a run can see of its container that does not name its program: variables,
#: pid 1 and every process, mounts, cgroups, limits, host name, the workspace's and the
#: launcher folder's listings and times (not change/birth times: the fill's, the same in
#: every state). What is random in every container alike (ids, host names, the uid, the
#: host folders' and the image layers' random names) is replaced by its shape, and so are
#: times other than the settled one (when the container started, when the run read a
#: folder: timing, SECURITY.md `docker`), so two
#: containers made the same way print the same digest, and one made differently does not.
FINGERPRINT = r'''
import glob, hashlib, os, re, socket, subprocess, sys

def norm(text):
    text = re.sub(r"[0-9a-f]{64}", "<id>", text)
    text = re.sub(r"\b[0-9a-f]{12}\b", "<host>", text)  # a container's host name: its id's start
    text = re.sub(r"/l/[A-Z0-9]{26}", "/l/<layer>", text)  # overlay2's short layer names
    text = re.sub(r"\b1[6-9]\d{17}\b", lambda m: m.group() if m.group() == "1600000000000000000" else "<time>", text)
    text = re.sub(r"(docker|run)-\d+\.\d+-[A-Za-z0-9_]+", "<ws>", text)  # mkdtemp's random host folder
    text = re.sub(r"\b(2[0-5][0-9]{4})\b", "<uid>", text)  # the run's random uid (200000-259999)
    text = re.sub(r"\b\d+:\d+\b", "<dev>", text)  # device numbers
    text = re.sub(r"^\d+ \d+ ", "<ids> ", text, flags=re.M)  # mountinfo's mount ids
    text = re.sub(r"(shared|master):\d+", r"\1:<n>", text)
    return text

def read(path):
    try:
        with open(path, "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError as exc:
        return f"<{type(exc).__name__}>"

STABLE = ("Name", "Umask", "State", "Uid", "Gid", "Groups", "Threads", "SigBlk", "SigIgn", "SigCgt",
          "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp", "Cpus_allowed_list")

def status(pid):
    return "\n".join(l for l in read(f"/proc/{pid}/status").splitlines() if l.split(":")[0] in STABLE)

def listing(path):
    out = []
    for name in sorted(os.listdir(path)) if os.path.isdir(path) else []:
        st = os.lstat(os.path.join(path, name))
        out.append(f"{name} {oct(st.st_mode)} {st.st_uid == os.getuid()} {st.st_size if not os.path.isdir(os.path.join(path, name)) else '-'} {st.st_mtime_ns} {st.st_atime_ns}")
    st = os.stat(path)
    return f"{path} {oct(st.st_mode)} {st.st_uid == os.getuid()} {st.st_mtime_ns} {st.st_atime_ns}\n" + "\n".join(out)

parts = {
    "env": "\n".join(sorted(f"{k}={v}" for k, v in os.environ.items() if k not in ("_", "SHLVL"))),
    "cwd": os.getcwd(),
    "pid1": read("/proc/1/cmdline") + "\n" + read("/proc/1/environ") + "\n" + status(1),
    "procs": "\n".join(sorted(f"{read(p + '/comm').strip()} | {norm(read(p + '/cmdline'))}"
                              for p in glob.glob("/proc/[0-9]*") if int(p.rsplit("/", 1)[1]) != os.getpid())),
    "self": status("self"),
    # sorted: the engine mounts its tmpfs masks of one depth (/sys/fs/erofs, /sys/class/bdi) in
    # Go's random map order, which says nothing of a run's place
    "mounts": "\n".join(sorted(norm(read("/proc/self/mountinfo")).splitlines())),
    "cgroup": norm(read("/proc/self/cgroup")),
    "host": re.sub(r"[0-9a-f]", "x", socket.gethostname()) + " " + norm(read("/etc/hosts")),
    "limits": read("/proc/self/limits"),
    "workspace": listing("/workspace") + "\n" + listing("/workspace/program") + "\n" + listing("/workspace/out"),
    "launch": listing("/run/testprism/launch") if os.path.isdir("/run/testprism/launch") else "-",
    "tmp": "\n".join(listing(p) for p in ("/tmp", "/var/tmp", "/dev/shm")),
    "df": subprocess.run(["df", "-k", "--output=source,fstype,size,target", "/", "/tmp", "/var/tmp", "/dev/shm",
                          "/workspace"], capture_output=True, text=True).stdout,
}
for name, text in parts.items():
    print("PART", name, hashlib.sha256(norm(text).encode()).hexdigest()[:16])
    if "-v" in sys.argv:
        print(norm(text))
'''


@pytest.fixture(scope="module")
def tree(work_root) -> Path:
    root = work_root / "redteam-tree"
    root.mkdir(exist_ok=True)
    (root / "data.txt").write_text("program file\n")
    (root / "pkg").mkdir(exist_ok=True)
    (root / "pkg" / "mod.py").write_text("X = 1\n")
    return root


@pytest.fixture(scope="module")
def suite(work_root) -> Path:
    folder = work_root / "fingerprint-suite"
    folder.mkdir(exist_ok=True)
    (folder / "fingerprint.py").write_text(FINGERPRINT)
    return folder


def _request(env: Path, tree: Path, suite: Path | None, command: str, **limits) -> RunRequest:
    return RunRequest(tree=tree, suite_folder=suite, suite_files=("fingerprint.py",) if suite else (),
                      command=command, environment=env, limits=Limits(**{"timeout_s": 60.0, **limits}))


def _fingerprint(backend: DockerBackend, tree: Path, suite: Path) -> dict[str, str]:
    env = backend.prepare(BARE)
    result = backend.run(_request(env, tree, suite, "python tmp/fingerprint.py"))
    assert result.exit_code == 0, result.output_tail
    return dict(line.split()[1:] for line in result.output_tail.splitlines() if line.startswith("PART "))


def _prestarted(backend: DockerBackend, request: RunRequest) -> int:
    """How many containers stand ready for a run like `request` (pre-started, waiting)."""
    with backend._lock:
        return len(backend._warm.get(backend._warm_key(request, backend._tag_of(request)), []))


def _fingerprint_prestarted(backend: DockerBackend, tree: Path, suite: Path) -> dict[str, str]:
    """The fingerprint of a run that took a container started ahead of it (a first run
    starts one for the next; wait until it is ready)."""
    env = backend.prepare(BARE)
    request = _request(env, tree, suite, "python tmp/fingerprint.py")
    backend.run(_request(env, tree, None, "true"))
    deadline = time.monotonic() + 30
    while _prestarted(backend, request) == 0:
        assert time.monotonic() < deadline, "no container was started ahead"
        time.sleep(0.05)
    return _fingerprint(backend, tree, suite)


@pytest.fixture(scope="module")
def cold(docker_engine, work) -> DockerBackend:
    made = DockerBackend(work, reuse=False, prewarm=False)
    yield made
    made.close()


def test_a_prestarted_container_cannot_be_told_from_a_fresh_one(cold, work, tree, suite):
    warm = DockerBackend(work, reuse=False, prewarm=True)
    try:
        assert warm.copy == "bind" and warm.prewarm
        prestarted = _fingerprint_prestarted(warm, tree, suite)
    finally:
        warm.close()
    fresh_one = _fingerprint(cold, tree, suite)
    assert len(fresh_one) == 13 and prestarted == fresh_one


def test_control_the_old_prestart_layout_is_told_apart(cold, tree, suite, monkeypatch):
    """What a pre-started container used to show, reproduced in a fresh one: the launcher
    named in pid 1's command line, and the workspace's time moved by the script written
    into it after the times were settled. The fingerprint sees each."""
    baseline = _fingerprint(cold, tree, suite)
    monkeypatch.setattr(fresh, "LAUNCHER", ["bash", "-c", f"read -r _ < {fresh.LAUNCH}/go && exec bash "
                                                          f"{fresh.LAUNCH}/run # /workspace/.go"])
    named = _fingerprint(cold, tree, suite)
    assert named["pid1"] != baseline["pid1"] and named["procs"] != baseline["procs"]
    monkeypatch.undo()

    settled = fresh.fill_workspace

    def fill_then_write_the_script_in(request, ws, uid=None, **how):
        installed = settled(request, ws, uid, **how)
        (ws / ".run").write_text("# the old script\n")
        (ws / ".run").unlink()
        return installed

    monkeypatch.setattr(fresh, "fill_workspace", fill_then_write_the_script_in)
    touched = _fingerprint(cold, tree, suite)
    assert touched["workspace"] != baseline["workspace"]
    assert {k for k in baseline if touched[k] != baseline[k]} == {"workspace"}


def test_by_default_every_container_is_made_for_its_run(work, tree, monkeypatch):
    """What still told a pre-started container from a fresh one was its age (pid 1's start
    time against the clock: 0.53 s against 0.06 s), which says whether a run was its
    worker's first. So by default nothing is started ahead: after a run no container waits
    for the next and none is being made. Control: with `$TESTPRISM_DOCKER_PREWARM=1` (the
    opt-in) a run leaves one waiting for the next."""
    for setting, ahead in (("", False), ("1", True)):
        monkeypatch.setenv("TESTPRISM_DOCKER_PREWARM", setting)
        backend = DockerBackend(work, reuse=False)
        try:
            env = backend.prepare(BARE)
            request = _request(env, tree, None, "true")
            assert classify(backend.run(request)) == (Outcome.PASS, None)
            if ahead:
                deadline = time.monotonic() + 30
                while _prestarted(backend, request) == 0:
                    assert time.monotonic() < deadline, "the opt-in started nothing ahead"
                    time.sleep(0.05)
            else:
                assert not backend.prewarm and _prestarted(backend, request) == 0
                assert backend._filler._work_queue.empty() and not backend._filler._threads
        finally:
            backend.close()


# -- memory and disk: run-wide limits, E with their reason --------------------------------------

GRAB = ("python -c 'import os, sys, time\n"
        "child = os.fork()\n"  # two processes, each under the limit, together past it
        "b = bytearray({mb} * 1024 * 1024); b[::4096] = bytes(len(b[::4096]))\n"
        "time.sleep(1)\n"
        "print(\"held\", flush=True)\n"
        "sys.exit(0) if child == 0 else os.waitpid(child, 0)'")


@pytest.mark.parametrize("mode", ["fresh", "reused"])
def test_memory_across_processes_is_a_memory_limit_error(mode, work, tree):
    """Two processes of 160 MiB each under a 256 MiB limit: the cgroup (not a per-process
    rlimit) stops them together, `E`/memory_limit. Control: 2 × 60 MiB pass."""
    backend = DockerBackend(work, reuse=mode == "reused", prewarm=False)
    try:
        env = backend.prepare(BARE)
        control = backend.run(_request(env, tree, None, GRAB.format(mb=60), memory_mb=256))
        assert control.exit_code == 0 and control.output_tail.count("held") == 2, control.output_tail
        assert classify(control) == (Outcome.PASS, None)
        hog = backend.run(_request(env, tree, None, GRAB.format(mb=160), memory_mb=256))
    finally:
        backend.close()
    assert hog.limit == "memory_limit", (hog.exit_code, hog.output_tail)
    assert classify(hog) == (Outcome.ERROR, Reason.MEMORY_LIMIT)


@pytest.mark.parametrize("folder", ["/tmp", "/var/tmp", "/dev/shm"])
def test_memory_through_tmpfs_is_a_memory_limit_error(folder, cold, tree):
    """Files in the container's tmpfs folders are memory: 400 MiB there under a 256 MiB
    limit is `E`/memory_limit. Control: 100 MiB is written and the run passes."""
    env = cold.prepare(BARE)
    write = f"head -c {{mb}}m /dev/zero > {folder}/fill && du -m {folder}/fill"
    control = cold.run(_request(env, tree, None, write.format(mb=100), memory_mb=256))
    assert control.exit_code == 0 and classify(control) == (Outcome.PASS, None), control.output_tail
    hog = cold.run(_request(env, tree, None, write.format(mb=400), memory_mb=256))
    assert classify(hog) == (Outcome.ERROR, Reason.MEMORY_LIMIT), (hog.exit_code, hog.output_tail)


def test_the_image_root_is_not_a_write_path(cold, tree):
    """The container's writable layer is on the host's disk outside every limit: the root
    is read-only, so the only places to write are the workspace and the sized tmpfs
    folders. Control: the same write to /tmp works."""
    env = cold.prepare(BARE)
    done = cold.run(_request(env, tree, None, "for d in / /usr /etc /var /opt /run /run/lock /var/cache; do "
                                              "echo x > $d/.probe 2>/dev/null && echo WROTE $d; done; "
                                              "echo x > /tmp/.probe && echo TMP-OK; "
                                              "df -m /tmp /var/tmp /dev/shm | tail -n 3"))
    assert "WROTE" not in done.output_tail and "TMP-OK" in done.output_tail, done.output_tail
    sizes = [line.split()[1] for line in done.output_tail.splitlines()[-3:]]
    assert sizes == [str(Limits().disk_mb)] * 3, done.output_tail


# -- processes: a container at its limit is E/process_limit --------------------------------------


def _parents() -> set[str]:
    """This process's containers' parent cgroups (pids.py) present now."""
    from testprism.tasks.model.workdir import workspace_prefix

    mine = workspace_prefix("docker")
    root = Path("/sys/fs/cgroup")  # v2: its root; v1: one folder per hierarchy
    return {str(p) for p in [*root.glob(f"{mine}*"), *root.glob(f"*/{mine}*")] if p.is_dir()}


@pytest.mark.parametrize("watched", [True, False])
def test_forks_past_the_process_limit_are_process_limit(watched, cold, tree, monkeypatch):
    """A run forking past `processes` (16) has a fork refused: `E`/process_limit, as under
    the local backend, whatever it exits with. CONTROL: the container's processes not
    watched (no parent cgroup of its own, as before), the same run reads as the state
    failing it. Either way no parent cgroup is left behind."""
    if not watched:
        monkeypatch.setattr(cold, "pids_version", None)
    else:
        assert cold.pids_version is not None  # this machine's engine: cgroupfs, on this host
    env = cold.prepare(BARE)
    before = _parents()
    result = cold.run(_request(env, tree, None, FORKING_PAST_THE_LIMIT, processes=16))
    assert "fork" in result.output_tail and "refused" in result.output_tail, result.output_tail
    if watched:
        assert (result.limit, classify(result)) == ("process_limit", (Outcome.ERROR, Reason.PROCESS_LIMIT))
    else:
        assert (result.limit, classify(result)) == (None, (Outcome.FAIL, None))
    assert _parents() == before


def test_a_run_within_its_process_limit_is_no_limit(cold, tree):
    """Forks that stay under the limit (8 sleepers of 16) are no process_limit."""
    env = cold.prepare(BARE)
    result = cold.run(_request(env, tree, None, "for i in 1 2 3 4 5 6 7 8; do sleep 0.2 & done; wait; echo ok",
                               processes=16))
    assert (result.exit_code, result.limit, classify(result)) == (0, None, (Outcome.PASS, None)), result.output_tail


def test_parents_of_a_gone_harness_are_swept_and_a_live_ones_kept():
    """A harness killed mid-run leaves its containers' parent cgroups: pids.sweep removes
    those whose process is gone (its pid's start time differs), in every hierarchy, and
    leaves this live process's."""
    from testprism.tasks.sandbox.docker import pids

    roots = pids._folders("1") or pids._folders("2")
    assert roots is not None
    gone, live = f"{pids.KIND}-{os.getpid()}.1-deadbeef", pids.new_parent()
    for root in roots:
        for name in (gone, live):
            (root / name).mkdir()
    try:
        assert pids.sweep() >= 1
        assert [r for r in roots if (r / gone).exists()] == [] and all((r / live).is_dir() for r in roots)
    finally:
        for root in roots:
            for name in (gone, live):
                with contextlib.suppress(FileNotFoundError):
                    (root / name).rmdir()


# -- a deep tree fails no batch -------------------------------------------------------------------

DEEP_SUITE = """
python - <<'END'
import os
fd = os.open("..", os.O_RDONLY)
for level in range(6000):  # through descriptors: the path is past PATH_MAX
    os.mkdir("d", dir_fd=fd)
    child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
    if level % 1000 == 999:  # odd modes on the way: a file and a folder its owner may not touch
        os.close(os.open("f", os.O_CREAT | os.O_WRONLY, 0o000, dir_fd=child))
        os.fchmod(fd, 0o500)  # its subfolder made: the folder closed behind it
    os.close(fd)
    fd = child
print("deep")
END
"""


def _deep_batch(tmp_path: Path, work_root: Path) -> tuple[list[dict], list[str]]:
    """A batch of two configurations under docker, one of whose suites leaves a tree 6,000
    folders deep with odd modes in every run's workspace: the rows stored, and what of this
    batch's workspaces is left in the work area."""
    from testprism.storage import Store
    from testprism.tasks.execution.batch import ExecutionOptions
    from testprism.tasks.model.benchmark import load_benchmark
    from testprism.tasks.replay.runs import execute_batch, plan
    from tests.benchfixture import CHECKS, make_benchmark

    root = make_benchmark(tmp_path / "bench", {"deep": {"run_tests.sh": DEEP_SUITE}, "plain": {"test_m.py": CHECKS}})
    for dirpath, _, filenames in os.walk(root):  # the sandbox's uid reads the suites
        os.chmod(dirpath, 0o755)
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o644)
    work = WorkPaths(work_root)
    work.ensure()
    before = set(os.listdir(work.workspaces))
    options = ExecutionOptions(backend="docker", work_root=work_root, store_root=tmp_path / "store", concurrency=2,
                               limits=Limits(timeout_s=120.0))
    bench = load_benchmark(root)
    execute_batch([s for s in plan(bench, options) if s.runs_in_sandbox], options)
    rows = Store(tmp_path / "store").scan("runs").collect().select("configuration", "state", "outcome", "reason")
    return rows.to_dicts(), sorted(set(os.listdir(work.workspaces)) - before)


@pytest.mark.parametrize("bounded", ["1", "0"])  # the workspace a tmpfs (the default), or on the work area's disk
def test_a_tree_6000_folders_deep_fails_no_batch_and_is_removed(bounded, docker_engine, tmp_path, work_root,
                                                                  monkeypatch):
    monkeypatch.setenv("TESTPRISM_BOUNDED_WORKSPACE", bounded)
    rows, left = _deep_batch(tmp_path, work_root)
    assert len(rows) == 8, rows
    assert {r["outcome"] for r in rows if r["configuration"] == "deep"} == {"P"}, rows
    assert left == []


def test_control_a_removal_that_fails_is_that_runs_sandbox_error(docker_engine, tmp_path, work_root, monkeypatch):
    """The old recursive removal (RecursionError on 6,000 levels) of a workspace on disk
    (a bounded one goes with its tmpfs): each deep run becomes `E`/sandbox_error, and the
    batch still completes with every other run stored."""
    from testprism.tasks.sandbox import layer

    monkeypatch.setenv("TESTPRISM_BOUNDED_WORKSPACE", "0")

    def recursive_removal(path: Path) -> None:
        if os.path.lexists(path):  # remove_tree takes a missing tree as removed
            shutil.rmtree(path)

    monkeypatch.setattr(layer, "remove_tree", recursive_removal)
    rows, left = _deep_batch(tmp_path, work_root)
    monkeypatch.undo()
    try:
        assert len(rows) == 8, rows
        assert {(r["outcome"], r["reason"]) for r in rows if r["configuration"] == "deep"} == {("E", "sandbox_error")}
        assert {r["outcome"] for r in rows if r["configuration"] == "plain"} <= {"P", "F"}
        assert left  # what the failed removal left, removed below
    finally:
        for name in left:
            layer.discard(WorkPaths(work_root).workspaces / name)


@pytest.mark.parametrize("mode", ["fresh", "prestarted", "reused"])
def test_filling_the_workspace_is_a_disk_limit_error(mode, work, tree, monkeypatch):
    """300 MiB written to the program under `disk_mb=100`: the workspace is a tmpfs sealed
    at the tree + 100 MiB (workspace.py's bound, not the work area's disk), `E`/disk_limit.
    Control: with the bound turned off, the same write reaches the host's disk whole."""
    write = "head -c 300m /dev/zero > big; echo rc=$?; du -m big"
    limits = {"disk_mb": 100, "memory_mb": 1024}

    def attack() -> tuple:
        backend = DockerBackend(work, reuse=mode == "reused", prewarm=mode == "prestarted")
        try:
            env = backend.prepare(BARE)
            if mode == "prestarted":
                backend.run(_request(env, tree, None, "true", **limits))
                request = _request(env, tree, None, write, **limits)
                deadline = time.monotonic() + 30
                while _prestarted(backend, request) == 0:
                    assert time.monotonic() < deadline
                    time.sleep(0.05)
            small = backend.run(_request(env, tree, None, "head -c 50m /dev/zero > big", **limits))
            return small, backend.run(_request(env, tree, None, write, **limits))
        finally:
            backend.close()

    small, big = attack()
    assert classify(small) == (Outcome.PASS, None), small.output_tail
    assert classify(big) == (Outcome.ERROR, Reason.DISK_LIMIT), (big.exit_code, big.output_tail)
    assert "rc=0" not in big.output_tail
    monkeypatch.setenv("TESTPRISM_BOUNDED_WORKSPACE", "0")
    _, unbounded = attack()
    assert "rc=0" in unbounded.output_tail and "300\tbig" in unbounded.output_tail
    assert classify(unbounded) == (Outcome.PASS, None)


# -- gVisor: the host's page cache is not the run's ------------------------------------------------


@pytest.mark.parametrize("runtime", ["runc", "runsc"])
def test_a_run_times_what_an_earlier_run_left_in_the_page_cache_only_under_runc(runtime, work, tree):
    """The counting channel of issue 26: a file of the image evicted on the host, one run
    reads it, the next times reading each of its pages. Under runc (the CONTROL) a page
    answers ~35x faster once the earlier run read it (the host's page cache is shared);
    under gVisor's runsc (TESTPRISM_DOCKER_RUNTIME=runsc) the run's reads go to a kernel of
    its own, whose cost per read drowns the host's cache: no such step (measured: ratios
    0.55 to 1.7 against 33 to 37 under runc; bench/gvisor_overhead.py)."""
    from tests.pagecache_probe import OBSERVE, TOUCH, evict, observed, probe_host_path

    backend = DockerBackend(work, runtime=None if runtime == "runc" else runtime)
    try:
        assert backend.isolation == ("container" if runtime == "runc" else "container+runsc")
        env = backend.prepare(BARE)
        host_file = probe_host_path(backend._tag_of(_request(env, tree, None, "true")))
        evict(host_file)
        first = observed(backend.run(_request(env, tree, None, OBSERVE)).output_tail)
        evict(host_file)
        assert "TOUCHED" in backend.run(_request(env, tree, None, TOUCH)).output_tail
        second = observed(backend.run(_request(env, tree, None, OBSERVE)).output_tail)
        kernel = backend.run(_request(env, tree, None, "dmesg 2>/dev/null | head -1; true")).output_tail
    finally:
        backend.close()
    ratio = first["median_us"] / second["median_us"]
    if runtime == "runc":
        assert ratio > 10, (first, second)
    else:
        assert "gVisor" in kernel
        assert 1 / 4 < ratio < 4, (first, second)
