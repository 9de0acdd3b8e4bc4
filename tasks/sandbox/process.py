"""Run a host process with a wall-clock limit and an output bound, killing its whole
process group on either. Shared by backends that drive a local process."""

from __future__ import annotations

import os
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
    user: int | None = None,
    pass_fds: Sequence[int] = (),
) -> Bounded:
    """Run argv in a new session with stdout+stderr merged; keep the last `tail_bytes`.

    Past `timeout_s` or `output_bytes` the whole process group gets SIGKILL, so a suite
    cannot keep a run alive by forking or flooding the pipe.
    """
    start = time.monotonic()
    proc = subprocess.Popen(
        list(argv), cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, start_new_session=True, pass_fds=tuple(pass_fds),
        user=user, group=user, extra_groups=[] if user is not None else None,
    )
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
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill()
        try:
            proc.wait(timeout=KILL_GRACE_S)
        except subprocess.TimeoutExpired as exc:  # stuck in the kernel: give up on it, not on the replay
            raise Unkillable(f"{argv[0]} (pid {proc.pid}) survived SIGKILL for {KILL_GRACE_S} s") from exc
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
