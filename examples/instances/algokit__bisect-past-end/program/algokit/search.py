"""Binary-search helpers over sorted sequences.

These mirror :mod:`bisect`, but every helper accepts a ``key`` callable and
works on any indexable sequence (lists, tuples, ``range`` objects).
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

KeyFunc = Optional[Callable[[Any], Any]]


def _identity(value: Any) -> Any:
    return value


def insertion_point(
    seq: Sequence[Any],
    x: Any,
    lo: int = 0,
    hi: Optional[int] = None,
    *,
    key: KeyFunc = None,
) -> int:
    """Return the leftmost index at which ``x`` can be inserted into ``seq``.

    ``seq`` must be sorted (by ``key`` if one is given).  Only ``seq[lo:hi]``
    is searched; ``hi`` defaults to the end of the sequence.  ``key`` is
    applied to the elements of ``seq`` but not to ``x``, the same convention
    as :func:`bisect.bisect_left`.
    """
    if lo < 0:
        raise ValueError("lo must be >= 0")
    if hi is None:
        hi = len(seq) - 1
    keyfunc = _identity if key is None else key
    while lo < hi:
        mid = (lo + hi) // 2
        if keyfunc(seq[mid]) < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


def contains(seq: Sequence[Any], x: Any, *, key: KeyFunc = None) -> bool:
    """Return True if ``x`` occurs in the sorted sequence ``seq``."""
    keyfunc = _identity if key is None else key
    i = insertion_point(seq, x, key=key)
    return i < len(seq) and keyfunc(seq[i]) == x


def insort(seq: list, item: Any, *, key: KeyFunc = None) -> int:
    """Insert ``item`` into the sorted list ``seq`` in place and return its index.

    A new item goes before any existing items that compare equal to it.
    """
    keyfunc = _identity if key is None else key
    i = insertion_point(seq, keyfunc(item), key=key)
    seq.insert(i, item)
    return i
