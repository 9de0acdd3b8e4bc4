"""A run's memory, processes and disk bounded per run, not per process (issue 26, item 3).

Each attack is one the red team ran: memory held across several processes, memory parked
in the sandbox's tmpfs folders, the workspace filled, forks past the process limit. With
the defence in force each ends `E` with its limit's reason; each has a CONTROL that turns
the defence off (`$TESTPRISM_RUN_CGROUP=0`: per-process rlimits only;
`$TESTPRISM_BOUNDED_WORKSPACE=0`: the workspace on the work area's disk) and shows the
attack going through, so none of these tests can pass without the defence working.

Small limits keep them fast: 256 MiB of memory against 3 processes of 150 MiB each.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from testprism.tasks.execution.verdict import classify
from testprism.tasks.model.benchmark_format import EnvironmentSpec
from testprism.tasks.model.outcome import Outcome, Reason
from testprism.tasks.model.workdir import WorkPaths, workspace_prefix
from testprism.tasks.model import removal
from testprism.tasks.sandbox import cgroup
from testprism.tasks.sandbox.base import Limits, RunRequest, SandboxBackend, SandboxError
from testprism.tasks.sandbox import local as local_module
from testprism.tasks.sandbox.local import LocalBackend
from testprism.tasks.model.removal import remove_tree
from testprism.tasks.sandbox.workspace import BOUNDED_SETTING
from tests.conftest import open_backend

BARE = EnvironmentSpec(python="3.11", packages=())
MIB = 1024 * 1024

#: three processes each holding 150 MiB at once; the parent reports what they hold together
#: (their resident sizes, read while all three are alive), then lets them go
ACROSS_PROCESSES = """python - <<'EOF'
import os, time
r, w = os.pipe()
kids = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        os.close(r)
        held = b"x" * (150 << 20)
        os.write(w, b"1")
        time.sleep(2)
        os._exit(0)
    kids.append(pid)
os.close(w)
ready = b""
while len(ready) < 3 and (chunk := os.read(r, 3)):
    ready += chunk
if len(ready) < 3:
    raise SystemExit("a holder died")
rss = 0
for pid in kids:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            rss += int(line.split()[1]) // 1024
print(f"held {rss} MiB across processes")
for pid in kids:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
EOF"""

#: 3 x 120 MiB parked in the sandbox's tmpfs folders, no process holding any of it
THROUGH_TMPFS = ("head -c 125829120 /dev/zero > /tmp/a && head -c 125829120 /dev/zero > /var/tmp/b && "
                 "head -c 125829120 /dev/zero > /dev/shm/c && du -cm /tmp/a /var/tmp/b /dev/shm/c | tail -1")

#: 200 MiB written into the program's own folder, 8 MiB at a time
FILLING_THE_WORKSPACE = "head -c 209715200 /dev/zero > filler && du -m filler"

#: forks until one is refused, then fails as a test would
FORKING_PAST_THE_LIMIT = """python - <<'EOF'
import os, time
for n in range(40):
    try:
        pid = os.fork()
    except OSError as exc:
        raise SystemExit(f"fork {n} refused: {exc}")
    if pid == 0:
        time.sleep(3)
        os._exit(0)
