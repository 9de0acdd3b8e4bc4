"""The `local` backend: a fresh workspace per run, the command under bubblewrap.

Isolation (bubblewrap): new user, pid, network, ipc and uts namespaces (network: loopback
only, nothing reachable), and a root of its own that holds only what a run needs
(SECURITY.md): the system's directories read-only (`SYSTEM_DIRS`: /usr, /etc and the
/bin, /sbin, /lib* links or folders), the environment read-only (and the prefix of its
interpreter when that lies outside them), the run's workspace writable at `/workspace`,
a private /tmp, /var/tmp, /dev and /proc, and, for a run given a model channel, its socket
(tasks/sandbox/model_access.py); on an image's root, its /etc/hosts holds the loopback names
(tasks/sandbox/hosts.py). Nothing else of the host: not the benchmark, the
store, the work area's other states and runs, nor home folders. The sandbox dies with its
parent. Limits: the run's processes together in a cgroup of the run's own
(tasks/sandbox/cgroup.py: memory, tmpfs pages included, and processes; equal CPU weight),
entered before the sandbox starts; the workspace on a size-limited tmpfs of its own that
also holds the sandbox's /tmp, /var/tmp and /dev/shm (workspace.py `bound_workspace`); a
run that reaches either is `E` with its reason (`ExecResult.limit`). rlimits on file size
and open files, set by the sandbox's shell (`ulimit`) before the command, and where there
is no run cgroup, on address space and processes as before (per process only: the row's
`isolation` says `bubblewrap-rlimits`); a wall-clock timeout and an output bound that kill
the process tree.
When run as root, the sandbox drops to an unprivileged uid of its own (`setpriv`, before
bubblewrap starts): root ignores the process limit, and untrusted code never runs as root.

Per-run overhead against the bare command (bench/replay_overhead.py) is mostly bubblewrap
setting up namespaces and mounts: nothing on a run's path forks the (possibly large) Python
process or polls for the exit, and a bounded workspace is removed after run() returns (`_discard`).
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import shutil
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Sequence
from functools import cache
from pathlib import Path, PurePosixPath

from testprism.tasks.model.benchmark_format import EnvironmentSpec
from testprism.tasks.sandbox import cgroup, layer
from testprism.tasks.sandbox.environment import build_environment
from testprism.tasks.sandbox.image_settings import ImageSettings
from testprism.tasks.sandbox.image.binding import (
    ImageRun,
    image_run,
    image_user_ids,
    prepare_dockerfile,
    prepare_image,
)
from testprism.tasks.sandbox.hosts import loopback_hosts
from testprism.tasks.sandbox.base import (
    ExecResult,
    Limits,
    RunRequest,
    SandboxBackend,
    SandboxError,
    SandboxUnavailable,
    register,
)
from testprism.tasks.sandbox.model_access import SANDBOX_SOCKET, channel_env, sandbox_command
from testprism.tasks.sandbox.outputs import outputs_from_folder
from testprism.tasks.sandbox.process import Unkillable, run_bounded, supervise
from testprism.tasks.sandbox.report_pipe import ReportPipe
from testprism.tasks.sandbox.cgroup import Launcher, RunCgroup
from testprism.tasks.sandbox.warm import WarmProcess, WarmStates, WarmUnavailable
from testprism.tasks.sandbox.warm_admission import PytestCommand, pytest_command, script_command
from testprism.tasks.sandbox.workspace import (
    bounds_available,
    disk_exceeded,
    export_program,
    fill_workspace,
    remove_workspace,
    scratch_folders,
)
from testprism.tasks.model.workdir import WorkPaths, orphaned_workspaces, workspace_prefix

log = logging.getLogger(__name__)

#: the host directories a run sees, read-only: what an interpreter and common tools need
SYSTEM_DIRS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: where the run's workspace appears inside the sandbox (as in the docker backend)
WORKSPACE = PurePosixPath("/workspace")
UID_BASE = 200_000  # sandbox uids are UID_BASE + random: no passwd entry, no files on the host
LIMITS_FAILED = 125  # exit code when the rlimits cannot be set (the command never ran), as env(1) uses


@cache
def bubblewrap_works() -> bool:
    """Whether bwrap exists and can create its namespaces here (it cannot inside some
    containers)."""
    if not shutil.which("bwrap"):
        return False
    probe = subprocess.run(
        ["bwrap", "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "true"],
        capture_output=True, timeout=30,
    )
    return probe.returncode == 0


@register("local")
class LocalBackend(SandboxBackend):
    """Runs on this host. See the module docstring for what it guarantees."""

    def __init__(self, work: WorkPaths, *, trusted: bool = False, unsafe: bool = False,
                 images: ImageSettings | None = None) -> None:
        super().__init__(work, images=images)
        work.ensure()
        if bubblewrap_works():
            # "-rlimits": a run's memory and processes bounded per process, its disk per file
            bounded = cgroup.available() and bounds_available()
            # + how runs get their program when it is not the default image (layer.py)
            self.isolation = ("bubblewrap" if bounded else "bubblewrap-rlimits") + layer.isolation_label()
        elif trusted or unsafe:
            self.isolation = "none"
            log.warning(
                "bubblewrap is not available: running %s suites WITHOUT isolation (rlimits and timeouts only)",
                "the bundled (trusted)" if trusted else "untrusted",
            )
        else:
            raise SandboxUnavailable(
                "the local backend needs bubblewrap to run suites it did not ship: install it "
                "(Debian/Ubuntu: apt install bubblewrap; Fedora: dnf install bubblewrap), use "
                "--backend docker, or pass --unsafe-no-sandbox to run them without isolation"
            )
        self.drop_privileges = os.geteuid() == 0
        # Absolute paths, found on this process's PATH: the command's PATH starts with the
        # environment's bin/, where a package could have put a `setpriv` that would run as root.
        self.bwrap = shutil.which("bwrap") or "/usr/bin/bwrap"
        self.setpriv = shutil.which("setpriv") or "/usr/bin/setpriv"
        # Removing a workspace took 3-11 ms of each run's time here (rmdir is slow on ext4);
        # one thread does it after run() returns, in order. close() waits for it, and sweep()
        # removes what a crash left.
        self._cleaner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="local-cleanup")
        # Launchers already in a run cgroup of their own (cgroup.py: entering one waits ~10 ms
        # for the kernel), parked by one thread while runs execute, at most one per slot.
        self._parked: list[Launcher] = []
        self._parked_lock = threading.Lock()
        self._parker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="local-park")
        self._warm = WarmStates(self)

    @classmethod
    def default_concurrency(cls) -> int:
        return max(1, os.cpu_count() or 1)

    def prepare(self, environment: EnvironmentSpec) -> Path:
        if environment.image is not None:  # its root filesystem exported once: runs need no engine
            return prepare_image(environment, self.work, export=True)
        if environment.dockerfile is not None and environment.python is None and not environment.toolchains:
            return prepare_dockerfile(environment, self.work, self.images)  # the image's root, built and exported once
        return build_environment(environment, self.work, need_world_readable=self.drop_privileges)

    def close(self) -> None:
        """End the warm processes (they die with their batch); let the parked launchers go;
        wait until every finished run's workspace is gone."""
        self._warm.close()
        self._parker.shutdown(wait=True)
        with self._parked_lock:
            parked, self._parked = self._parked, []
        for launcher in parked:
            self._cleaner.submit(launcher.discard)
        self._cleaner.shutdown(wait=True)

    def _launcher(self, env: dict[str, str]) -> Launcher | None:
        """A parked launcher for this run (one parked at once for the next), or a new one
        when none is ready; None where runs get no cgroup, without bubblewrap, or with a
        variable a shell cannot export (then the run enters its cgroup inline)."""
        if self.isolation == "none" or not cgroup.available() or not cgroup.exportable(env):
            return None
        with self._parked_lock:
            ready = self._parked.pop() if self._parked else None
        try:
            self._parker.submit(self._park)
        except RuntimeError:  # closed
            pass
        return ready if ready is not None else Launcher(workspace_prefix("run") + secrets.token_hex(4), Limits())

    def _park(self) -> None:
        with self._parked_lock:
            if len(self._parked) >= self.default_concurrency():
                return
        try:
            launcher = Launcher(workspace_prefix("run") + secrets.token_hex(4), Limits())
        except OSError as exc:  # the run that needs one makes it, and fails as a sandbox error
            log.debug("could not park a launcher: %s", exc)
            return
        with self._parked_lock:
            self._parked.append(launcher)

    @classmethod
    def sweep(cls, work: WorkPaths) -> int:
        """Remove the workspaces of processes that are gone (a crash, a kill -9); those of
        live processes, a replay running beside, are left alone."""
        leftovers = orphaned_workspaces(work, "run") + orphaned_workspaces(work, "warm")
        for path in leftovers:
            layer.discard(path)
        return len(leftovers) + cgroup.sweep("run") + cgroup.sweep("warm")

    # -- one run ---------------------------------------------------------------------------

    def _command_argv(self, request: RunRequest, per_run: bool) -> list[str]:
        """`bash -c` with the rlimits set first, by the same shell that then runs the command.
        `per_run`: the run has a cgroup, which bounds its memory and processes together, so
        no per-process address-space or process limit is set (RLIMIT_AS would refuse the
        large virtual reservations of runtimes that the memory cgroup allows).

        `ulimit` is a builtin, so the limits cost no process of their own (a `prlimit`
        wrapper was an exec per run), and none of the command runs before them: bash parses
        the line, applies them, and only then reaches the command; if they cannot be set, it
        stops there. Without -S/-H both the soft and the hard limit are set, and an
        unprivileged process cannot raise a hard limit again (that takes CAP_SYS_RESOURCE in
        the initial user namespace, which the sandbox never has). Units: KiB for -v and -f.
        Same line as the command, so its line numbers in bash's messages do not move.
        """
        limits = request.limits
        per_process = ""
        if not per_run:
            nproc = limits.processes
            if not self.drop_privileges:
                # RLIMIT_NPROC counts every process of the real uid, not just this run's.
                nproc += sum(1 for p in Path("/proc").iterdir() if p.name.isdigit() and _owned(p))
            per_process = f"-v {limits.memory_mb * 1024} -u {nproc} "
        ulimit = f"ulimit {per_process}-f {limits.file_size_mb * 1024} -c 0 -n 1024 || exit {LIMITS_FAILED}"
        return ["bash", "-c", f"{ulimit}; {sandbox_command(request)}"]

    def _bwrap_argv(self, ws: Path, request: RunRequest, status_fd: int | None, extra: Sequence[str] = ()) -> list[str]:
        """A root of the sandbox's own (bwrap starts from an empty tmpfs) with only the
        mounts listed in the module docstring, and the model channel's socket when the run
        has one (tasks/sandbox/model_access.py). /tmp, /var/tmp and /dev/shm are the
        workspace's scratch folders (after `--dev`, which makes a /dev/shm of its own), so
        they share its bound. The environment (and its interpreter's prefix) is bound after
        them: the default work area, which holds it, is in /var/tmp (workdir.py), and a
        scratch folder bound later hid it (every Python run then found no `python`).
        `status_fd`: where bubblewrap finds the status pipe, cgroup.STATUS_FD whatever the
        harness's number for it (cgroup.status_fd_in_run): a run reads this command line in
        /proc/1/cmdline. `extra`: arguments a warm process's sandbox adds (tasks/sandbox/warm.py);
        it has no status pipe (`status_fd` None)."""
        environment = request.environment
        image = image_run(environment)
        if image is not None:  # the image's root instead of the host's, the program where the image has it
            root = list(_image_mounts(image, loopback_hosts(self.work)))
            shown: list[str] = []
            placed = (["--bind", str(ws / "program"), image.program] if image.program else []) + [
                "--chdir", str(image.workdir), *_image_user(image)]
        else:
            root = list(_system_mounts())
            shown = [*(a for ro in _interpreter_prefix(environment) for a in ("--ro-bind", ro, ro)),
                     "--ro-bind", str(environment), str(environment)]
            placed = ["--chdir", str(WORKSPACE / "program")]
        if request.channel is not None:
            shown += ["--ro-bind", str(request.channel), str(SANDBOX_SOCKET)]
        scratch = [a for host, inside in scratch_folders(ws) for a in ("--bind", str(host), inside)]
        for number, mount in enumerate(request.mounts):
            shown += (["--ro-bind", str(mount.host), mount.inside] if mount.host is not None
                      else ["--bind", str(_mount_scratch(ws, number)), mount.inside])
        return [
            self.bwrap, *root, "--dev", "/dev", "--proc", "/proc", *scratch, *shown,
            "--bind", str(ws), str(WORKSPACE), *placed, *extra,
            "--unshare-all", "--die-with-parent", "--new-session",
            *(["--json-status-fd", str(status_fd)] if status_fd is not None else []), "--",
        ]

    def drop_argv(self, uid: int | None) -> list[str]:
        """The argv prefix that drops to the sandbox's `uid` before bubblewrap (none when the
        harness is not root). An exec'd helper rather than Popen(user=): with a uid to set,
        Popen forks the whole Python process instead of vfork-ing, which cost 4 ms at 40 MB
        of memory and 50 ms at 340 MB; setpriv costs ~2 ms whatever the caller's size."""
        if uid is None:
            return []
        return [self.setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]

    def shown_paths(self, environment: Path) -> list[str]:
        """The host paths a run's sandbox shows at the same path: the environment and its
        interpreter's prefix (`_bwrap_argv`)."""
        return [*_interpreter_prefix(environment), str(environment)]

    def sandbox_argv(self, ws: Path, request: RunRequest, extra: Sequence[str]) -> list[str]:
        """bubblewrap's argv for a warm process of `request`'s state over the workspace `ws`."""
        return self._bwrap_argv(ws, request, None, extra)

    def _warm_route(self, request: RunRequest, env: dict[str, str]) -> tuple[WarmProcess, PytestCommand] | None:
        """The state's warm process and the run's pytest command when the run may be forked
        from it (tasks/sandbox/warm.py says which may), else None: the run is cold."""
        if not request.warm:
            return None
        command = pytest_command(request.command) or script_command(request)
        why = ("the command is not `python -m pytest ...`" if command is None
               else "not under bubblewrap with run cgroups and layered programs"
               if not (self.isolation.startswith("bubblewrap") and "-rlimits" not in self.isolation
                       and self.drop_privileges and cgroup.available() and layer.available())
               else "an image or a non-virtualenv environment"
               if image_run(request.environment) is not None or not (request.environment / "pyvenv.cfg").is_file()
               else "a channel, extra mounts or a tree export"
               if request.channel is not None or request.mounts or request.export_tree is not None else None)
        if why is None:
            assert command is not None
            try:
                return self._warm.get(request, warm_env(env, command, request.environment), command), command
            except WarmUnavailable as exc:
                why = str(exc)
        log.debug("local: run goes cold: %s", why)
        return None

    def run(self, request: RunRequest) -> ExecResult:
        if request.channel is not None and self.isolation == "none":
            # Without namespaces the run has the host's network: the channel would not be
            # its one way out, and there is no private path to put the socket at.
            raise SandboxUnavailable("the local backend gives a run a model channel only under bubblewrap")
        ws = Path(tempfile.mkdtemp(prefix=workspace_prefix("run"), dir=self.work.workspaces))
        group: RunCgroup | None = None
        launcher: Launcher | None = None
        inside = WORKSPACE if self.isolation != "none" else ws
        env = {
            "PATH": f"{request.environment / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "HOME": "/tmp", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1",
            "TESTPRISM_JUNIT": str(inside / "out" / "junit.xml"), **request.env, **channel_env(request),
        }
        image = image_run(request.environment)
        if image is not None:
            if self.isolation == "none":
                raise SandboxUnavailable("the local backend runs an image instance only under bubblewrap (its root "
                                         "filesystem is the sandbox's root)")
            env = image.variables(env)
        left: Path | None = ws  # the workspace, until removed on the run's path
        report: ReportPipe | None = None
        held: WarmProcess | None = None  # the warm process this run holds until it is done
        try:
            warm = self._warm_route(request, env)
            held = warm[0] if warm is not None else None
            launcher = self._launcher(env) if warm is None else None
            uid = (warm[0].uid if warm is not None  # the warm process's: its program layer is idmapped to it
                   else UID_BASE + secrets.randbelow(60_000) if self.drop_privileges else None)
            installed = fill_workspace(request, ws, uid, layered=True, bounded=True)
            if warm is not None and (why := warm[0].admits(request, warm[1], ws)):
                log.debug("local: run goes cold: %s", why)
                warm = None
            report = ReportPipe(ws)
            for number, mount in enumerate(request.mounts):
                if mount.host is None:  # on the workspace's bound, the run's own
                    folder = _mount_scratch(ws, number)
                    folder.mkdir(parents=True)
                    if uid is not None:
                        os.chown(folder, uid, uid)
            if launcher is not None:
                group = launcher.group
                group.set_limits(request.limits)
            else:
                group = cgroup.create(ws.name, request.limits)  # named as the workspace: swept alike
            if group is None and request.limits.cpus is not None:
                _unbounded_cpus(request.limits.cpus)
            result = self._run_in(ws, request, uid, installed, env, group, launcher, report, warm)
            if not _dropped_whole(ws):  # on the work area's disk: what the run left there may stay
                left = None
                remove_workspace(ws)  # SandboxError: this run's
            return result
        except (Unkillable, OSError) as exc:
            raise SandboxError(f"local sandbox failed: {exc}") from exc
        finally:
            if report is not None:
                report.close()
            if held is not None:
                held.release()
            self._discard(left, group, launcher)

    def _discard(self, ws: Path | None, group: RunCgroup | None, launcher: Launcher | None) -> None:
        """Remove a finished run's bounded workspace and its cgroup off the caller's path
        (inline once closed).

        Only a bounded workspace (a tmpfs of its own, workspace.py; its layer one too) is
        removed here: unmounting it drops whatever the run left, however deep, wide or
        oddly moded, so nothing of the run's can make that removal fail, and what fails
        (the harness's own unmount or empty folder) is logged for the sweep. A workspace on
        the work area's disk is removed on the run's path instead (run()), where what the
        run left there can stop the removal, which is then that run's SandboxError, as
        under docker. A bounded one removed inline instead cost each run here +1.0 ms
        median and +9 ms at the 90th percentile (bench/replay_overhead.py `--command true`,
        1,000 runs a side at load 7; the removal alone takes ~9 ms of wall time: the
        unmount's RCU wait, the rmdir of its folder on ext4)."""
        try:
            self._cleaner.submit(_remove, ws, group, launcher)
        except RuntimeError:  # closed: no cleaner left
            _remove(ws, group, launcher)

    def _run_in(self, ws: Path, request: RunRequest, uid: int | None, installed: str, env: dict[str, str],
                group: RunCgroup | None, launcher: Launcher | None, report: ReportPipe,
                warm: tuple[WarmProcess, PytestCommand] | None = None) -> ExecResult:
        drop = self.drop_argv(uid)
        command = self._command_argv(request, per_run=group is not None)
        limits = request.limits
        enter = group.enter() if group is not None else []  # as root, before setpriv and bwrap
        if warm is not None and group is not None:  # forked from its state's warm process
            process, pytest = warm
            done = process.run(ws, pytest, warm_env(env, pytest, request.environment), group, limits)
            status = json.dumps({"exit-code": done.exit_code}).encode() if done.exit_code is not None else b""
        elif launcher is not None:  # in its cgroup already: hand it the run
            argv = drop + self._bwrap_argv(ws, request, cgroup.status_fd_in_run(launcher.status_fd)) + command
            start = time.monotonic()
            try:
                done = supervise(launcher.go(argv, env, ws / "program"), start, timeout_s=limits.timeout_s,
                                 output_bytes=limits.output_bytes, tail_bytes=limits.tail_bytes)
            finally:
                status = launcher.close_status()
        elif self.isolation != "none":
            read_fd, write_fd = os.pipe()
            try:
                argv = (enter + cgroup.with_status_fd(write_fd) + drop
                        + self._bwrap_argv(ws, request, cgroup.status_fd_in_run(write_fd)) + command)
                done = run_bounded(argv, cwd=ws / "program", env=env, timeout_s=request.limits.timeout_s,
                                   output_bytes=request.limits.output_bytes, tail_bytes=request.limits.tail_bytes,
                                   pass_fds=(write_fd,))
            finally:
                os.close(write_fd)
                with os.fdopen(read_fd, "rb") as fh:
                    status = fh.read()
        if self.isolation != "none":
            limit = _limit(ws, group)
            # bwrap reports the command's exit ("exit-code") only when the command ran: a
            # sandbox whose set-up failed (a bind source it cannot reach) exits 1 after
            # "child-pid", which must not read as the suite failing. (A run the OOM killer
            # ended may have lost bwrap itself: its limit says what happened.)
            if b"exit-code" not in status and not (done.timed_out or done.output_exceeded or limit):
                raise SandboxError(f"bubblewrap did not start the command: {done.output_tail[-2000:].decode(errors='replace')}")
            exit_code = _exit_code(status, done.exit_code)
        else:
            done = run_bounded(enter + drop + command, cwd=ws / "program", env=env,
                               timeout_s=request.limits.timeout_s, output_bytes=request.limits.output_bytes,
                               tail_bytes=request.limits.tail_bytes)
            exit_code = done.exit_code
            limit = _limit(ws, group)
        if request.export_tree is not None and not (done.timed_out or done.output_exceeded):
            export_program(ws, request.export_tree)
        return ExecResult(
            exit_code=exit_code,
            duration_s=done.duration_s,
            output_tail=done.output_tail.decode("utf-8", errors="replace"),
            timed_out=done.timed_out,
            output_exceeded=done.output_exceeded,
            junit_xml=report.collected(),
            suite_patch_method=installed,
            outputs=outputs_from_folder(ws / "program", request.tree) if request.keep_outputs else None,
            limit=limit,
        )


