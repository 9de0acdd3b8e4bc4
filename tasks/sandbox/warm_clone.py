"""A run cloned from its state's frozen warm process (tasks/sandbox/warm.py), and set up by
system calls the harness injects (tasks/sandbox/inject.py) before any instruction of its own
runs: SECURITY.md, "Warm states", says what each step keeps from the run and why.

The frozen warm process is made to `clone` into new mount, pid, network, IPC and UTS
namespaces: `B`, pid 1 of the run's pid namespace. In `B`: the run's workspace and scratch
folders bound over the warm sandbox's, its shared mounts made read-only, a loopback, a fresh
`/proc`, a session, the request opened, the output and status pipes made (the harness takes
their read ends), the program folder as working folder; moved into the run's cgroup (by the
harness) and a cgroup namespace rooted there; the hand-off folder unmounted; no capability;
the keyring calls denied. `B` clones `C`, the run: its descriptors, limits, and the warm
process's registers (its interrupted `read` restarted: it reads the request). `B` runs the
few instructions of `_STUB`: reap until `C` ends, report its status, exit.
"""

from __future__ import annotations

import errno
import mmap
import os
import signal
import socket
import struct
from dataclasses import dataclass
from pathlib import Path

from testprism.tasks.sandbox import layer
from testprism.tasks.sandbox.cgroup import RunCgroup
from testprism.tasks.sandbox.inject import WALL, InjectError, Regs, Tracee
from testprism.tasks.sandbox.layer import (_MNT_DETACH, _MS_BIND, _MS_NODEV, _MS_NOEXEC, _MS_NOSUID, _MS_PRIVATE,
                                          _MS_RDONLY, _MS_REC, _MS_REMOUNT, _MS_SLAVE)
from testprism.tasks.sandbox.workspace import SCRATCH

#: where the per-run hand-off folder appears inside a warm sandbox
HANDOFF = "/.warm"
#: where a run sees its workspace
WORKSPACE = "/workspace"
#: a fresh pid namespace per run (the defence of tests/test_warm.py's pid check; False is its control)
FRESH_PID_NAMESPACE = True
#: the warm sandbox's mounts each child makes read-only (() is
#: tests/test_warm.py's control: a file one run leaves at / is found by the next)
READ_ONLY = ("/", "/dev")
#: each child denied the kernel keyring calls (its user keyring is its warm process's, so
#: every run's of the state; False is tests/test_warm.py's control)
DENY_KEYRINGS = True
_CLONE_NEWNS, _CLONE_NEWCGROUP, _CLONE_NEWUTS = 0x00020000, 0x02000000, 0x04000000
_CLONE_NEWIPC, _CLONE_NEWPID, _CLONE_NEWNET = 0x08000000, 0x20000000, 0x40000000
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


@dataclass(frozen=True)
class CloneOrder:
    """What one run's clone is made with: the name its workspace has in the hand-off
    folder (and `<token>.d/request` beside it), the host's mount of it, the run's cgroup and
    rlimits, and what the warm process showed that each run must see again (the paths held
    over scratch folders, the locked flags of the mounts made read-only, the descriptor the
    request is read on)."""

    token: str
    handed: Path
    group: RunCgroup
    rlimits: list[tuple[int, int, int]]
    keep: list[str]
    read_only_flags: dict[str, int]
    control_fd: int


def clone_run(template: Tracee, run: CloneOrder) -> tuple[int, int, int]:
    """In the tracer's thread: the run's pid 1 (`B`) and the run (`C`) cloned from the
    frozen warm process `template` and set up by injected calls (module docstring);
    returns `B`'s pid as the host numbers it, and the read ends of the run's output and
    status pipes."""
    while template.call("wait4", -1, 0, os.WNOHANG | WALL, 0) > 0:
        pass  # earlier runs' pid 1s, reaped by the warm process as a parent would
    flags = _CLONE_NEWNS | _CLONE_NEWUTS | _CLONE_NEWIPC | _CLONE_NEWNET | (
        _CLONE_NEWPID if FRESH_PID_NAMESPACE else 0)
    b = template.fork(flags)
    c: Tracee | None = None
    try:
        c, out, status = _set_up(b, run)
        return b.pid, out, status
    except BaseException:
        for tracee in (c, b):
            if tracee is not None:
                end(tracee)
        raise