print("40 forks")
EOF"""


@pytest.fixture(scope="module", params=["local"])
def backend(request, work) -> Iterator[SandboxBackend]:
    made = open_backend(request.param, work)
    yield made
    made.close()


@pytest.fixture(scope="module")
def env(backend) -> Path:
    return backend.prepare(BARE)


@pytest.fixture()
def tree(work_root) -> Path:
    root = work_root / f"tree-{os.getpid()}-{time.monotonic_ns()}"
    root.mkdir()
    (root / "data.txt").write_text("program file\n")
    return root


@pytest.fixture(params=["defended", "control"])
def defence(request, monkeypatch) -> bool:
    """Each attack twice: with the run's cgroup and bounded workspace, and without them
    (the control: what a run could do before)."""
    if request.param == "control":
        monkeypatch.setenv(cgroup.SETTING, "0")
        monkeypatch.setenv(BOUNDED_SETTING, "0")
        return False
    return True


def run(backend, env, tree, script: str, **limits):
    request = RunRequest(tree=tree, suite_folder=None, suite_files=(), command=script, environment=env,
                         limits=Limits(**{"timeout_s": 60.0, **limits}))
    return backend.run(request)


def test_an_environment_in_var_tmp_is_seen_under_the_runs_own_var_tmp(backend, env, tree):
    """The default work area, which holds the environments, is in /var/tmp (workdir.py), as
    the tests' is; the run's /var/tmp is its workspace's scratch folder. Both hold: the run
    finds its environment's `python` (a scratch folder bound over it hid it: every Python
    run was `python: not found`), and what it writes to /var/tmp stays in its workspace."""
    assert str(env).startswith("/var/tmp/")
    mark = f"mine-{os.getpid()}-{time.monotonic_ns()}"
    result = run(backend, env, tree, f"command -v python; echo x > /var/tmp/{mark} && ls /var/tmp")
    assert classify(result) == (Outcome.PASS, None), result.output_tail
    assert result.output_tail.splitlines()[0] == f"{env}/bin/python", result.output_tail
    assert mark in result.output_tail and not os.path.lexists(f"/var/tmp/{mark}")


def test_memory_held_across_processes_is_memory_limit(backend, env, tree, defence):
    result = run(backend, env, tree, ACROSS_PROCESSES, memory_mb=256)
    if defence:
        assert classify(result) == (Outcome.ERROR, Reason.MEMORY_LIMIT), result.output_tail
        if "held" in result.output_tail:  # what it could hold at once stayed under the limit
            assert int(result.output_tail.split("held ")[1].split()[0]) < 256
    else:  # each process within its own 256 MiB address space, together well past it
        assert classify(result) == (Outcome.PASS, None), result.output_tail
        held = int(result.output_tail.split("held ")[1].split()[0])
        assert held >= 3 * 150 - 5 > 256


def test_memory_parked_in_tmpfs_folders_is_a_limit(backend, env, tree, defence):
    result = run(backend, env, tree, THROUGH_TMPFS, memory_mb=256)
    if defence:
        assert classify(result) in {(Outcome.ERROR, Reason.MEMORY_LIMIT), (Outcome.ERROR, Reason.DISK_LIMIT)}, \
            result.output_tail
    else:  # no process holds it, so no per-process limit sees it
        assert classify(result) == (Outcome.PASS, None), result.output_tail
        assert int(result.output_tail.split()[-2]) >= 360


def test_filling_the_workspace_is_disk_limit(backend, env, tree, defence):
    result = run(backend, env, tree, FILLING_THE_WORKSPACE, disk_mb=64, memory_mb=1024)
    if defence:
        assert classify(result) == (Outcome.ERROR, Reason.DISK_LIMIT), result.output_tail
        assert "No space left" in result.output_tail
    else:  # the work area's disk takes it all
        assert classify(result) == (Outcome.PASS, None), result.output_tail
        assert result.output_tail.split()[-2] == "200"


def test_tmp_filled_past_the_disk_bound_is_disk_limit(backend, env, tree, defence):
    """/tmp shares the workspace's bound: a run cannot park files beside it."""
    result = run(backend, env, tree, "head -c 209715200 /dev/zero > /tmp/filler && du -m /tmp/filler",
                 disk_mb=64, memory_mb=1024)
    if defence:
        assert classify(result) == (Outcome.ERROR, Reason.DISK_LIMIT), result.output_tail
    else:
        assert classify(result) == (Outcome.PASS, None), result.output_tail


def test_forks_past_the_process_limit_are_process_limit(backend, env, tree, defence):
    result = run(backend, env, tree, FORKING_PAST_THE_LIMIT, processes=16)
    assert "fork" in result.output_tail and "refused" in result.output_tail, result.output_tail
    if defence:
        assert classify(result) == (Outcome.ERROR, Reason.PROCESS_LIMIT)
    else:  # RLIMIT_NPROC refuses the fork too, but the run reads as the state failing it
        assert classify(result) == (Outcome.FAIL, None)


def test_runs_within_their_limits_pass_and_leave_no_cgroup(work, tree):
    """A run that stays within its bounds passes and writes its /tmp; once the backend is
    closed its cgroup and workspace are gone; the row says the bounds were in force."""
    hierarchy = cgroup._hierarchy()
    assert hierarchy is not None
    ours = workspace_prefix("run")

    def present() -> set[Path]:  # this process's run cgroups (another backend's parked launchers too)
        return {p for base in hierarchy.bases.values() for p in base.iterdir() if p.name.startswith(ours)}

    before = present()
    made = LocalBackend(work)
    try:
        result = run(made, made.prepare(BARE), tree, "echo hi > /tmp/x && cat /tmp/x", memory_mb=256, disk_mb=64)
    finally:
        made.close()
    assert classify(result) == (Outcome.PASS, None), result.output_tail
    assert "hi" in result.output_tail
    assert made.isolation == "bubblewrap"
    # none of this backend's is left (another backend's parked launchers, in `before`, may
    # have gone meanwhile: their backend closed; only what this one made is asserted on)
    assert present() - before == set()
    assert [p for p in work.workspaces.iterdir() if p.name.startswith(ours)] == []


#: 40 files in the program's folder: past removal's bound, lowered to 20 in the test (5
#: million entries in earnest: a workspace on the work area's disk holds that many)
WIDE = "for i in $(seq 40); do : > f$i; done; echo wrote"


