"""A run's output, read while the run goes on (fresh runs and fast mode alike)."""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from collections.abc import Callable
from typing import Any


class _Pump:
    """Reads a container's multiplexed output stream, keeping a bounded tail, and calls
    `on_exceeded` once when the total passes the bound.

    `on_exceeded` runs on a thread of its own while reading goes on: a kill done through
    the engine (an exec in fast mode) can wait on the engine copying this very stream,
    which would never happen if the reader stopped to wait for it."""

    def __init__(self, sock: Any, output_bytes: int, tail_bytes: int, on_exceeded: Callable[[], None]) -> None:
        self.sock, self.output_bytes, self.tail_bytes, self.on_exceeded = sock, output_bytes, tail_bytes, on_exceeded
        self.tail: deque[bytes] = deque()
        self.kept = self.total = 0
        self.exceeded = False
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        from docker.utils.socket import frames_iter

        try:
            for _stream, chunk in frames_iter(self.sock, tty=False):
                self.total += len(chunk)
                self.tail.append(chunk)
                self.kept += len(chunk)
                while self.kept - len(self.tail[0]) >= self.tail_bytes:
                    self.kept -= len(self.tail.popleft())
                if self.total > self.output_bytes and not self.exceeded:
                    self.exceeded = True
                    threading.Thread(target=self.on_exceeded, daemon=True).start()
        except OSError:
            pass  # the container went away: the socket closed

    def join(self, timeout: float | None) -> bool:
        """Wait for the end of the stream; True if it ended."""
        self.thread.join(timeout)
        return not self.thread.is_alive()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
        self.thread.join(5)

    @property
    def output(self) -> str:
        return b"".join(self.tail)[-self.tail_bytes:].decode("utf-8", errors="replace")
