"""A run's cgroup: its processes together held to the run's memory and process limits.

Per-process rlimits bound each process, not a run: a suite held 6.3 GiB across processes
and 6.5 GiB through its tmpfs folders under a 4 GiB `RLIMIT_AS` (issue 26). A cgroup per
run bounds them all at once, and the harness is root, so it can make one:

- **memory**: `Limits.memory_mb` for every page the run's processes charge, the tmpfs
  pages they write included (checked on this kernel: `dd` of 400 MiB into a tmpfs under a
  256 MiB limit was OOM-killed at 256 MiB); swap may not extend it. Over the limit the
  kernel's OOM killer kills inside the run only, and the run is `E`/`memory_limit`.
- **processes**: `Limits.processes` tasks at once (`pids.max`); a fork refused for it
  makes the run `E`/`process_limit`.
- **CPU**: each run a cgroup of the default weight, so runs share the CPU as equals
  however many threads one of them starts; a run with `Limits.cpus` (Harbor's task.toml
  `cpus`) is also held to that many CPUs' time per period (`cpu.max`, v1's CFS quota).

Where (`_hierarchy`, probed once per process): cgroup v2 when its unified hierarchy has
the memory and pids controllers, else v1 with memory and pids mounted (cpu where mounted).
Run cgroups are children of the harness's own cgroup (never above it, so whatever bounds
the harness, a container's or a unit's limit, bounds its runs too), and peers of its
processes rather than children of one folder of their own: under CPU contention a folder
would give all the runs together the weight of one task. v2 lets only leaves hold
processes: when the harness's cgroup holds processes (it does unless it is the root),
every process of it is first moved into a leaf, `testprism-harness`, and the controllers
are then enabled for the children. A second harness process that finds itself in that
leaf uses its parent. Without either hierarchy,
or when `$TESTPRISM_RUN_CGROUP=0` (the tests' control, the benchmark's arm), there is no
run cgroup and the caller keeps per-process rlimits.

A run's processes enter its cgroup before any of them runs untrusted code: a root shell
writes its own pid into the cgroup, then execs the rest (`setpriv`, bubblewrap).
A hook in Popen (preexec_fn) would instead make Popen fork the whole, possibly large,
Python process rather than vfork it (tasks/sandbox/local.py). Entering a cgroup is cheap
in CPU but waits for an RCU grace period (the kernel's cgroup_threadgroup_rwsem): +10 ms
per run measured here, twice the budget, when runs come tens of milliseconds apart. So the
entry happens ahead of the run: a `Launcher` is that shell, started for the next run while
the current one executes, already in a fresh cgroup and parked on its stdin until it is
handed the run's command (builtins only: `cd`, `export`, `exec`); `enter()` is the inline
form for a run that finds none parked. The cgroup is named as its run's workspace (`run-<pid>.<start>-…`),
so `sweep` removes those of a harness process that is gone, as workspaces are.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from testprism.storage.owner import alive
from testprism.tasks.sandbox.base import Limits

log = logging.getLogger(__name__)

#: `0` turns run cgroups off (per-process rlimits only): the tests' control and a bench arm
SETTING = "TESTPRISM_RUN_CGROUP"
#: cgroup v2: the leaf the harness's processes move into, so its parent may have children
HARNESS_LEAF = "testprism-harness"
#: the exit status of `enter()` when the run cannot enter its cgroup (nothing else ran)
ENTER_FAILED = 125
#: the CFS period a run's CPU quota is a share of (the kernel's default, 100 ms)
CFS_PERIOD_US = 100_000
#: how long `remove` keeps killing what is left of a run before leaving it to `sweep`
REMOVE_WITHIN_S = 5.0
#: the descriptor a run's first process (bubblewrap) gets the status pipe's write end at,
#: whatever number the harness holds it at: bubblewrap names it in its command line, which
#: a run reads in /proc/1/cmdline, and the harness's lowest free descriptor (what os.pipe
#: gives) follows how many it holds, which grows and shrinks over a worker's life
STATUS_FD = 3
#: the shell that moves it there (dash's redirections take single-digit descriptors only)
BASH = shutil.which("bash") or "/bin/bash"


@dataclass(frozen=True)
class _Hierarchy:
    version: int  # 1 or 2
    #: where run cgroups are made: v2 one folder ("unified"); v1 one per controller
    bases: dict[str, Path]


class RunCgroup:
    """One run's cgroup (one folder in v2, one per controller in v1), made with its limits."""

    def __init__(self, hierarchy: _Hierarchy, name: str, limits: Limits) -> None:
        self.version = hierarchy.version
        self.folders = {controller: base / name for controller, base in hierarchy.bases.items()}
        memory = str(limits.memory_mb * 1024 * 1024)
        try:
            for folder in self.folders.values():
                folder.mkdir()
            if self.version == 2:
                folder = self.folders["unified"]
                _write(folder / "memory.max", memory)
                _write_if_present(folder / "memory.swap.max", "0")
                _write(folder / "pids.max", str(limits.processes))
                _write_if_present(folder / "cpu.weight", "100")
            else:
                _write(self.folders["memory"] / "memory.limit_in_bytes", memory)
                _write_if_present(self.folders["memory"] / "memory.memsw.limit_in_bytes", memory)
                _write(self.folders["pids"] / "pids.max", str(limits.processes))
                if "cpu" in self.folders:
                    _write(self.folders["cpu"] / "cpu.shares", "1024")
            self._set_cpus(limits.cpus)
        except BaseException:
            self.remove()
            raise

    def _set_cpus(self, cpus: float | None) -> None:
        """The run's CPU quota: `cpus` CPUs' time per CFS period, or none. A quota asked for
        where the cpu controller is not available to run cgroups is refused (OSError), never
        dropped: the run would otherwise use more than its instance allows."""
        quota = -1 if cpus is None else max(1000, round(cpus * CFS_PERIOD_US))
        folder = self.folders.get("unified" if self.version == 2 else "cpu")
        name = "cpu.max" if self.version == 2 else "cpu.cfs_quota_us"
        if folder is None or not (folder / name).exists():
            if cpus is None:
                return
            raise OSError(errno.ENOTSUP, f"a quota of {cpus} CPUs, but the cpu controller is not available to run cgroups")
        if self.version == 2:
            _write(folder / name, f"{'max' if quota < 0 else quota} {CFS_PERIOD_US}")
        else:
            _write(folder / "cpu.cfs_period_us", str(CFS_PERIOD_US))
            _write(folder / name, str(quota))

    def set_limits(self, limits: Limits) -> None:
        """Change the memory, process and CPU limits (a parked launcher's cgroup was made with the
        defaults): writing a limit moves no process, so it costs no grace period."""
        memory = str(limits.memory_mb * 1024 * 1024)
        self._set_cpus(limits.cpus)
        if self.version == 2:
            _write(self.folders["unified"] / "memory.max", memory)
            _write(self.folders["unified"] / "pids.max", str(limits.processes))
            return
        memsw = self.folders["memory"] / "memory.memsw.limit_in_bytes"
        # memsw may never be below the memory limit: raise in the order that keeps it so
        order = [self.folders["memory"] / "memory.limit_in_bytes", memsw]
        if memsw.exists() and int(memsw.read_text()) < int(memory):
            order.reverse()
        for path in order:
            _write_if_present(path, memory)
        _write(self.folders["pids"] / "pids.max", str(limits.processes))

    def enter(self) -> list[str]:
        """The argv prefix that puts the command into this cgroup, then execs it: a root
        `/bin/sh` writes its own pid into every `cgroup.procs`, and exits ENTER_FAILED, the
        command never started, if one write fails."""
        procs = [str(folder / "cgroup.procs") for folder in self.folders.values()]
        writes = " && ".join(f'echo $$ > "${i}"' for i in range(1, len(procs) + 1))
        return ["/bin/sh", "-c", f'{writes} || exit {ENTER_FAILED}; shift {len(procs)}; exec "$@"', "sh", *procs]

    def limit_hit(self) -> str | None:
        """The run-wide limit the run reached, a model.outcome LIMIT_REASONS value: the
        OOM killer killed in it (`memory_limit`), or a fork was refused (`process_limit`)."""
        if self.version == 2:
            memory_events, pids_events = self.folders["unified"] / "memory.events", self.folders["unified"] / "pids.events"
        else:
            memory_events, pids_events = self.folders["memory"] / "memory.oom_control", self.folders["pids"] / "pids.events"
        if _counter(memory_events, "oom_kill") > 0:
            return "memory_limit"
        if _counter(pids_events, "max") > 0:
            return "process_limit"
        return None

    def remove(self) -> None:
        """Kill whatever is left in the cgroup and remove it; what will not go within
        REMOVE_WITHIN_S is left to `sweep` (logged)."""
        _remove(list(self.folders.values()), self.version)


