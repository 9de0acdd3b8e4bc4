"""Progress reporting, one small interface: flows report, the CLI decides how to show it."""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator, Protocol


class ProgressSink(Protocol):
    def start(self, total: int, description: str) -> None: ...
    def advance(self, n: int) -> None: ...


class _Silent:
    def start(self, total: int, description: str) -> None:
        pass

    def advance(self, n: int) -> None:
        pass


_current: ContextVar[ProgressSink] = ContextVar("testprism_progress", default=_Silent())


def current() -> ProgressSink:
    return _current.get()


@contextmanager
def reporting_to(sink: ProgressSink) -> Iterator[None]:
    token = _current.set(sink)
    try:
        yield
    finally:
        _current.reset(token)
