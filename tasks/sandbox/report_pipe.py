"""The report channel: what a run writes to `$TESTPRISM_JUNIT`, streamed out as it is written.

A run's report used to be a file the harness read after the run. The run's code is the
attacker's (a candidate patch runs in the same process as the checks), so the last word was
the attacker's: an exit handler that rewrote the report after the runner wrote it was read
as the runner's. Here the report's path is a named pipe (FIFO) that the harness opened
before the run started, and a thread of the harness reads every byte written to it, in
order, as it is written. Nothing written can be taken back: a rewrite after the runner's
report (an exit handler opening the path again) or before it (code run at import) arrives
as a second document behind or ahead of the first, which no reader accepts
(tasks/execution/junit.py: `E`/report_unreadable). The harness also holds a write end of
its own until the run's processes are gone, so a writer closing the pipe never ends the
stream early and the reader never spins on an end-of-file.

What stays possible is said in SECURITY.md ("Labels"): code in the runner's process can
change what the runner writes before it writes it; it cannot change what was written.

Some runners do not write through the path: CTest (`--output-junit`) writes a temporary
file beside it and renames it over the path. A run whose pipe received nothing and whose
path now holds a regular file hands back that file, read after the run without following
a link, as before the pipe: for such a runner the report is only as strong as a file, and
what holds is the cross-check of report, log and exit status (tasks/execution/crosscheck.py).

The pipe is made in a workspace the harness filled, at `out/junit.xml`, without following
links (the harness made `out/` a moment before; the run has not started). A run that swaps
`out/` or the pipe for a link hands back nothing: the file is never read through a link.
Backends whose workspace is not on this host (docker's archive mode) read the file after
the run as before; tasks/execution/crosscheck.py's checks hold for them too.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
from pathlib import Path

from testprism.tasks.sandbox.base import REPORT_MAX_BYTES
from testprism.tasks.sandbox.nofollow import read_file
from testprism.tasks.sandbox.workspace import SETTLED_MTIME

#: how long `collected` waits for the stream's end once the harness's own write end is
#: closed (every process of the run is gone by then: a pipe still open is a process that
#: escaped, and what it writes later is not waited for)
DRAIN_GRACE_S = 2.0
_CHUNK = 65536


class ReportPipe:
    """The named pipe at `ws/out/junit.xml` and the thread that reads it (module docstring).
    Make it after the workspace is filled and before the run starts; call `collected`
    once the run's processes are gone (it is idempotent, and `close` on every path)."""

    def __init__(self, ws: Path) -> None:
        self._ws = ws
        out = os.open(ws / "out", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            os.mkfifo("junit.xml", 0o666, dir_fd=out)
            os.chmod("junit.xml", 0o666, dir_fd=out)  # the umask took write access from others
            os.utime("junit.xml", (SETTLED_MTIME, SETTLED_MTIME), dir_fd=out, follow_symlinks=False)
            self._read = os.open("junit.xml", os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW, dir_fd=out)
            self._hold: int | None = os.open("junit.xml", os.O_WRONLY | os.O_NOFOLLOW, dir_fd=out)
        finally:
            os.close(out)
        self._wake_read, self._wake_write = os.pipe()
        self._chunks: list[bytes] = []
        self._size = 0
        self._result: bytes | None = None
        self._done = False
        self._thread = threading.Thread(target=self._drain, name="report-pipe", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        """Read until the stream ends or the harness stops waiting; keep REPORT_MAX_BYTES + 1
        bytes at most (one more than a reader accepts: a report past the bound stays past it)."""
        poller = select.poll()  # not select(): a busy harness holds descriptors past 1024
        poller.register(self._read, select.POLLIN)
        poller.register(self._wake_read, select.POLLIN)
        while True:
            ready = {fd for fd, _ in poller.poll()}
            woken = self._wake_read in ready  # the harness stops waiting: what is there now, then no more
            for _ in range(REPORT_MAX_BYTES // _CHUNK + 2 if woken else 1):
                try:
                    data = os.read(self._read, _CHUNK)
                except BlockingIOError:
                    break
                if not data:
                    return  # every write end closed: the stream is whole
                room = REPORT_MAX_BYTES + 1 - self._size
                if room > 0:
                    self._chunks.append(data[:room])
                    self._size += min(len(data), room)
            if woken:
                return

    def collected(self) -> bytes | None:
        """Everything written to the pipe during the run, or None when nothing was (no
        report). Call after the run's processes are gone."""
        if not self._done:
            self._done = True
            if self._hold is not None:
                os.close(self._hold)
                self._hold = None
            self._thread.join(DRAIN_GRACE_S)
            if self._thread.is_alive():
                os.write(self._wake_write, b"x")
                self._thread.join()
            self._result = b"".join(self._chunks) or self._renamed_over()
            self._close_fds()
        return self._result

    def _renamed_over(self) -> bytes | None:
        """The regular file a runner renamed over the pipe (module docstring), or None."""
        return read_file(self._ws, ("out", "junit.xml"), REPORT_MAX_BYTES + 1)

    def close(self) -> None:
        """Release the pipe's descriptors and thread (what was collected is kept)."""
        self.collected()

    def _close_fds(self) -> None:
        for fd in (self._read, self._wake_read, self._wake_write):
            with contextlib.suppress(OSError):
                os.close(fd)

    def __enter__(self) -> ReportPipe:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
