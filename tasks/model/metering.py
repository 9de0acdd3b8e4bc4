"""What calls to a model spent, and where they stop: the one budget of every model call the
harness makes or forwards (the model channel of a generation run, tasks/sandbox/channel.py;
the curate judge and crossval's review, tasks/curate/judge.py `ModelCalls`).

A `Meter` admits a request while its `Budget` is not spent and adds the `usage` that an
OpenAI-compatible response reports. Tokens are known only once a response is back, so
requests admitted concurrently before the budget ran out can take the total past
`max_total_tokens`; none is admitted after. A response that should carry usage and does not
cannot be metered: under a token budget the meter then admits nothing more, so an endpoint
that leaves usage out cannot spend past the budget unseen.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Usage:
    """Requests sent, and the tokens the endpoint reported for them."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


@dataclass(frozen=True)
class Budget:
    """Where calls stop (None: no limit on that)."""

    max_requests: int | None = None
    max_total_tokens: int | None = None

    def spent(self, usage: Usage) -> bool:
        return ((self.max_requests is not None and usage.requests >= self.max_requests)
                or (self.max_total_tokens is not None and usage.total_tokens >= self.max_total_tokens))


class Meter:
    """A budget and what was spent against it, shared by threads."""

    def __init__(self, budget: Budget = Budget()) -> None:
        self.budget = budget
        self._lock = threading.Lock()
        self._usage = Usage()
        self._unmetered = False

    @property
    def usage(self) -> Usage:
        with self._lock:
            return self._usage

    @property
    def exhausted(self) -> bool:
        """No request will be admitted any more."""
        with self._lock:
            return self._unmetered or self.budget.spent(self._usage)

    def admit(self) -> bool:
        """Count a request in if the budget allows one more."""
        with self._lock:
            if self._unmetered or self.budget.spent(self._usage):
                return False
            u = self._usage
            self._usage = Usage(u.requests + 1, u.prompt_tokens, u.completion_tokens, u.total_tokens)
            return True

    def record(self, usage: object, expected: bool = True) -> bool:
        """Add a response's `usage` object (a mapping); `expected`: the response should have
        carried one. False when it could not be metered under a token budget (from now on,
        nothing is admitted)."""
        counts = [_count(usage, k) for k in ("prompt_tokens", "completion_tokens", "total_tokens")]
        with self._lock:
            u = self._usage
            self._usage = Usage(u.requests, u.prompt_tokens + counts[0], u.completion_tokens + counts[1],
                                u.total_tokens + (counts[2] or counts[0] + counts[1]))
            if expected and not isinstance(usage, Mapping) and self.budget.max_total_tokens is not None:
                self._unmetered = True
                return False
            return True


def _count(usage: object, key: str) -> int:
    value = usage.get(key) if isinstance(usage, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
