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

Which runs are warm (`admitted`), everything else runs cold as before:
- every state of the replay alike (warming only some would tell a run which kind its state
  is), except a state whose warm process could not start, import or freeze clean, which
  depends only on its program's tree;
- the command is `[NAME=value ...] python -m pytest <arguments>`, nothing a shell would
  expand but `$TESTPRISM_JUNIT` (`pytest_command`), or an entry `bash tmp/<script>` whose
  script is that one command and `set -u`/`-e` (`script_command`: the bundled suites'
  `run_tests.sh`);
- the environment is a virtualenv (not an image), the backend has bubblewrap, run cgroups
  and layered programs, and the run has no model channel, extra mounts or tree export;
- the state's warm process started and imported its packages (`WarmProcess.start`), and no
  pytest plugin is installed beside pytest (an entry-point plugin loads before the program
  in a cold run, after it in a warm one), and `-p` loads none;
- import order cannot tell (`import_order_risk`): no Python file the suite brings or the
  state has as a conftest runs, before its first import of a preloaded package, anything
  but imports and constant assignments, except setting a `sys` attribute or an environment
  variable that no file the warm process imported mentions.

Only a unit's first attempt is warm: its confirmation and retries start cold
(tasks/execution/batch.py `Environments.judged`), since a warm run's string-hash seed is
its warm process's, the same for every run of the state.
"""

from __future__ import annotations

import ast
import errno
import json
import logging
import os
import re
import secrets
import select
import shlex
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from testprism.tasks.model.workdir import WorkPaths, workspace_prefix
from testprism.tasks.sandbox import cgroup, inject, layer
from testprism.tasks.sandbox.base import Limits, RunRequest
from testprism.tasks.sandbox.cgroup import RunCgroup
from testprism.tasks.sandbox.inject import Tracee, Tracer
from testprism.tasks.sandbox.layer import _MS_BIND, _MS_PRIVATE, _MS_SHARED, _mount
from testprism.tasks.sandbox.nofollow import read_file
from testprism.tasks.sandbox.process import Bounded, supervise
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

#: where the per-run hand-off folder appears inside a warm sandbox (warm_boot.HANDOFF)
HANDOFF = "/.warm"
#: where a run sees its workspace
WORKSPACE = "/workspace"
#: how many warm processes a backend keeps at once (the least recently used goes first):
#: each holds its program's imported memory
KEEP = 8
#: a fresh pid namespace per run (the defence of tests/test_warm.py's pid check; False is its control)
FRESH_PID_NAMESPACE = True
#: a warm process refused when its import left it holding what its clones would share
#: (False is tests/test_warm.py's control: a shared page counts the runs)
CHECK_AT_FREEZE = True
#: the warm sandbox's mounts each child makes read-only (warm_boot.SHARED_READ_ONLY; () is
#: tests/test_warm.py's control: a file one run leaves at / is found by the next)
READ_ONLY = ("/", "/dev")
#: each child denied the kernel keyring calls (its user keyring is its warm process's, so
#: every run's of the state; False is tests/test_warm.py's control)
DENY_KEYRINGS = True
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REMOUNT = 0x1, 0x2, 0x4, 0x8, 0x20
_MS_REC, _MS_SLAVE, _MNT_DETACH = 0x4000, 1 << 19, 2
_CLONE_NEWNS, _CLONE_NEWCGROUP, _CLONE_NEWUTS = 0x00020000, 0x02000000, 0x04000000
_CLONE_NEWIPC, _CLONE_NEWPID, _CLONE_NEWNET = 0x08000000, 0x20000000, 0x40000000
_O_PATH, _O_DIRECTORY = 0o10000000, 0o200000
_MAP_PRIVATE, _MAP_ANONYMOUS = 0x02, 0x20
_PR_CAPBSET_DROP, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
#: what each run's pid 1 (`B`) maps for its set-up and its code
_SCRATCH = 1 << 16
#: `B`'s code once set up (x86-64): reap every child (wait4(-1, &status, __WALL)) until the
#: run's own ends, write that wait status on the status pipe, exit; status, the pipe's
#: descriptor and the run's pid (as `B` numbers it) follow it, in that order. From:
#:   loop: mov eax,61; mov rdi,-1; lea rsi,[rip+status]; mov edx,0x40000000; xor r10d,r10d
#:         syscall; cmp rax,[rip+child]; je done; cmp rax,-4; je loop; test rax,rax; jns loop
#:         mov edi,125; mov eax,231; syscall
#:   done: mov eax,1; mov edi,[rip+fd]; lea rsi,[rip+status]; mov edx,4; syscall
#:         xor edi,edi; mov eax,231; syscall
_STUB = bytes.fromhex(
    "b83d00000048c7c7ffffffff488d354c000000ba000000404531d20f05483b054300000074174883f8fc74d44885"
    "c079cfbf7d000000b8e70000000f05b8010000008b3d1b000000488d3510000000ba040000000f0531ffb8e7000000"
    "0f05")
#: the most of one suite or conftest file the import-order check reads
_READ_LIMIT = 4 * 1024 * 1024
_PYTEST = re.compile(r"(?:\S*/)?python(?:3(?:\.\d+)?)?")
_JUNIT = ("$TESTPRISM_JUNIT", "${TESTPRISM_JUNIT}")
_SHELL = set("$`*?[]{}~;&|<>()!\\\"'#")
_BOOT = (Path(__file__).parent / "warm_boot.py").read_text()


class WarmUnavailable(Exception):
    """This run or this state takes the cold route: the reason is logged at debug level."""


@dataclass(frozen=True)
class PytestCommand:
    """A command the warm route can run in-process: its variables, and pytest's arguments."""

    assignments: tuple[tuple[str, str], ...]
    arguments: tuple[str, ...]
    #: the entry script it came from (`script_command`), None for a command given as it is
    script: str | None = None