class Launcher:
    """A root bash already in a new run cgroup (named `name`), parked until `go`. bash, not
    /bin/sh: dash cannot close a descriptor numbered 10 or more (`at_status_fd`); it starts
    while an earlier run executes, so its slower start is off the runs' path.

    Started with what does not depend on the run: no variables, `/` as its folder, its
    stdout and stderr one pipe, a session of its own, and the write end of a status pipe
    passed (`status_fd`, the harness's number; `go` moves it to STATUS_FD, for bubblewrap's
    `--json-status-fd`). It enters the cgroup first (exit ENTER_FAILED if it cannot, before
    reading anything), then sources its stdin: `go` writes the run's folder, variables and
    argv there as a script of builtins and closes it. A launcher whose harness dies reads
    end-of-file and exits."""

    def __init__(self, name: str, limits: Limits) -> None:
        hierarchy = _hierarchy()
        if hierarchy is None:
            raise OSError(errno.ENOTSUP, "no cgroup hierarchy for run cgroups")
        self.group = RunCgroup(hierarchy, name, limits)
        self.status_read, self.status_fd = os.pipe()
        try:
            procs = [str(folder / "cgroup.procs") for folder in self.group.folders.values()]
            writes = " && ".join(f'echo $$ > "${i}"' for i in range(1, len(procs) + 1))
            self.proc = subprocess.Popen(
                [BASH, "-c", f"{writes} || exit {ENTER_FAILED}; . /dev/stdin", "bash", *procs],
                cwd="/", env={}, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                start_new_session=True, pass_fds=(self.status_fd,),
            )
        except BaseException:
            self.discard()
            raise

    def go(self, argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[bytes]:
        """Hand the launcher its run: it `cd`s to `cwd`, exports `env` and execs `argv` with
        stdin from /dev/null and the status pipe at STATUS_FD. Returns its process (the
        run's first)."""
        assert self.proc.stdin is not None
        script = (f"cd {shlex.quote(str(cwd))} || exit {ENTER_FAILED}\n"
                  + "".join(f"export {name}={shlex.quote(value)}\n" for name, value in env.items())
                  + "exec " + " ".join(shlex.quote(a) for a in argv) + f" </dev/null {at_status_fd(self.status_fd)}\n")
        try:
            self.proc.stdin.write(script.encode())
        finally:
            self.proc.stdin.close()
        return self.proc

    def close_status(self) -> bytes:
        """Close the harness's copy of the status pipe's write end and read what was written."""
        os.close(self.status_fd)
        self.status_fd = -1
        read, self.status_read = self.status_read, -1
        with os.fdopen(read, "rb") as fh:
            return fh.read()

    def discard(self) -> None:
        """Never used: let it go (end of input: it exits), its pipes and its cgroup with it."""
        proc = getattr(self, "proc", None)
        if proc is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        for fd in (self.status_read, self.status_fd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.group.remove()


def status_fd_in_run(fd: int) -> int:
    """The descriptor the run's first process holds the harness's status pipe `fd` at:
    STATUS_FD, whatever `fd` is."""
    return STATUS_FD


def at_status_fd(fd: int) -> str:
    """bash redirections that move descriptor `fd` to `status_fd_in_run(fd)` for the command
    they end (nothing when it is there already). Closed at `fd`, not only copied: bubblewrap
    passes every open descriptor on to the run. A Popen child holds only 0-2 and what it was
    passed, and bash keeps its own descriptors at 10 and above, so STATUS_FD is free to
    take."""
    inside = status_fd_in_run(fd)
    return "" if fd == inside else f"{inside}>&{fd} {fd}>&-"


def with_status_fd(fd: int) -> list[str]:
    """The argv prefix that execs the rest with descriptor `fd` moved to `status_fd_in_run(fd)`
    (nothing when it is there already): for a run started without a launcher."""
    moves = at_status_fd(fd)
    return [BASH, "-c", f'exec "$@" {moves}', "bash"] if moves else []


def exportable(env: dict[str, str]) -> bool:
    """Whether a launcher's `export` can set every variable (a shell name each)."""
    return all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) for name in env)