def _set_up(b: Tracee, run: CloneOrder) -> tuple[Tracee, int, int]:
    """`B`'s and `C`'s set-up by injected calls; both let go at the end. Returns `C`
    and the harness's read ends of the run's output and status pipes."""
    base = b.check("mmap", 0, _SCRATCH, mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC,
                   mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)  # rwx: `B`'s code goes here
    mem = _Layout(b, base + 256, base + _SCRATCH - 4096)  # after `B`'s code and its data

    def s(text: str) -> int:
        return mem.add(text.encode() + b"\0")

    root, workspace = s("/"), s(WORKSPACE)
    b.check("mount", 0, root, 0, _MS_REC | _MS_SLAVE, 0)  # the harness's unmount of `handed` reaches here
    b.check("mount", s(f"{HANDOFF}/{run.token}"), workspace, 0, _MS_BIND | _MS_REC, 0)
    b.check("mount", 0, workspace, 0, _MS_REC | _MS_PRIVATE, 0)
    # what the sandbox shows under a scratch folder (the environment, when the work area is
    # in /tmp or /var/tmp) is held first and shown again over the run's own scratch folder
    held = [(path, b.check("open", s(path), os.O_PATH | os.O_DIRECTORY, 0)) for path in run.keep]
    for folder, inside in SCRATCH:
        b.check("mount", s(f"{WORKSPACE}/{folder}"), s(inside), 0, _MS_BIND | _MS_REC, 0)
    for path, fd in held:
        parts = Path(path).parts
        for depth in range(2, len(parts) + 1):
            made = b.call("mkdir", s(str(Path(*parts[:depth]))), 0o755)
            if made < 0 and -made != errno.EEXIST:
                raise InjectError(-made, f"mkdir {path}: {os.strerror(-made)}")
        b.check("mount", s(f"/proc/self/fd/{fd}"), s(path), 0, _MS_BIND | _MS_REC, 0)
        b.check("close", fd)
    for path, flags in run.read_only_flags.items():  # this mount only: the run's own under it stay writable
        b.check("mount", 0, s(path), 0, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | flags, 0)
    _loopback_up(b, mem)
    if FRESH_PID_NAMESPACE:
        b.check("mount", s("proc"), s("/proc"), s("proc"), _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, 0)
    b.check("setsid")
    request = b.check("open", s(f"{HANDOFF}/{run.token}.d/request"), os.O_RDONLY, 0)
    (out_read, out), (status_read, status) = _pipe(b, mem), _pipe(b, mem)
    taken = [b.take(out_read), b.take(status_read)]
    b.check("close", out_read)
    b.check("close", status_read)
    null = b.check("open", s("/dev/null"), os.O_RDONLY, 0)
    b.check("chdir", s(f"{WORKSPACE}/program"))  # never the warm process's own folder
    for folder in run.group.folders.values():
        (folder / "cgroup.procs").write_text(str(b.pid))
    layer.unmount_under(run.handed)  # gone from the run's mounts too (they are its slaves)
    b.check("unshare", _CLONE_NEWCGROUP)  # in the run's cgroup now: its root, as a cold run's
    b.check("mount", 0, root, 0, _MS_REC | _MS_PRIVATE, 0)
    if b.call("umount2", s(HANDOFF), _MNT_DETACH) < 0:  # the hand-off folder, gone from the run's mounts
        b.check("mount", s("tmpfs"), s(HANDOFF), s("tmpfs"),
                _MS_RDONLY | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, s("size=4k,mode=0555"))
    _drop_capabilities(b, mem)
    if DENY_KEYRINGS:
        b.check("prctl", _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, _keyring_filter(mem), 0, 0)
    every_signal = mem.add(b"\xff" * 8)
    limits = [(number, mem.add(struct.pack("QQ", soft, hard))) for number, soft, hard in run.rlimits]
    c = b.fork(0)
    for target, fd in ((0, null), (1, out), (2, out), (run.control_fd, request)):
        c.check("dup2", fd, target)
    if run.control_fd > 3:
        c.check("close_range", 3, run.control_fd - 1, 0)
    c.check("close_range", run.control_fd + 1, 0xFFFFFFFF, 0)
    for number, address in limits:
        c.check("prlimit64", 0, number, address, 0)
    c.check("munmap", base, _SCRATCH)
    c.let_go()  # it resumes in the warm process's read, which reads the request
    # `B`: pid 1, reaping until the run ends, then reporting its status (_STUB)
    b.check("close_range", 0, status - 1, 0)
    b.check("close_range", status + 1, 0xFFFFFFFF, 0)
    b.check("rt_sigprocmask", 2, every_signal, 0, 8)  # every signal blocked: it runs no handler
    b.write(base, _STUB + struct.pack("iiq", 0, status, c.local_pid))
    regs = Regs.from_buffer_copy(b.saved)
    regs.rip, regs.rsp, regs.orig_rax = base, base + _SCRATCH - 64, (1 << 64) - 1
    b.let_go(regs)
    return c, taken[0], taken[1]


def _loopback_up(b: Tracee, mem: _Layout) -> None:
    sock = b.check("socket", socket.AF_INET, socket.SOCK_DGRAM, 0)
    request = mem.add(struct.pack("16sH22x", b"lo", 0))
    b.check("ioctl", sock, _SIOCGIFFLAGS, request)
    flags = struct.unpack("16sH", b.read(request, 18))[1]
    b.write(request, struct.pack("16sH", b"lo", flags | _IFF_UP))
    b.check("ioctl", sock, _SIOCSIFFLAGS, request)
    b.check("close", sock)


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
            raise InjectError(errno.ENOMEM, "the scratch mapping is full")
        self.tracee.write(address, data)
        return address


def end(tracee: Tracee) -> None:
    """Kill a traced process and reap its stop reports (a tracee's exit is its tracer's to see first)."""
    try:
        os.kill(tracee.pid, signal.SIGKILL)
        os.waitpid(tracee.pid, WALL)
    except (ProcessLookupError, ChildProcessError):
        pass
    tracee.close()


def _pipe(b: Tracee, mem: _Layout) -> tuple[int, int]:
    """A pipe made by `B` (a run's output and status are pipes, as a cold run's are): its ends."""
    ends = mem.add(bytes(8))
    b.check("pipe2", ends, 0)
    return struct.unpack("ii", b.read(ends, 8))


def locked_flags(mountinfo: list[str], path: str) -> int:
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