def pytest_command(command: str) -> PytestCommand | None:
    """`command` as `[NAME=value ...] python -m pytest <args>`, or None when it is anything
    else a shell would treat otherwise (operators, expansions, globs, quotes left after
    splitting): those run cold."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:
        return None
    assignments = []
    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
        name, _, value = words.pop(0).partition("=")
        if set(value) & _SHELL - {","}:
            return None
        assignments.append((name, value))
    if len(words) < 3 or not _PYTEST.fullmatch(words[0]) or words[1:3] != ["-m", "pytest"]:
        return None
    arguments = []
    for word in words[3:]:
        for junit in _JUNIT:
            word = word.replace(junit, "\0")
        if set(word) & _SHELL:
            return None
        arguments.append(word)
    if any(a == "-p" and not b.startswith("no:") for a, b in zip(arguments, arguments[1:] + [""])):
        return None
    return PytestCommand(tuple(assignments), tuple(arguments))


#: the lines a suite's entry script may hold beside its one pytest command
_SCRIPT_SETTINGS = {"set -u", "set -e", "set -eu", "set -ue"}


def script_command(request: RunRequest) -> PytestCommand | None:
    """The pytest command of an entry `bash tmp/<script>` whose script (the suite's own file,
    as the harness has it) holds nothing but comments, `set -u`/`-e` and that one command
    after `exec` (variables set before `exec` or after it, before `python`): the bundled
    suites' `run_tests.sh`. None for any other entry."""
    words = request.command.split()
    if len(words) != 2 or words[0] != "bash" or not words[1].startswith("tmp/") or request.suite_folder is None:
        return None
    script = _script_text(request)
    if script is None:
        return None
    body = [line.strip() for line in script.splitlines()]
    body = [line for line in body if line and not line.startswith("#") and line not in _SCRIPT_SETTINGS]
    # bash execs it (`[NAME=value ...] exec python -m pytest ...`): its variables are then a
    # command line's; `exec NAME=value ...` is not that (bash finds no command of that name: 127)
    found = re.fullmatch(r"((?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*)exec\s+(.*)", body[0]) if len(body) == 1 else None
    if found is None or re.match(r"[A-Za-z_][A-Za-z0-9_]*=", found.group(2)):
        return None
    command = pytest_command(found.group(1) + found.group(2))
    return None if command is None else PytestCommand(command.assignments, command.arguments, script=words[1])