def available() -> bool:
    """Whether runs get a cgroup: not turned off (`$TESTPRISM_RUN_CGROUP=0`, read at every
    call, so one process can measure both ways) and a usable hierarchy here."""
    return os.environ.get(SETTING, "1") != "0" and _hierarchy() is not None


def create(name: str, limits: Limits) -> RunCgroup | None:
    """A new cgroup `name` with `limits`, or None where runs get none (`available`).
    Raises OSError when it cannot be made (the run then fails as a sandbox error)."""
    if not available():
        return None
    hierarchy = _hierarchy()
    assert hierarchy is not None
    return RunCgroup(hierarchy, name, limits)


def sweep(kind: str) -> int:
    """Remove the run cgroups (named `<kind>-<pid>.<start>-…`) of harness processes that
    are gone; those of live ones are left alone. Returns how many runs' cgroups went."""
    hierarchy = _hierarchy() if os.environ.get(SETTING, "1") != "0" else None
    if hierarchy is None:
        return 0
    names: set[str] = set()
    for base in hierarchy.bases.values():
        with contextlib.suppress(OSError):
            names |= {p.name for p in base.iterdir() if p.is_dir() and p.name.startswith(f"{kind}-")}
    gone = sorted(n for n in names if not alive(n.removeprefix(f"{kind}-").partition("-")[0]))
    for name in gone:
        _remove([base / name for base in hierarchy.bases.values() if (base / name).is_dir()], hierarchy.version)
    return len(gone)


