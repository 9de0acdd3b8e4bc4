"""Which process made a file: `<pid>.<start time>`, a name that stays unique when pids are
reused, so that what a killed process left (a store's temporary part, a workspace, a
container) can be told from what a live one is still writing. Linux `/proc` only."""

from __future__ import annotations

import os
from pathlib import Path


def start_time(pid: int) -> str:
    """The start time of process `pid` in clock ticks since boot, "" when it is gone: with
    the pid it names a process stably (pids are reused)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return text.rsplit(")", 1)[1].split()[19]  # field 22, counted after the command name


def process_tag(pid: int | None = None) -> str:
    """`<pid>.<start time>` of this process (or of `pid`)."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}.{start_time(pid)}"


def alive(tag: str) -> bool:
    """Whether the process a `process_tag` names is still running."""
    pid, _, started = tag.partition(".")
    return pid.isdigit() and bool(started) and start_time(int(pid)) == started
