"""Selecting the largest items of a collection without sorting all of it."""

from __future__ import annotations

import heapq
from typing import Any, Callable, Iterable, Iterator, List, Optional, Tuple

KeyFunc = Optional[Callable[[Any], Any]]

_MISSING = object()


def _decorate(items: Iterable[Any], key: KeyFunc) -> Iterator[Tuple[Any, ...]]:
    """Yield ``(key(item), item)`` pairs; heap entries are ordered by these."""
    keyfunc = (lambda item: item) if key is None else key
    for item in items:
        yield keyfunc(item), item


def top_k(items: Iterable[Any], k: int, *, key: KeyFunc = None) -> List[Any]:
    """Return the ``k`` largest items of ``items`` as a list, largest first.

    ``items`` may be any iterable; it is consumed once.  ``key`` extracts the
    value to compare, as in :func:`sorted`.  If there are fewer than ``k``
    items, all of them are returned; ``k <= 0`` gives an empty list.
    """
    if k <= 0:
        return []
    heap: list = []  # min-heap of the best k entries seen so far
    for entry in _decorate(items, key):
        if len(heap) < k:
            heapq.heappush(heap, entry)
        elif entry > heap[0]:
            heapq.heapreplace(heap, entry)
    return [entry[-1] for entry in sorted(heap, reverse=True)]


def largest(items: Iterable[Any], *, key: KeyFunc = None, default: Any = _MISSING) -> Any:
    """Return the largest item of ``items`` (by ``key``).

    An empty iterable returns ``default`` if given, else raises ``ValueError``.
    """
    best = top_k(items, 1, key=key)
    if best:
        return best[0]
    if default is _MISSING:
        raise ValueError("largest() arg is an empty iterable")
    return default
