"""System calls made on a stopped process's behalf (ptrace), so that a warm state's template
never runs again once frozen (tasks/sandbox/warm.py; SECURITY.md, "Warm states").

A warm process has run the program's import-time code: whatever it executes after that is
the program's to rewrite (its loop, its fork, a child's set-up). So the harness stops it for
good (`Tracee.seize`) and makes each run's processes by system calls it injects: it points the
stopped thread at a `syscall` instruction already in its memory, with the call's registers,
and single-steps that one instruction. No instruction of the tracee's own runs in between;
a clone it is made to call comes out stopped and traced too (PTRACE_O_TRACEFORK), and is set
up the same way before it is let go.

x86-64 only (the registers below); elsewhere warm states run cold (`available`).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import signal
import threading
from collections.abc import Callable
from concurrent.futures import Future
from queue import SimpleQueue
from typing import TypeVar

_libc = ctypes.CDLL(None, use_errno=True)
_libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
_libc.ptrace.restype = ctypes.c_long

PTRACE_CONT, PTRACE_SINGLESTEP, PTRACE_GETREGS, PTRACE_SETREGS, PTRACE_DETACH = 7, 9, 12, 13, 17
PTRACE_SETOPTIONS, PTRACE_GETEVENTMSG, PTRACE_SEIZE, PTRACE_INTERRUPT = 0x4200, 0x4201, 0x4206, 0x4207
PTRACE_O_TRACEFORK, PTRACE_O_EXITKILL = 0x2, 0x100000
PTRACE_EVENT_FORK, PTRACE_EVENT_STOP = 1, 128
WALL = 0x40000000
_SYS_PIDFD_GETFD = 438
#: the x86-64 system call numbers used here
SYS = {"read": 0, "open": 2, "close": 3, "mmap": 9, "munmap": 11, "rt_sigprocmask": 14, "ioctl": 16, "dup2": 33,
       "socket": 41, "clone": 56, "wait4": 61, "chdir": 80, "mkdir": 83, "setsid": 112, "capset": 126,
       "prctl": 157, "mount": 165, "umount2": 166, "unshare": 272, "pipe2": 293, "prlimit64": 302, "close_range": 436}
#: the kernel's "restart this call" results, as a stopped thread holds them mid-call
_RESTART = {512, 513, 514}  # ERESTARTSYS, ERESTARTNOINTR, ERESTARTNOHAND
_RESTART_BLOCK = 516  # ERESTART_RESTARTBLOCK: restarted by restart_syscall, which a fresh clone has no state for


class Regs(ctypes.Structure):
    """struct user_regs_struct (x86-64)."""

    _fields_ = [(name, ctypes.c_ulonglong) for name in ["r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8", "rax", "rcx", "rdx", "rsi", "rdi", "orig_rax", "rip", "cs", "eflags", "rsp", "ss", "fs_base", "gs_base", "ds", "es", "fs", "gs"]]


class InjectError(OSError):
    """An injected call failed, or the tracee did not stop as it should."""


def available() -> str | None:
    """Why syscall injection cannot work here, or None."""
    if platform.machine() != "x86_64":
        return f"injected forks are written for x86-64, not {platform.machine()}"
    return None


def _ptrace(request: int, pid: int, addr: int = 0, data: int | ctypes.c_void_p | None = 0) -> int:
    result = _libc.ptrace(request, pid, ctypes.c_void_p(addr), data if isinstance(data, ctypes.c_void_p)
                          else ctypes.c_void_p(data))
    if result < 0:
        code = ctypes.get_errno()
        raise InjectError(code, f"ptrace({request:#x}, {pid}): {os.strerror(code)}")
    return result


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _unsigned(value: int) -> int:
    return value & ((1 << 64) - 1)


class Tracee:
    """One stopped, traced thread: its registers at the stop (restored when it is let go)
    and the address of a `syscall` instruction in its memory."""

    def __init__(self, pid: int, saved: Regs, syscall_at: int) -> None:
        self.pid = pid
        self.saved = saved
        self.syscall_at = syscall_at
        #: a clone's pid as its parent numbers it (`fork`), and the last call's traced child
        self.local_pid = 0
        self.forked: int | None = None
        self._mem = os.open(f"/proc/{pid}/mem", os.O_RDWR | os.O_CLOEXEC)

    @classmethod
    def seize(cls, pid: int) -> Tracee:
        """Stop `pid` for good, wherever it is (a thread blocked in a call is stopped mid-call:
        `resume_regs` restarts that call in a clone). Its clones are traced from birth."""
        _ptrace(PTRACE_SEIZE, pid, 0, PTRACE_O_TRACEFORK | PTRACE_O_EXITKILL)
        _ptrace(PTRACE_INTERRUPT, pid)
        _wait_stop(pid)
        saved = _regs(pid)
        return cls(pid, saved, _find_syscall(pid))

    def regs(self) -> Regs:
        return _regs(self.pid)

    def write(self, address: int, data: bytes) -> None:
        if os.pwrite(self._mem, data, address) != len(data):
            raise InjectError(errno.EIO, f"short write into {self.pid}'s memory")

    def read(self, address: int, size: int) -> bytes:
        return os.pread(self._mem, size, address)

    def take(self, fd: int) -> int:
        """A duplicate, in the harness, of the tracee's descriptor `fd` (pidfd_getfd; close-on-exec)."""
        pidfd = os.pidfd_open(self.pid)
        try:
            taken = _libc.syscall(_SYS_PIDFD_GETFD, pidfd, fd, 0)
            if taken < 0:
                code = ctypes.get_errno()
                raise InjectError(code, f"pidfd_getfd {self.pid}/{fd}: {os.strerror(code)}")
            return taken
        finally:
            os.close(pidfd)

    def call(self, name: str, *args: int) -> int:
        """Make the tracee call `name(*args)`; its result (a negative errno on failure)."""
        regs = Regs.from_buffer_copy(self.saved)
        regs.rax, regs.orig_rax, regs.rip = SYS[name], _unsigned(-1), self.syscall_at
        for field, value in zip(("rdi", "rsi", "rdx", "r10", "r8", "r9"), args, strict=False):
            setattr(regs, field, _unsigned(value))
        _ptrace(PTRACE_SETREGS, self.pid, 0, ctypes.c_void_p(ctypes.addressof(regs)))
        self.forked = None
        _ptrace(PTRACE_SINGLESTEP, self.pid)
        while True:
            status = _wait_stop(self.pid)
            event = status >> 16
            if event == PTRACE_EVENT_FORK:  # the call made a traced child: the step goes on
                self.forked = _eventmsg(self.pid)
            elif os.WSTOPSIG(status) == signal.SIGTRAP and event == 0:
                return _signed(_regs(self.pid).rax)
            # a signal arriving meanwhile is not delivered (the tracee runs none of its handlers)
            _ptrace(PTRACE_SINGLESTEP, self.pid)

    def check(self, name: str, *args: int) -> int:
        """`call`, raising InjectError on a failed call."""
        result = self.call(name, *args)
        if result < 0:
            raise InjectError(-result, f"{name} in {self.pid}: {os.strerror(-result)}")
        return result

    def fork(self, flags: int) -> Tracee:
        """The tracee's clone with `flags` (plus SIGCHLD as its exit signal): stopped and
        traced, with this tracee's saved registers to be resumed with. Its own pid (as the
        tracee numbers it) is `.local_pid`."""
        local = self.check("clone", flags | signal.SIGCHLD, 0, 0, 0, 0)
        if self.forked is None:
            raise InjectError(errno.ECHILD, f"clone in {self.pid} reported no child")
        child = self.forked
        _wait_stop(child)
        clone = Tracee(child, self.saved, self.syscall_at)
        clone.local_pid = local
        return clone

    def let_go(self, regs: Regs | None = None) -> None:
        """Restore `regs` (the saved ones, a call interrupted by the stop restarted) and
        detach: from here on it runs its own instructions."""
        regs = regs if regs is not None else resume_regs(self.saved)
        _ptrace(PTRACE_SETREGS, self.pid, 0, ctypes.c_void_p(ctypes.addressof(regs)))
        _ptrace(PTRACE_DETACH, self.pid, 0, 0)
        self.close()

    def close(self) -> None:
        if self._mem >= 0:
            os.close(self._mem)
            self._mem = -1


