"""Run a host process with a wall-clock limit and an output bound, killing its whole
process group on either. Shared by backends that drive a local process."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


#: how long a killed process may take to die before the run is abandoned as an infra error
KILL_GRACE_S = 30.0


class Unkillable(RuntimeError):
    """A process outlived SIGKILL (uninterruptible sleep); the watchdog abandons it."""


@dataclass(frozen=True)
class Bounded:
    exit_code: int | None
    duration_s: float
    output_tail: bytes
    timed_out: bool
    output_exceeded: bool


def run_bounded(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    output_bytes: int,
    tail_bytes: int,
    pass_fds: Sequence[int] = (),
) -> Bounded:
    """Run argv in a new session with stdout+stderr merged; keep the last `tail_bytes`.

    Past `timeout_s` or `output_bytes` the whole process group gets SIGKILL, so a suite
    cannot keep a run alive by forking or flooding the pipe. No uid to switch to: that
    would make Popen fork the caller instead of vfork-ing it (slow for a large caller), so
    a caller drops privileges with a helper in argv (setpriv).
    """
    start = time.monotonic()
    proc = subprocess.Popen(
        list(argv), cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, start_new_session=True, pass_fds=tuple(pass_fds),
    )
    return supervise(proc, start, timeout_s=timeout_s, output_bytes=output_bytes, tail_bytes=tail_bytes)


def supervise(proc: subprocess.Popen[bytes], start: float, *, timeout_s: float, output_bytes: int,
              tail_bytes: int) -> Bounded:
    """The bounds of `run_bounded` on a process already started (stdout+stderr a pipe, a
    session of its own), its run counted from `start` (a parked launcher's go,
    tasks/sandbox/cgroup.py)."""
    argv = proc.args if isinstance(proc.args, list) else [str(proc.args)]
    tail: deque[bytes] = deque()
    state = {"total": 0, "kept": 0, "exceeded": False}

    def kill() -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def pump() -> None:
        assert proc.stdout is not None
        while chunk := proc.stdout.read1(65536):
            state["total"] += len(chunk)
            tail.append(chunk)
            state["kept"] += len(chunk)
            while state["kept"] - len(tail[0]) >= tail_bytes:
                state["kept"] -= len(tail.popleft())
            if state["total"] > output_bytes and not state["exceeded"]:
                state["exceeded"] = True
                kill()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    timed_out = not _wait(proc, timeout_s)
    if timed_out:
        kill()
        if not _wait(proc, KILL_GRACE_S):  # stuck in the kernel: give up on it, not on the replay
            raise Unkillable(f"{argv[0]} (pid {proc.pid}) survived SIGKILL for {KILL_GRACE_S} s")
    kill()  # children left behind in the group die with the run
    reader.join(timeout=5)
    data = b"".join(tail)[-tail_bytes:]
    return Bounded(
        exit_code=proc.returncode,
        duration_s=time.monotonic() - start,
        output_tail=data,
        timed_out=timed_out,
        output_exceeded=bool(state["exceeded"]),
    )


def _wait(proc: subprocess.Popen[bytes], timeout_s: float) -> bool:
    """Whether `proc` exited within `timeout_s` (then it is reaped).

    Sleeps on a pidfd, which wakes the moment the process exits. `Popen.wait(timeout)`
    instead polls with sleeps that grow to 50 ms, so a run was noticed ~20 ms after it had
    ended (on average; up to 50 ms), a large part of the local backend's overhead.
    """
    try:
        pidfd = os.pidfd_open(proc.pid)  # not yet reaped: the pid cannot have been reused
    except OSError:  # no pidfd (Linux < 5.3, or a seccomp filter): the polling wait
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return False
        return True
    try:
        poller = select.poll()  # not select(): it fails on descriptors past FD_SETSIZE
        poller.register(pidfd, select.POLLIN)
        deadline = time.monotonic() + timeout_s
        # In slices of at most a day: poll() takes milliseconds in a C int (about 24 days),
        # and never negative, which would mean no timeout at all.
        while not poller.poll(max(0.0, min(deadline - time.monotonic(), 86_400.0)) * 1000):
            if time.monotonic() >= deadline:
                return False
    finally:
        os.close(pidfd)
    proc.wait()  # exited: returns at once
    return True