@pytest.mark.parametrize("mode", ["on-disk", "bounded", "control"])
def test_a_workspace_its_run_left_unremovable_is_that_runs_sandbox_error(mode, work, tree, monkeypatch):
    """A run leaves more entries than removal may delete (removal.MAX_ENTRIES). On the work
    area's disk (`$TESTPRISM_BOUNDED_WORKSPACE=0`) that workspace cannot be removed: the run
    is a SandboxError (`E`/sandbox_error), as under docker. In a bounded workspace (the
    default) the unmount drops whatever the run left: it passes and nothing stays. CONTROL:
    the disk's workspace removed off the run's path as before (taken for a mount), the
    same run passes and its workspace stays behind, only logged."""
    ours = workspace_prefix("run")
    if mode != "bounded":
        monkeypatch.setenv(BOUNDED_SETTING, "0")
    if mode == "control":
        monkeypatch.setattr(local_module, "_dropped_whole", lambda ws: True)
    made = LocalBackend(work)
    try:
        env = made.prepare(BARE)
        monkeypatch.setattr(removal, "MAX_ENTRIES", 20)
        if mode == "on-disk":
            with pytest.raises(SandboxError, match="could not remove the workspace"):
                run(made, env, tree, WIDE)
        else:
            result = run(made, env, tree, WIDE)
            assert classify(result) == (Outcome.PASS, None) and "wrote" in result.output_tail, result.output_tail
    finally:
        made.close()
        monkeypatch.undo()
        left = [p for p in work.workspaces.iterdir() if p.name.startswith(ours)]
        for path in left:
            remove_tree(path)
    assert len(left) == {"on-disk": 1, "bounded": 0, "control": 1}[mode]


def test_a_crashed_harness_leaves_no_cgroup_behind(work: WorkPaths):
    """A run cgroup whose harness process is gone (named `run-<pid>.<start>-…` as its
    workspace) is removed by the backend's sweep; a live process's is left alone."""
    hierarchy = cgroup._hierarchy()
    assert hierarchy is not None
    dead, live = "run-999999999.1-leftover", workspace_prefix("run") + "live"  # no process 999999999
    made = [cgroup.create(dead, Limits()), cgroup.create(live, Limits())]
    try:
        assert all((base / name).is_dir() for base in hierarchy.bases.values() for name in (dead, live))
        assert LocalBackend.sweep(work) >= 1
        assert not any((base / dead).exists() for base in hierarchy.bases.values())
        assert all((base / live).is_dir() for base in hierarchy.bases.values())
    finally:
        for group in made:
            if group is not None:
                group.remove()


#: one thread busy for 2 s of wall time; prints the CPU time it got
BUSY = ("python -c 'import time\nend = time.monotonic() + 2\nwhile time.monotonic() < end: pass\n"
        "print(\"cpu\", round(time.process_time(), 3))'")


def _cpu_seconds(output: str) -> float:
    return float(next(line for line in output.splitlines() if line.startswith("cpu ")).split()[1])


@pytest.mark.parametrize("cpus", [0.05, None])
def test_an_instances_cpus_hold_its_runs_to_a_cpu_quota(cpus, backend, env, tree):
    """Harbor's task.toml `cpus` (Limits.cpus) is a quota on the run's cgroup: a run busy
    for 2 s of wall time under 0.05 CPUs gets at most 0.1 s of CPU (+ one period's slack),
    however idle the machine. CONTROL: without a quota the same run gets far more (a share
    of a core on this two-core machine, busy or not)."""
    result = run(backend, env, tree, BUSY, cpus=cpus)
    assert classify(result) == (Outcome.PASS, None), result.output_tail
    got = _cpu_seconds(result.output_tail)
    if cpus is not None:
        assert got <= 0.25, result.output_tail
    else:
        assert got > 0.25, result.output_tail


def test_a_cpu_quota_is_the_run_cgroups_and_throttles_it():
    """The quota is written where the kernel enforces it (cpu.max, v1's cfs quota) and
    throttles a busy process in that cgroup: the kernel's own count of throttled periods.
    CONTROL: the same cgroup without `cpus` has no quota and is never throttled."""
    import subprocess

    hierarchy = cgroup._hierarchy()
    assert hierarchy is not None
    throttled = {}
    for cpus in (0.1, None):
        group = cgroup.create(workspace_prefix("run") + f"quota-{cpus}", Limits(cpus=cpus))
        assert group is not None
        try:
            folder = group.folders["unified" if group.version == 2 else "cpu"]
            quota = (folder / ("cpu.max" if group.version == 2 else "cpu.cfs_quota_us")).read_text().split()[0]
            assert quota == ({0.1: "10000", None: "max" if group.version == 2 else "-1"}[cpus])
            subprocess.run([*group.enter(), "timeout", "0.5", "sh", "-c", "while :; do :; done"], check=False)
            stat = dict(line.split() for line in (folder / "cpu.stat").read_text().splitlines())
            throttled[cpus] = int(stat["nr_throttled"])
        finally:
            group.remove()
    assert throttled[0.1] > 0 and throttled[None] == 0, throttled