def warm_env(env: dict[str, str], command: PytestCommand, environment: Path) -> dict[str, str]:
    """The variables a cold run's interpreter has (its shell's: the command's assignments, and
    PWD, OLDPWD (the launcher `cd`s from /: cgroup.Launcher), SHLVL (0: bash execs the command) and `_` as bash
    exports them (an entry script's `exec` leaves `_` out), for a run forked warm."""
    shell = {"PWD": str(WORKSPACE / "program"), "OLDPWD": "/", "SHLVL": "0"}
    if command.script is None:  # bash execs the command line's last command itself, and exports `_` for it
        shell["_"] = str(environment / "bin" / "python")
    return {**env, **dict(command.assignments), **shell}


@cache
def _unbounded_cpus(cpus: float) -> None:
    """Said once per quota: without a run cgroup (none on this machine, or
    $TESTPRISM_RUN_CGROUP=0) a run's `cpus` cannot be held, and its runs share the CPU."""
    log.warning("local: a run asks for at most %s CPUs, but runs get no cgroup here: not enforced", cpus)


def _mount_scratch(ws: Path, number: int) -> Path:
    """The workspace folder behind the run's `number`th Mount without a host folder."""
    return ws / "scratch" / f"mount-{number}"


def _limit(ws: Path, group: RunCgroup | None) -> str | None:
    """The run-wide limit a finished run reached, if any: its cgroup's (memory, processes),
    else its workspace filled (`disk_limit`)."""
    hit = group.limit_hit() if group is not None else None
    return hit or ("disk_limit" if disk_exceeded(ws) else None)