def _script_text(request: RunRequest, program: Path | None = None) -> str | None:
    """The entry script's text: the suite's file, or (`program`) the filled workspace's."""
    rel = request.command.split()[1].removeprefix("tmp/")
    if rel not in request.suite_files or request.suite_folder is None:
        return None
    return _read(program / "tmp" if program is not None else request.suite_folder, rel)


def packages_of(tree: Path) -> tuple[str, ...]:
    """The program's top-level packages, from the state's tree alone: folders at its root
    with an `__init__.py` whose name is an identifier and not a test folder's."""
    return tuple(sorted(entry.name for entry in tree.iterdir()
                        if entry.is_dir() and not entry.is_symlink() and entry.name.isidentifier()
                        and not entry.name.startswith("test") and (entry / "__init__.py").is_file()))


def import_order_risk(sources: dict[str, str], packages: tuple[str, ...], preloaded: list[str]) -> str | None:
    """Why running these files after the program was imported could differ from a cold run,
    or None. `sources`: each Python file the suite brings or pytest loads before the tests
    (conftests), by name; `preloaded`: the text of every program file the warm process
    imported. Before a file's first import of a preloaded package (all of its top level when
    it has none), only imports, docstrings and constant assignments are neutral; setting a
    `sys` attribute or an environment variable is neutral when no preloaded file mentions
    its name; anything else is a risk."""
    for name, source in sources.items():
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue  # pytest reports it the same way either route
        for statement in tree.body:
            if _imports_preloaded(statement, packages):
                break
            risk = _risk(statement, preloaded)
            if risk:
                return f"{name}:{statement.lineno}: {risk} before the program's import"
    return None


def _imports_preloaded(statement: ast.stmt, packages: tuple[str, ...]) -> bool:
    if isinstance(statement, ast.Import):
        return any(alias.name.split(".")[0] in packages for alias in statement.names)
    return isinstance(statement, ast.ImportFrom) and (statement.module or "").split(".")[0] in packages


def _risk(statement: ast.stmt, preloaded: list[str]) -> str | None:
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return None
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not statement.decorator_list:
        return None  # a definition runs nothing of its body at import; a decorator is a call
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
        return None
    if isinstance(statement, (ast.Assign, ast.AnnAssign)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        value = statement.value
        if all(isinstance(t, ast.Name) for t in targets) and (value is None or _literal(value)):
            return None
        names = [_global_name(t) for t in targets]
        if all(names) and (value is None or _literal(value)):
            mentioned = [n for n in names if any(n in text for text in preloaded)]
            return f"sets {', '.join(mentioned)}, which the program reads," if mentioned else None
    return f"line runs code ({type(statement).__name__})"


def _literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except ValueError:
        return False
    return True


def _global_name(target: ast.expr) -> str | None:
    """`X` of `sys.X = …` or of `os.environ["X"] = …`, else None."""
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "sys":
        return target.attr
    if (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Attribute)
            and target.value.attr == "environ" and isinstance(target.slice, ast.Constant)
            and isinstance(target.slice.value, str)):
        return target.slice.value
    return None