# -- the hierarchy ------------------------------------------------------------------------------


@functools.cache
def _hierarchy() -> _Hierarchy | None:
    """Where this process makes run cgroups, set up once; None (one warning) where neither
    cgroup v2 nor v1 offers memory and pids controllers it may use."""
    mounts = _cgroup_mounts()
    own = _own_cgroups()
    problems = []
    for setup in (_v2, _v1):
        try:
            found = setup(mounts, own)
        except OSError as exc:
            problems.append(f"{setup.__name__}: {exc}")
            continue
        if isinstance(found, _Hierarchy):
            log.debug("run cgroups: v%d under %s", found.version, ", ".join(map(str, found.bases.values())))
            return found
        problems.append(f"{setup.__name__}: {found}")
    log.warning("no cgroup per run (%s): a run's memory and processes are bounded per process only (rlimits)",
                "; ".join(problems))
    return None


def _cgroup_mounts() -> list[tuple[str, Path, str, set[str]]]:
    """(filesystem type, mount point, root of the mount, super options) of every cgroup mount."""
    found = []
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            fields = line.split()
            sep = fields.index("-")
            fstype, options = fields[sep + 1], set(fields[sep + 3].split(","))
            if fstype in ("cgroup", "cgroup2"):
                found.append((fstype, Path(_unescape(fields[4])), _unescape(fields[3]), options))
    return found


def _own_cgroups() -> dict[str, str]:
    """This process's cgroup path per v1 controller, and under "" its v2 path."""
    own = {}
    with open("/proc/self/cgroup") as fh:
        for line in fh:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for controller in controllers.split(",") if controllers else [""]:
                own[controller] = path
    return own


def _under(point: Path, root: str, path: str) -> Path | None:
    """The folder of cgroup `path` in a mount of the hierarchy's `root` at `point`."""
    rel = os.path.relpath(path, root)
    return None if rel.startswith("..") else Path(os.path.normpath(point / rel))