def _dropped_whole(ws: Path) -> bool:
    """Whether the workspace is bounded, a tmpfs of its own (workspace.py): unmounting it
    drops whatever a run left in it, so its removal can wait (`_discard`)."""
    return os.path.ismount(ws)


def _remove(ws: Path | None, group: RunCgroup | None, launcher: Launcher | None) -> None:
    """A finished run's workspace, if it still has one (mounts first, layer.discard), then
    its cgroup (with its launcher, when it had one: a run that failed before handing it
    over lets it go). A workspace that stays is logged: sweep() takes it once this process
    is gone."""
    if ws is not None:
        try:
            remove_workspace(ws)
        except SandboxError as exc:
            log.warning("local: %s", exc)
    if launcher is not None:
        launcher.discard()
    elif group is not None:
        group.remove()


def _exit_code(status: bytes, fallback: int | None) -> int | None:
    """The command's own exit code from bwrap's JSON status (bwrap's may differ)."""
    for line in status.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if "exit-code" in record:
            return int(record["exit-code"])
    return fallback


def _owned(proc_dir: Path) -> bool:
    try:
        return proc_dir.stat().st_uid == os.getuid()
    except OSError:
        return False


@cache
def _system_mounts() -> tuple[str, ...]:
    """bwrap arguments for SYSTEM_DIRS as this host has them: a merged-/usr host's /bin is
    a link (recreated as one), a folder is bound read-only, a missing one is left out."""
    args: list[str] = []
    for name in SYSTEM_DIRS:
        path = Path(name)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), name]
        elif path.is_dir():
            args += ["--ro-bind", name, name]
    return tuple(args)