def suite_sources(request: RunRequest, program: Path) -> dict[str, str]:
    """The Python files a run's pytest may load before its tests import the program, as the
    harness filled them (never after the run), read without following a link: the suite's
    files, what its test patch touched, and every conftest.py of the program."""
    names = {f"tmp/{rel}" for rel in request.suite_files if rel.endswith(".py")}
    if request.suite_patch is not None:
        touched = re.findall(rb"^\+\+\+ b/(\S+\.py)\s*$", request.suite_patch, re.MULTILINE)
        names |= {name.decode(errors="replace") for name in touched}
    for folder, dirnames, filenames in os.walk(program):  # never into a linked folder
        if "conftest.py" in filenames:
            names.add(os.path.relpath(os.path.join(folder, "conftest.py"), program))
    found = {}
    for name in names:
        text = _read(program, name)
        if text is not None:
            found[name] = text
    return found


def _read(root: Path, name: str) -> str | None:
    """The text of `root/name`, never through a link (a tree or a suite may hold links
    out of it) and never above `root`; None when it is not such a file."""
    parts = Path(name).parts
    if ".." in parts or Path(name).is_absolute():
        return None
    data = read_file(root, parts, _READ_LIMIT)
    return None if data is None else data.decode(errors="replace")


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
            self.read_only_flags = {path: _locked_flags(mounts, path) for path in READ_ONLY}
            return template
        except BaseException:
            _end(template)  # refused: it ends here, reaped by the thread that traces it
            raise

    def admits(self, request: RunRequest, command: PytestCommand, ws: Path) -> str | None:
        """Why this filled run must go cold on this state, or None (module docstring)."""
        if command.script is not None and _script_text(request, ws / "program") != _script_text(request):
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
            pid, out, status = Tracer.shared().call(lambda: self._spawn(token, _rlimits(limits), group, handed))
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

    def _spawn(self, token: str, rlimits: list[tuple[int, int, int]], group: RunCgroup,
               handed: Path) -> tuple[int, int, int]:
        """In the tracer's thread: the run's pid 1 (`B`) and the run (`C`) cloned from the
        frozen warm process and set up by injected calls (SECURITY.md, "Warm states");
        returns `B`'s pid as the host numbers it, and the read ends of the run's output
        and status pipes."""
        assert self.template is not None
        while self.template.call("wait4", -1, 0, os.WNOHANG | inject.WALL, 0) > 0:
            pass  # earlier runs' pid 1s, reaped by the warm process as a parent would
        flags = _CLONE_NEWNS | _CLONE_NEWUTS | _CLONE_NEWIPC | _CLONE_NEWNET | (
            _CLONE_NEWPID if FRESH_PID_NAMESPACE else 0)
        b = self.template.fork(flags)
        c: Tracee | None = None
        try:
            c, out, status = self._set_up(b, token, rlimits, group, handed)
            return b.pid, out, status
        except BaseException:
            for tracee in (c, b):
                if tracee is not None:
                    _end(tracee)
            raise

    def _set_up(self, b: Tracee, token: str, rlimits: list[tuple[int, int, int]], group: RunCgroup,
                handed: Path) -> tuple[Tracee, int, int]:
        """`B`'s and `C`'s set-up by injected calls; both let go at the end. Returns `C`
        and the harness's read ends of the run's output and status pipes."""
        base = b.check("mmap", 0, _SCRATCH, 7, _MAP_PRIVATE | _MAP_ANONYMOUS, -1, 0)  # rwx: `B`'s code goes here
        mem = _Layout(b, base + 256, base + _SCRATCH - 4096)  # after `B`'s code and its data

        def s(text: str) -> int:
            return mem.add(text.encode() + b"\0")

        root, workspace = s("/"), s(WORKSPACE)
        b.check("mount", 0, root, 0, _MS_REC | _MS_SLAVE, 0)  # the harness's unmount of `handed` reaches here
        b.check("mount", s(f"{HANDOFF}/{token}"), workspace, 0, _MS_BIND | _MS_REC, 0)
        b.check("mount", 0, workspace, 0, _MS_REC | _MS_PRIVATE, 0)
        # what the sandbox shows under a scratch folder (the environment, when the work area is
        # in /tmp or /var/tmp) is held first and shown again over the run's own scratch folder
        held = [(path, b.check("open", s(path), _O_PATH | _O_DIRECTORY, 0)) for path in self.keep]
        for folder, inside in SCRATCH:
            b.check("mount", s(f"{WORKSPACE}/{folder}"), s(inside), 0, _MS_BIND | _MS_REC, 0)
        for path, fd in held:
            parts = Path(path).parts
            for depth in range(2, len(parts) + 1):
                made = b.call("mkdir", s(str(Path(*parts[:depth]))), 0o755)
                if made < 0 and -made != errno.EEXIST:
                    raise inject.InjectError(-made, f"mkdir {path}: {os.strerror(-made)}")
            b.check("mount", s(f"/proc/self/fd/{fd}"), s(path), 0, _MS_BIND | _MS_REC, 0)
            b.check("close", fd)
        for path, flags in self.read_only_flags.items():  # this mount only: the run's own under it stay writable
            b.check("mount", 0, s(path), 0, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | flags, 0)
        self._loopback_up(b, mem)
        if FRESH_PID_NAMESPACE:
            b.check("mount", s("proc"), s("/proc"), s("proc"), _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, 0)
        b.check("setsid")
        request = b.check("open", s(f"{HANDOFF}/{token}.d/request"), os.O_RDONLY, 0)
        (out_read, out), (status_read, status) = _pipe(b, mem), _pipe(b, mem)
        taken = [b.take(out_read), b.take(status_read)]
        b.check("close", out_read)
        b.check("close", status_read)
        null = b.check("open", s("/dev/null"), os.O_RDONLY, 0)
        b.check("chdir", s(f"{WORKSPACE}/program"))  # never the warm process's own folder
        for folder in group.folders.values():
            (folder / "cgroup.procs").write_text(str(b.pid))
        layer.unmount_under(handed)  # gone from the run's mounts too (they are its slaves)
        b.check("unshare", _CLONE_NEWCGROUP)  # in the run's cgroup now: its root, as a cold run's
        b.check("mount", 0, root, 0, _MS_REC | _MS_PRIVATE, 0)
        if b.call("umount2", s(HANDOFF), _MNT_DETACH) < 0:  # the hand-off folder, gone from the run's mounts
            b.check("mount", s("tmpfs"), s(HANDOFF), s("tmpfs"),
                    _MS_RDONLY | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, s("size=4k,mode=0555"))
        _drop_capabilities(b, mem)
        if DENY_KEYRINGS:
            b.check("prctl", _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, _keyring_filter(mem), 0, 0)
        every_signal = mem.add(b"\xff" * 8)
        limits = [(number, mem.add(struct.pack("QQ", soft, hard))) for number, soft, hard in rlimits]
        c = b.fork(0)
        for target, fd in ((0, null), (1, out), (2, out), (self.control_fd, request)):
            c.check("dup2", fd, target)
        if self.control_fd > 3:
            c.check("close_range", 3, self.control_fd - 1, 0)
        c.check("close_range", self.control_fd + 1, 0xFFFFFFFF, 0)
        for number, address in limits:
            c.check("prlimit64", 0, number, address, 0)
        c.check("munmap", base, _SCRATCH)
        c.let_go()  # it resumes in the warm process's read, which reads the request
        # `B`: pid 1, reaping until the run ends, then reporting its status (_STUB)
        b.check("close_range", 0, status - 1, 0)
        b.check("close_range", status + 1, 0xFFFFFFFF, 0)
        b.check("rt_sigprocmask", 2, every_signal, 0, 8)  # every signal blocked: it runs no handler
        b.write(base, _STUB + struct.pack("iiq", 0, status, c.local_pid))
        regs = inject.Regs.from_buffer_copy(b.saved)
        regs.rip, regs.rsp, regs.orig_rax = base, base + _SCRATCH - 64, (1 << 64) - 1
        b.let_go(regs)
        return c, taken[0], taken[1]

    @staticmethod
    def _loopback_up(b: Tracee, mem: _Layout) -> None:
        sock = b.check("socket", socket.AF_INET, socket.SOCK_DGRAM, 0)
        request = mem.add(struct.pack("16sH22x", b"lo", 0))
        b.check("ioctl", sock, _SIOCGIFFLAGS, request)
        flags = struct.unpack("16sH", b.read(request, 18))[1]
        b.write(request, struct.pack("16sH", b"lo", flags | _IFF_UP))
        b.check("ioctl", sock, _SIOCSIFFLAGS, request)
        b.check("close", sock)

    @property
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
            Tracer.shared().call(lambda: _end(self.template))
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