def _v2(mounts: list[tuple[str, Path, str, set[str]]], own: dict[str, str]) -> _Hierarchy | str:
    unified = next(((point, root) for fstype, point, root, _ in mounts if fstype == "cgroup2"), None)
    if unified is None or "" not in own:
        return "no cgroup2 mount"
    folder = _under(unified[0], unified[1], own[""])
    if folder is None:
        return f"own cgroup {own['']} is outside the cgroup2 mount"
    wanted = [c for c in ("memory", "pids", "cpu") if c in (folder / "cgroup.controllers").read_text().split()]
    if not {"memory", "pids"} <= set(wanted):
        return "the memory and pids controllers are not available to this process's cgroup"
    if folder.name == HARNESS_LEAF:  # another harness process moved us here
        folder = folder.parent
    if set(wanted) - set((folder / "cgroup.subtree_control").read_text().split()):
        if folder != unified[0]:  # not the root: no processes may stay beside child cgroups
            _move_all(folder, folder / HARNESS_LEAF)
        _write(folder / "cgroup.subtree_control", " ".join(f"+{c}" for c in wanted))
    return _Hierarchy(2, {"unified": folder})


def _move_all(folder: Path, leaf: Path) -> None:
    """Move every process of `folder` into `leaf` (new ones may appear while it does)."""
    leaf.mkdir(exist_ok=True)
    for _ in range(100):
        pids = (folder / "cgroup.procs").read_text().split()
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):  # exited meanwhile
                _write(leaf / "cgroup.procs", pid)
    raise OSError(errno.EBUSY, f"{folder}: processes kept appearing while moving them into {leaf.name}")


def _v1(mounts: list[tuple[str, Path, str, set[str]]], own: dict[str, str]) -> _Hierarchy | str:
    bases = {}
    for controller in ("memory", "pids", "cpu"):
        mount = next(((point, root) for fstype, point, root, opts in mounts if fstype == "cgroup" and controller in opts),
                     None)
        folder = _under(*mount, own[controller]) if mount is not None and controller in own else None
        if folder is None:
            if controller == "cpu":
                continue
            return f"no usable v1 {controller} hierarchy"
        if not os.access(folder, os.W_OK):
            return f"cannot make cgroups in {folder}"
        bases[controller] = folder
    return _Hierarchy(1, bases)


# -- small helpers ------------------------------------------------------------------------------


def _write(path: Path, value: str) -> None:
    with open(path, "w") as fh:
        fh.write(value)


def _write_if_present(path: Path, value: str) -> None:
    """Write where the kernel has the file (swap accounting, the cpu controller may be off)."""
    with contextlib.suppress(FileNotFoundError):
        _write(path, value)


def _counter(path: Path, key: str) -> int:
    """A `key value` line of a cgroup events file (0 when the file or the line is missing)."""
    try:
        text = path.read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            return int(value)
    return 0


def _unescape(field: str) -> str:
    """mountinfo's octal escapes (space, tab, newline, backslash) undone."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _remove(folders: list[Path], version: int) -> None:
    deadline = time.monotonic() + REMOVE_WITHIN_S
    while folders:
        for folder in list(folders):
            try:
                folder.rmdir()
                folders.remove(folder)
            except FileNotFoundError:
                folders.remove(folder)
            except OSError as exc:
                if exc.errno != errno.EBUSY:
                    raise
                _kill_all(folder, version)
        if folders and time.monotonic() > deadline:
            log.warning("run cgroup %s: processes still in it after %.0f s; left for the next sweep",
                        folders[0], REMOVE_WITHIN_S)
            return
        if folders:
            time.sleep(0.01)


def _kill_all(folder: Path, version: int) -> None:
    """SIGKILL every process in the cgroup: `cgroup.kill` (v2, Linux 5.14+), else each pid
    through a pidfd taken while it is still in the cgroup, so a reused pid is never hit."""
    if version == 2 and (folder / "cgroup.kill").exists():
        _write(folder / "cgroup.kill", "1")
        return
    try:
        pids = (folder / "cgroup.procs").read_text().split()
    except FileNotFoundError:
        return
    for pid in pids:
        try:
            pidfd = os.pidfd_open(int(pid))
        except OSError:  # gone already
            continue
        try:
            if pid in (folder / "cgroup.procs").read_text().split():
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        except OSError:
            pass
        finally:
            os.close(pidfd)