def _image_user(image: ImageRun) -> list[str]:
    """bwrap arguments that run as the image's `USER` (root when it sets none, as `docker
    run` does) inside the run's user namespace: the sandbox's unprivileged uid mapped to it,
    so `id`, the workspace's owner and the image's own /etc/passwd agree as under the
    benchmark's harness, while outside it stays that uid, and bubblewrap keeps no capability
    (uid 0 inside is no privilege: the root stays read-only, the host's files foreign).
    Nothing when the USER names no user of the image (`image_user_ids` logs it)."""
    ids = image_user_ids(image.root, image.image.user)
    return [] if ids is None else ["--unshare-user", "--uid", str(ids[0]), "--gid", str(ids[1])]


@cache
def _image_mounts(image: ImageRun, hosts: Path) -> tuple[str, ...]:
    """bwrap arguments that show the image's exported root filesystem as the sandbox's
    root, read-only, entry by entry on bwrap's own tmpfs root (so the mount points a run
    needs, /workspace among them, can be made there whatever the image holds): a folder
    bound, a link recreated as the link it is (it resolves inside the sandbox), a file
    bound; the program's top folder is bound too, the state's tree then over the program.
    /proc, /dev, /tmp and the rest of a run's own mounts go over these as for any run.
    The image's /etc/hosts gets `hosts` over it, as the engine mounts its own over it in a
    container (tasks/sandbox/hosts.py)."""
    root = Path(image.root)
    args: list[str] = []
    for entry in sorted(root.iterdir()):
        inside = f"/{entry.name}"
        if inside in ("/proc", "/dev", str(WORKSPACE)):
            continue
        if entry.is_symlink():
            args += ["--symlink", os.readlink(entry), inside]
        elif entry.is_dir() or entry.is_file():
            args += ["--ro-bind", str(entry), inside]
    etc = root / "etc"
    if etc.is_dir() and not etc.is_symlink() and (etc / "hosts").is_file() and not (etc / "hosts").is_symlink():
        args += ["--ro-bind", str(hosts), "/etc/hosts"]
    return tuple(args)


@cache
def _interpreter_prefix(environment: Path) -> tuple[str, ...]:
    """The installation prefix of the environment's interpreter when it lies outside
    SYSTEM_DIRS (a pyenv, /opt/python3.8): a venv only links to it (pyvenv.cfg `home`)."""
    cfg = environment / "pyvenv.cfg"
    if not cfg.is_file():
        return ()
    for line in cfg.read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            prefix = Path(value.strip()).resolve().parent
            inside = any(prefix.is_relative_to(Path(d).resolve()) for d in SYSTEM_DIRS if Path(d).exists())
            return () if inside else (str(prefix),)
    return ()