class _Layout:
    """Bytes laid out in a tracee's scratch mapping, 8-aligned, written as they are added
    (into `tracee`; a clone made later has them too)."""

    def __init__(self, tracee: Tracee, start: int, end: int) -> None:
        self.tracee = tracee
        self.next = start
        self.end = end

    def add(self, data: bytes) -> int:
        address = self.next
        self.next += len(data) + (-len(data) % 8)
        if self.next > self.end:
            raise inject.InjectError(errno.ENOMEM, "the scratch mapping is full")
        self.tracee.write(address, data)
        return address


def _end(tracee: Tracee) -> None:
    """Kill a traced process and reap its stop reports (a tracee's exit is its tracer's to see first)."""
    try:
        os.kill(tracee.pid, signal.SIGKILL)
        os.waitpid(tracee.pid, inject.WALL)
    except (ProcessLookupError, ChildProcessError):
        pass
    tracee.close()


def _pipe(b: Tracee, mem: _Layout) -> tuple[int, int]:
    """A pipe made by `B` (a run's output and status are pipes, as a cold run's are): its ends."""
    ends = mem.add(bytes(8))
    b.check("pipe2", ends, 0)
    return struct.unpack("ii", b.read(ends, 8))


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


def _locked_flags(mountinfo: list[str], path: str) -> int:
    """The nosuid, nodev and noexec of the mount at `path` (the last there), which a
    remount in a user namespace must keep."""
    options = next((line.split()[5].split(",") for line in reversed(mountinfo) if line.split()[4] == path), [])
    return ((_MS_NOSUID if "nosuid" in options else 0) | (_MS_NODEV if "nodev" in options else 0)
            | (_MS_NOEXEC if "noexec" in options else 0))


