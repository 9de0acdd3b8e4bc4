"""Warm states (issue 41): a Python run cloned from its state's warmed, frozen interpreter
instead of started cold, under the `local` backend, opt-in (`RunRequest.warm`, replay's
`--warm`, on any benchmark: tasks/replay/runs.py `warm_route`).

Of a real sympy run, 0.14 s is the interpreter and pytest's import, 1.26 s the program's
import and 1.07 s the tests: the first two are the same for every suite run on one state.
So, per state (program tree + environment + the variables its runs get), one warm process
is started inside that state's own sandbox (tasks/sandbox/warm_boot.py: pytest and the
program's top-level packages imported, no test ever run there) and then frozen for good
(tasks/sandbox/inject.py): it has run the program's import-time code, so nothing of it may
run again. Each admitted run is a clone of it made by system calls the harness injects, and
set up the same way before any instruction of its own runs: its own workspace (the same
fill as a cold run's: layer, bounded tmpfs, /tmp), its own mount, pid, network, IPC, UTS,
and cgroup namespaces, its own cgroup with the run's limits, no capabilities, the
keyring calls denied, the run's rlimits and descriptors. A warm process holding what a
clone would share with the others (a thread, a shared mapping, a descriptor, a mount, a
process its sandbox did not have before the import) is refused at the freeze: its state
runs cold. The design, what it holds and what it does not are in SECURITY.md ("Warm
states"); what it costs and saves in docs/performance.md.

Which runs are warm: tasks/sandbox/warm_admission.py. Only a unit's first attempt is warm: its confirmation and retries start cold
(tasks/execution/batch.py `Environments.judged`), since a warm run's string-hash seed is
its warm process's, the same for every run of the state.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import secrets
import select
import socket
import struct
import subprocess
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from testprism.tasks.model.workdir import WorkPaths, workspace_prefix
from testprism.tasks.sandbox import cgroup, inject, layer, warm_clone
from testprism.tasks.sandbox.base import Limits, RunRequest, SandboxError
from testprism.tasks.sandbox.cgroup import RunCgroup
from testprism.tasks.sandbox.inject import Tracee, Tracer
from testprism.tasks.sandbox.layer import _MS_BIND, _MS_PRIVATE, _MS_REC, _MS_SHARED, _mount
from testprism.tasks.sandbox.process import Bounded, supervise
from testprism.tasks.sandbox.warm_admission import (
    PytestCommand,
    import_order_risk,
    packages_of,
    script_text,
    suite_sources,
)
from testprism.tasks.sandbox.warm_clone import HANDOFF
from testprism.tasks.sandbox.workspace import SCRATCH, fill_workspace


class LocalBackend(Protocol):
    """What a warm state needs of the backend that starts it (tasks/sandbox/local.py's): its
    work area, the paths its sandboxes show, the uid drop and bubblewrap's argv. A protocol,
    so that warm.py does not import local.py, which imports it."""

    work: WorkPaths

    def shown_paths(self, environment: Path) -> list[str]: ...

    def drop_argv(self, uid: int | None) -> list[str]: ...

    def sandbox_argv(self, ws: Path, request: RunRequest, extra: Sequence[str]) -> list[str]: ...

log = logging.getLogger(__name__)

#: how many warm processes a backend keeps at once (the least recently used goes first):
#: each holds its program's imported memory
KEEP = 8
#: a warm process refused when its import left it holding what its clones would share
#: (False is tests/test_warm.py's control: a shared page counts the runs)
CHECK_AT_FREEZE = True
_BOOT = (Path(__file__).parent / "warm_boot.py").read_text()


class WarmUnavailable(Exception):
    """This run or this state takes the cold route: the reason is logged at debug level."""


class WarmProcess:
    """One state's warm process, frozen once it has imported, and the host side of its
    sandbox (module docstring)."""

    def __init__(self, backend: LocalBackend, request: RunRequest, env: dict[str, str]) -> None:
        self.backend = backend
        self.uid = 200_000 + secrets.randbelow(60_000)
        self.env = env
        self.environment = request.environment
        #: what the sandbox shows at a path under a scratch folder: held over the run's own
        self.keep = [p for p in backend.shown_paths(request.environment)
                     if any(Path(p).is_relative_to(inside) for _, inside in SCRATCH)]
        self.packages = packages_of(request.tree)
        self.preloaded: list[str] = []
        #: runs holding it (`acquire`), and whether it goes once they are done (`retire`)
        self._users = 0
        self._retired = False
        self._closed = False
        self._users_lock = threading.Lock()
        work = backend.work.workspaces
        self.ws = Path(tempfile.mkdtemp(prefix=workspace_prefix("warm"), dir=work))
        self.handoff = Path(tempfile.mkdtemp(prefix=workspace_prefix("warm") + "handoff-", dir=work))
        self.group: RunCgroup | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.control: socket.socket | None = None
        #: the frozen warm process (tasks/sandbox/inject.py), and the descriptor it reads requests on
        self.template: Tracee | None = None
        self.control_fd = -1
        self.read_only_flags: dict[str, int] = {}
        try:
            self._start(request)
        except BaseException:
            self.close()
            raise

    def _start(self, request: RunRequest) -> None:
        if why := inject.available():
            raise WarmUnavailable(why)
        fill_workspace(RunRequest(tree=request.tree, suite_folder=None, suite_files=(), command="",
                                  environment=request.environment, limits=request.limits),
                       self.ws, self.uid, layered=True, bounded=True)
        # the hand-off folder: a mount of its own with shared propagation, so that what the
        # harness mounts in it later appears inside the warm sandbox (bubblewrap binds it as a slave)
        os.chmod(self.handoff, 0o711)  # the warm sandbox's uid passes through it; it lists nothing
        _mount(str(self.handoff), self.handoff, None, _MS_BIND, None)
        _mount(None, self.handoff, None, _MS_PRIVATE, None)
        _mount(None, self.handoff, None, _MS_SHARED, None)
        self.group = cgroup.create(self.ws.name, request.limits)
        if self.group is None:
            raise WarmUnavailable("no run cgroups")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.control = ours
        self.control_fd = theirs.fileno()
        argv = (self.group.enter() + self.backend.drop_argv(self.uid)
                + self.backend.sandbox_argv(self.ws, request, ["--bind", str(self.handoff), HANDOFF,
                                                              "--cap-add", "CAP_SYS_ADMIN", "--cap-add",
                                                              "CAP_NET_ADMIN", "--cap-add", "CAP_SETPCAP"])
                + ["python", "-c", _BOOT, str(theirs.fileno()), json.dumps(self.packages)])
        try:
            self.proc = subprocess.Popen(argv, cwd=self.ws / "program", env=self.env, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                         start_new_session=True, pass_fds=(theirs.fileno(),))
        finally:
            theirs.close()
        ours.settimeout(request.limits.timeout_s)
        try:
            message, ancillary, _, _ = ours.recvmsg(64, socket.CMSG_SPACE(12))
            if message != b"booted":
                raise WarmUnavailable("the warm process did not start")
            pid = next(struct.unpack("3i", data[:12])[0] for level, kind, data in ancillary
                       if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS)
            clean = self._outside(pid)  # what it holds before the program ran: compared at the freeze
            ours.send(b"go")
            ready = json.loads(ours.recv(1 << 24) or b'{"error": "the warm process ended"}')
        except (TimeoutError, ValueError, StopIteration) as exc:
            raise WarmUnavailable(f"the warm process did not report: {exc}") from exc
        ours.settimeout(None)
        if "error" in ready:
            raise WarmUnavailable(f"the program's import failed in the warm process: {ready['error']}")
        if ready["plugins"]:
            raise WarmUnavailable(f"pytest plugins installed ({', '.join(ready['plugins'])}) load before the "
                                  "program in a cold run")
        self.template = Tracer.shared().call(lambda: self._freeze(pid, clean))
        log.debug("warm: %s frozen after importing %s", self.ws.name, ", ".join(self.packages) or "pytest only")
        program = "/workspace/program/"
        # the text of what it imported, read from the state's own tree (never from the sandbox),
        # and only there: the names come from a process that ran the program's code
        tree = request.tree.resolve()
        files = [(tree / f.removeprefix(program)).resolve() for f in ready["files"] if f.startswith(program)]
        self.preloaded = [f.read_text(errors="replace") for f in files if f.is_relative_to(tree) and f.is_file()]

    def _outside(self, pid: int) -> dict[str, object]:
        """What the warm process holds that a clone of it would share with the others: its
        descriptors, mounts, root, seccomp filters, and the processes of its sandbox."""
        fds = {}
        for name in os.listdir(f"/proc/{pid}/fd"):
            try:
                fds[name] = os.readlink(f"/proc/{pid}/fd/{name}")
            except OSError:
                fds[name] = "?"
        status = Path(f"/proc/{pid}/status").read_text().splitlines()
        assert self.group is not None
        return {
            "namespaces": {name: os.readlink(f"/proc/{pid}/ns/{name}") for name in sorted(os.listdir(f"/proc/{pid}/ns"))},
            "descriptors": fds,
            "mounts": Path(f"/proc/{pid}/mountinfo").read_text(),
            "root": os.readlink(f"/proc/{pid}/root"),
            "seccomp": [line for line in status if line.startswith(("Seccomp", "NoNewPrivs"))],
            "processes": sorted((folder / "cgroup.procs").read_text().split()
                                for folder in self.group.folders.values()),
        }

    def _freeze(self, pid: int, clean: dict[str, object]) -> Tracee:
        """Stop the warm process for good (in the tracer's thread), then refuse it when a
        clone of it would share anything with the others: a thread, a shared mapping, a
        descriptor, mount, root, filter or process the clean process did not have."""
        template = Tracee.seize(pid)
        try:
            threads = os.listdir(f"/proc/{pid}/task")
            if len(threads) != 1:
                raise WarmUnavailable(f"its import left {len(threads)} threads")
            if CHECK_AT_FREEZE:
                shared = _writable_shared_mappings(Path(f"/proc/{pid}/smaps").read_text())
                if shared:
                    raise WarmUnavailable(f"its import mapped shared memory ({', '.join(sorted(set(shared)))})")
                if Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
                    raise WarmUnavailable("its import left a child process")
                now = self._outside(pid)
                for what, before in clean.items():
                    if now[what] != before:
                        raise WarmUnavailable(f"its import changed its {what}")
            mounts = Path(f"/proc/{pid}/mountinfo").read_text().splitlines()
            self.read_only_flags = {path: warm_clone.locked_flags(mounts, path) for path in warm_clone.READ_ONLY}
            return template
        except BaseException:
            warm_clone.end(template)  # refused: it ends here, reaped by the thread that traces it
            raise

    def admits(self, request: RunRequest, command: PytestCommand, ws: Path) -> str | None:
        """Why this filled run must go cold on this state, or None (module docstring)."""
        if command.script is not None and script_text(request, ws / "program") != script_text(request):
            return "the suite's test patch changed its entry script"
        return import_order_risk(suite_sources(request, ws / "program"), self.packages, self.preloaded)

    def run(self, ws: Path, command: PytestCommand, env: dict[str, str], group: RunCgroup,
            limits: Limits) -> Bounded:
        """Clone the run from the frozen warm process into its sandbox over the filled
        workspace `ws`, in `group`, and supervise it as any run (process.supervise)."""
        token = secrets.token_hex(8)
        handed = self.handoff / token
        handed.mkdir()
        papers = self.handoff / f"{token}.d"  # the run's request, opened by its pid 1 at birth
        papers.mkdir(mode=0o711)
        junit = env["TESTPRISM_JUNIT"]
        request = json.dumps({
            "env": env,
            "argv": [self.pytest_main, *(a.replace("\0", junit) for a in command.arguments)],
            "orig_argv": ["python", "-m", "pytest", *(a.replace("\0", junit) for a in command.arguments)],
        }).encode()
        (papers / "request").write_bytes(request)
        os.chmod(papers / "request", 0o444)
        try:
            _mount(str(ws), handed, None, _MS_BIND | _MS_REC, None)
            order = warm_clone.CloneOrder(token=token, handed=handed, group=group, rlimits=_rlimits(limits),
                                          keep=self.keep, read_only_flags=self.read_only_flags,
                                          control_fd=self.control_fd)
            pid, out, status = Tracer.shared().call(lambda: warm_clone.clone_run(self.template, order))
        except inject.InjectError as exc:
            raise SandboxError(f"the warm run did not start: {exc}") from exc
        finally:
            layer.unmount_under(handed)
            handed.rmdir()
            (papers / "request").unlink(missing_ok=True)
            papers.rmdir()
        stdout = os.fdopen(out, "rb")
        try:
            return supervise(_WarmChild(pid, stdout, status), time.monotonic(), timeout_s=limits.timeout_s,
                             output_bytes=limits.output_bytes, tail_bytes=limits.tail_bytes)
        finally:
            stdout.close()
            os.close(status)

    @functools.cached_property
    def pytest_main(self) -> str:
        """`sys.argv[0]` of `python -m pytest`: the path of pytest's `__main__.py` in the environment."""
        return str(next(self.environment.glob("lib/python*/site-packages/pytest/__main__.py"),
                        Path("pytest/__main__.py")))

    def acquire(self) -> None:
        """A run will be cloned from it: it stays until that run `release`s it."""
        with self._users_lock:
            self._users += 1

    def release(self) -> None:
        with self._users_lock:
            self._users -= 1
            done = self._retired and self._users == 0
        if done:
            self.close()

    def retire(self) -> None:
        """End it once no run holds it (an eviction must not kill the runs in flight: they
        are in its pid namespace)."""
        with self._users_lock:
            self._retired = True
            done = self._users == 0
        if done:
            self.close()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def close(self) -> None:
        """End the warm process (killed, and reaped by its tracer; its cgroup killed), then
        its workspace and hand-off folder. Once: a retired one may be closed again at the end."""
        with self._users_lock:
            if self._closed:
                return
            self._closed = True
        if self.template is not None:
            Tracer.shared().call(lambda: warm_clone.end(self.template))
            self.template = None
        if self.control is not None:
            self.control.close()
            self.control = None
        if self.proc is not None:
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.group is not None:
            self.group.remove()
        layer.unmount_under(self.handoff)
        for folder in (self.handoff,):
            try:
                folder.rmdir()
            except OSError as exc:
                log.warning("warm: could not remove %s: %s", folder, exc)
        try:
            layer.discard(self.ws)
        except OSError as exc:
            log.warning("warm: could not remove %s: %s", self.ws, exc)


def _writable_shared_mappings(smaps: str) -> list[str]:
    """The mappings of an smaps listing that are shared and may be made writable ("sh" and
    "mw" among their VmFlags): what one clone could write and the next read. A read-only
    shared mapping of a file opened read-only (glibc's gconv cache) cannot become either."""
    found, name = [], ""
    for line in smaps.splitlines():
        fields = line.split()
        if fields and "-" in fields[0] and not fields[0].endswith(":"):
            name = fields[5] if len(fields) > 5 else "[anonymous]"
        elif fields[:1] == ["VmFlags:"] and {"sh", "mw"} <= set(fields[1:]):
            found.append(name)
    return found


class _WarmChild:
    """What process.supervise needs of a run's first process, for a cloned one: `pid` is
    the run's pid 1 as the host numbers it (a session leader: killpg ends the run's pid
    namespace with it); the run's wait status comes on `status`, written by that pid 1."""

    def __init__(self, pid: int, stdout: object, status: int) -> None:
        self.pid = pid
        self.args = ["warm-run"]
        self.stdout = stdout
        self.returncode: int | None = None
        self._status = status

    def wait(self, timeout: float | None = None) -> int | None:
        if self.returncode is None:
            poller = select.poll()
            poller.register(self._status, select.POLLIN)
            data = os.read(self._status, 4) if poller.poll(5000) else b""
            if len(data) == 4:
                code = os.waitstatus_to_exitcode(struct.unpack("i", data)[0])
                self.returncode = code if code >= 0 else 128 - code
        return self.returncode


def _rlimits(limits: Limits) -> list[tuple[int, int, int]]:
    """The rlimits a cold run's shell sets (`ulimit -f … -c 0 -n 1024`, local.py), as setrlimit takes them."""
    import resource

    size = limits.file_size_mb * 1024 * 1024
    return [(resource.RLIMIT_FSIZE, size, size), (resource.RLIMIT_CORE, 0, 0), (resource.RLIMIT_NOFILE, 1024, 1024)]


class WarmStates:
    """A backend's warm processes, one per state, the least recently used ended past KEEP;
    all ended by `close` (with the backend, so with its batch)."""

    def __init__(self, backend: LocalBackend) -> None:
        self.backend = backend
        self._states: OrderedDict[tuple, WarmProcess | str] = OrderedDict()
        self._lock = threading.Lock()
        self._starting: dict[tuple, threading.Lock] = {}

    def get(self, request: RunRequest, env: dict[str, str], command: PytestCommand) -> WarmProcess:
        """The warm process of the run's state with the variables `env` (a cold run's, the
        command's assignments included: what the program's import may read), started on
        first use, acquired for the run (the caller `release`s it); raises WarmUnavailable
        (remembered for the state) when it cannot be."""
        key = (request.tree, request.environment, tuple(sorted(env.items())), request.limits)
        with self._lock:
            starting = self._starting.setdefault(key, threading.Lock())
        with starting:
            with self._lock:  # acquired here, where an eviction (below) could not have taken it yet
                found = self._states.get(key)
                if found is not None:
                    self._states.move_to_end(key)
                    if isinstance(found, WarmProcess) and found.alive():
                        found.acquire()
                        return found
            if isinstance(found, str):
                raise WarmUnavailable(found)
            try:
                process = WarmProcess(self.backend, request, env)
            except (WarmUnavailable, OSError) as exc:
                with self._lock:
                    self._states[key] = str(exc)
                raise WarmUnavailable(str(exc)) from exc
            process.acquire()
            with self._lock:
                self._states[key] = process
                evicted = [found] if isinstance(found, WarmProcess) else []  # one that died: ended with its last run
                while sum(isinstance(v, WarmProcess) for v in self._states.values()) > KEEP:
                    old = next(k for k, v in self._states.items() if isinstance(v, WarmProcess))
                    evicted.append(self._states.pop(old))
            for old_process in evicted:
                old_process.retire()
            return process

    def close(self) -> None:
        with self._lock:
            states, self._states = list(self._states.values()), OrderedDict()
        for process in states:
            if isinstance(process, WarmProcess):
                process.close()