def resume_regs(saved: Regs) -> Regs:
    """Registers that resume a thread stopped at `saved` in a fresh clone: a call the stop
    interrupted is started again (its instruction re-run), as the kernel would on resuming
    the thread itself; one the kernel would restart from its own saved state fails EINTR."""
    regs = Regs.from_buffer_copy(saved)
    if _signed(regs.orig_rax) >= 0:
        result = -_signed(regs.rax)
        if result in _RESTART:
            regs.rax, regs.rip = regs.orig_rax, regs.rip - 2
        elif result == _RESTART_BLOCK:
            regs.rax = _unsigned(-errno.EINTR)
        regs.orig_rax = _unsigned(-1)
    return regs


def _regs(pid: int) -> Regs:
    regs = Regs()
    _ptrace(PTRACE_GETREGS, pid, 0, ctypes.c_void_p(ctypes.addressof(regs)))
    return regs


def _eventmsg(pid: int) -> int:
    value = ctypes.c_ulong()
    _ptrace(PTRACE_GETEVENTMSG, pid, 0, ctypes.c_void_p(ctypes.addressof(value)))
    return value.value


def _wait_stop(pid: int) -> int:
    _, status = os.waitpid(pid, WALL)
    if not os.WIFSTOPPED(status):
        raise InjectError(errno.ESRCH, f"{pid} ended instead of stopping (status {status:#x})")
    return status


def _find_syscall(pid: int) -> int:
    """The address of a `syscall` instruction (0f 05) in an executable mapping of `pid`."""
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for line in maps:
            fields = line.split()
            if "x" not in fields[1] or (len(fields) > 5 and fields[5] == "[vsyscall]"):
                continue
            start, end = (int(part, 16) for part in fields[0].split("-"))
            try:
                mem.seek(start)
                text = mem.read(min(end - start, 1 << 22))
            except OSError:
                continue
            found = text.find(b"\x0f\x05")
            if found >= 0:
                return start + found
    raise InjectError(errno.ENOEXEC, f"no syscall instruction found in {pid}")


T = TypeVar("T")


class Tracer:
    """The one thread that makes every ptrace request: the kernel takes them only from the
    thread that attached. Work is handed to it (`call`) and its result handed back."""

    _instance: Tracer | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        self._work: SimpleQueue[tuple[Callable[[], object], Future]] = SimpleQueue()
        self.pid = os.getpid()
        threading.Thread(target=self._serve, name="testprism-tracer", daemon=True).start()

    @classmethod
    def shared(cls) -> Tracer:
        """This process's tracer (a forked harness process has none of its parent's threads:
        it starts its own)."""
        with cls._lock:
            if cls._instance is None or cls._instance.pid != os.getpid():
                cls._instance = cls()
            return cls._instance

    def call(self, work: Callable[[], T]) -> T:
        future: Future = Future()
        self._work.put((work, future))
        return future.result()

    def _serve(self) -> None:
        while True:
            work, future = self._work.get()
            try:
                future.set_result(work())
            except BaseException as exc:  # noqa: BLE001 - handed back to the caller
                future.set_exception(exc)