def _drop_capabilities(b: Tracee, mem: _Layout) -> None:
    """Ambient, bounding, then effective/permitted/inheritable: none left (NoNewPrivs is set
    by bubblewrap already, so no exec can give any back)."""
    b.check("prctl", _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    for cap in range(64):
        if b.call("prctl", _PR_CAPBSET_DROP, cap, 0, 0, 0) == -errno.EINVAL:
            break  # past the last capability
    header = mem.add(struct.pack("Ii", 0x20080522, 0))  # _LINUX_CAPABILITY_VERSION_3, this thread
    b.check("capset", header, mem.add(bytes(24)))


def _keyring_filter(mem: _Layout) -> int:
    """A seccomp filter that fails add_key, request_key and keyctl with EPERM, as docker's
    default profile does, and every call of another ABI (i386, x32: their numbers differ);
    everything else is allowed. Returns its sock_fprog's address."""
    arch, calls = 0xC000003E, (248, 249, 250)  # AUDIT_ARCH_X86_64
    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_JMP|JGE|K, BPF_RET|K
    allow, deny = 0x7FFF0000, 0x00050000 | 1  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EPERM
    n = len(calls)
    program = [(ld, 0, 0, 4), (jeq, 1, 0, arch), (ret, 0, 0, deny), (ld, 0, 0, 0), (jge, n + 1, 0, 0x40000000),
               *((jeq, n - i, 0, call) for i, call in enumerate(calls)), (ret, 0, 0, allow), (ret, 0, 0, deny)]
    filters = mem.add(b"".join(struct.pack("HBBI", *f) for f in program))
    return mem.add(struct.pack("HxxxxxxQ", len(program), filters))


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
