"""A run cannot tell where it is in its worker's life (issue 39): what the first and the
hundredth run of one backend instance see of their surroundings is the same, with runs
on other states (each mounting its state's image) in between.

Two signals did tell them apart, each shown by a control with its defence off:
- docker: the host's sysfs names every mounted state image's backing device
  (`/sys/class/bdi/erofs-<n>`, n a host-wide counter), now an empty tmpfs in every
  container beside `/sys/fs/erofs`;
- local: bubblewrap's `--json-status-fd` was the harness's lowest free descriptor, which
  follows how many the harness holds, and showed in /proc/1/cmdline (and moved pid 1's own
  descriptors); now the pipe is moved to one fixed number before bubblewrap starts.

What a run can still count (host-wide counters no folder mask reaches: the unique mount
id of its own mounts through statx, pipe inode numbers, /proc/stat's forks since boot) is
stated in SECURITY.md; the probe below leaves those out on purpose (pipe inode numbers are
replaced by their kind), and numbers the kernel hands out lowest-free (mount ids, device
numbers: what else the host has mounted at the moment, not a count) by their shape.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from testprism.tasks.model.benchmark_format import EnvironmentSpec
from testprism.tasks.sandbox import cgroup, layer
from testprism.tasks.sandbox.base import Limits, RunRequest, SandboxBackend
from testprism.tasks.sandbox.docker import containers
from tests.conftest import open_backend
from tests.test_docker_redteam import FINGERPRINT

BARE = EnvironmentSpec(python="3.11", packages=())
#: the run whose surroundings are compared with the first's
LAST = 100
STATES = 4
#: the folders of the host's sysfs that name devices and mounts by counters
SYSFS = ("/sys/fs/erofs", "/sys/class/bdi", "/sys/devices/virtual/bdi", "/sys/block", "/sys/devices/virtual/block")

#: FINGERPRINT's helpers (norm: what is random in every run alike replaced by its shape),
#: and what a run sees that could follow its position, printed as one JSON object
PROBE = FINGERPRINT.split("parts = {")[0] + r'''
import json

def links(pid):
    try:
        names = sorted(os.listdir(f"/proc/{pid}/fd"), key=int)
    except OSError as exc:
        return f"<{type(exc).__name__}>"
    out = []
    for name in names:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError as exc:
            target = f"<{type(exc).__name__}>"
        out.append(name + " " + re.sub(r"^(pipe|socket):\[\d+\]$", r"\1", target))
    return "\n".join(out)

def folder(path):
    try:
        return " ".join(sorted(os.listdir(path)))
    except OSError as exc:
        return f"<{type(exc).__name__}>"

parts = {
    "sysfs": "\n".join(f"{p}: {folder(p)}" for p in SYSFS),
    "pid1": read("/proc/1/cmdline"),
    # how many processes, whose child: the numbers themselves vary under docker (6 or 7 for
    # the run, by how many threads runc's Go runtime made in the new namespace first)
    "pids": f"{sum(p.isdigit() for p in os.listdir('/proc'))} processes, parent {os.getppid()}",
    "inodes": " ".join(f"{p} {os.stat(p).st_ino}" for p in ("/workspace", "/workspace/program", "/workspace/out", "/tmp")),
    "pid1_fds": links(1),
    "fds": links("self"),
    # sorted: the engine mounts its tmpfs masks of one depth (/sys/fs/erofs, /sys/class/bdi) in
    # Go's random map order, which says nothing of a run's place
    "mounts": "\n".join(sorted(read("/proc/self/mountinfo").splitlines(), key=lambda m: m.split()[3:])),
    "cgroup": read("/proc/self/cgroup"),
    "host": re.sub(r"[0-9a-f]", "x", socket.gethostname()),
    "env": "\n".join(sorted(f"{k}={v}" for k, v in os.environ.items())),
}
print("PROBE", json.dumps({name: norm(text) for name, text in parts.items()}))
'''.replace("SYSFS", repr(SYSFS))


@pytest.fixture(scope="module")
def states(work_root) -> list[Path]:
    """Finished work-area trees (build_once's `.ready` beside each): each gets an image,
    mounted afresh for every run of it."""
    trees = []
    for number in range(STATES):
        tree = work_root / "position" / f"state-{number}" / "tree"
        (tree / "pkg").mkdir(parents=True, exist_ok=True)
        (tree / "pkg" / "mod.py").write_text(f"X = {number}\n")
        (tree.parent / ".ready").touch()
        trees.append(tree)
    return trees


@pytest.fixture(scope="module")
def probe(work_root) -> Path:
    folder = work_root / "position-probe"
    folder.mkdir(exist_ok=True)
    (folder / "probe.py").write_text(PROBE)
    return folder


@pytest.fixture(params=["local", "local-inline", "docker"])
def worker(request, work, monkeypatch) -> Iterator[SandboxBackend]:
    """A backend instance of its own: one worker, from its first run on. `local-inline`:
    without run cgroups, so no launcher is parked and each run's bubblewrap is started
    inline (the status pipe moved by a shell of its own, cgroup.with_status_fd)."""
    if request.param == "local-inline":
        monkeypatch.setenv(cgroup.SETTING, "0")
    backend = open_backend(request.param.removesuffix("-inline"), work)
    assert layer.mode() == "image", "programs are not state images here: nothing is mounted between the runs"
    yield backend
    backend.close()


def _run(backend: SandboxBackend, tree: Path, probe: Path | None) -> dict[str, str] | None:
    request = RunRequest(tree=tree, suite_folder=probe, suite_files=("probe.py",) if probe else (),
                         command="python tmp/probe.py" if probe else "true",
                         environment=backend.prepare(BARE), limits=Limits(timeout_s=60.0))
    result = backend.run(request)
    assert result.exit_code == 0, result.output_tail
    if probe is None:
        return None
    line = next(line for line in result.output_tail.splitlines() if line.startswith("PROBE "))
    return json.loads(line.removeprefix("PROBE "))


def _first_and_last(backend: SandboxBackend, states: list[Path], probe: Path, last: int) -> tuple[dict, dict]:
    """What the first and the `last`th run see, both on the first state, the runs between on
    every state in turn. After the first run the harness holds a dozen more descriptors, as
    a long-lived worker comes to (its logs, its store's connections): the status pipe's
    number then lies above 9, which only bash's redirections can close."""
    first = _run(backend, states[0], probe)
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(12)]
    try:
        for number in range(last - 2):
            _run(backend, states[1 + number % (len(states) - 1)], None)
        return first, _run(backend, states[0], probe)
    finally:
        for fd in held:
            os.close(fd)


@pytest.mark.slow
def test_the_hundredth_run_sees_what_the_first_saw(worker, states, probe):
    first, hundredth = _first_and_last(worker, states, probe, LAST)
    assert hundredth == first
    assert "erofs-" not in first["sysfs"]  # no backing device of an image named
    if worker.name == "local":
        assert f" --json-status-fd {cgroup.STATUS_FD} " in first["pid1"]


def test_control_with_the_defences_off_the_position_shows(worker, states, probe, monkeypatch):
    """docker: sysfs's backing devices not masked (only /sys/fs/erofs, as before): the run's
    own image is `erofs-<n>`, n larger at each mount. local: bubblewrap told the harness's
    own number for the status pipe, as before: the number moves with what the harness holds.
    A few runs in between are enough to show it."""
    if worker.name == "local":
        monkeypatch.setattr(cgroup, "status_fd_in_run", lambda fd: fd)
    else:
        monkeypatch.setattr(containers, "HOST_COUNTERS_SYSFS", ("/sys/fs/erofs",))
    first, later = _first_and_last(worker, states, probe, 5)
    differ = {name for name in first if first[name] != later[name]}
    if worker.name == "local":  # pid 1's own descriptors move too when the pipe took a low number
        assert "pid1" in differ and differ <= {"pid1", "pid1_fds"}, (first, later)
    else:
        assert differ == {"sysfs"} and "erofs-" in later["sysfs"], (first, later)


@pytest.mark.parametrize("worker", ["local", "local-inline"], indirect=True)
def test_control_a_status_pipe_copied_but_left_open_reaches_the_run(worker, states, probe, monkeypatch):
    """The pipe is closed at the harness's number once moved: bubblewrap passes every open
    descriptor on, so a copy alone left the run holding it at that number."""
    monkeypatch.setattr(cgroup, "at_status_fd", lambda fd: "" if fd == cgroup.STATUS_FD else f"{cgroup.STATUS_FD}>&{fd}")
    first, later = _first_and_last(worker, states, probe, 5)
    assert first["fds"] != later["fds"] and first["pid1"] == later["pid1"]
