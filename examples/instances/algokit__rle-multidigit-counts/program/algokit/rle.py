"""Run-length encoding of sequences and strings.

``encode("aaab")`` gives ``[("a", 3), ("b", 1)]``.  The string form writes each
run as its decimal count followed by the character: ``encode_str("aaab")`` gives
``"3a1b"``.  Because counts are written in digits, the characters of an encoded
string must not be decimal digits themselves.
"""

from __future__ import annotations

from itertools import groupby
from typing import Any, Iterable, List, Tuple

Run = Tuple[Any, int]


def encode(items: Iterable[Any]) -> List[Run]:
    """Return the runs of ``items`` as ``(value, count)`` pairs."""
    return [(value, sum(1 for _ in group)) for value, group in groupby(items)]


def decode(runs: Iterable[Run]) -> List[Any]:
    """Inverse of :func:`encode`: expand ``(value, count)`` pairs into a list."""
    out: List[Any] = []
    for value, count in runs:
        if count <= 0:
            raise ValueError(f"run count must be positive, got {count}")
        out.extend([value] * count)
    return out


def encode_str(text: str) -> str:
    """Encode ``text`` as ``<count><char>`` pairs, e.g. ``"aaab"`` -> ``"3a1b"``."""
    for ch in text:
        if ch.isdigit():
            raise ValueError(f"cannot run-length encode the digit {ch!r}")
    return "".join(f"{count}{ch}" for ch, count in encode(text))


def decode_str(encoded: str) -> str:
    """Inverse of :func:`encode_str`: ``"3a1b"`` -> ``"aaab"``.

    Raises ``ValueError`` for malformed input: a character without a count,
    a count without a character after it, or a zero count.
    """
    out = []
    i = 0
    while i < len(encoded):
        ch = encoded[i]
        if not ch.isdigit():
            raise ValueError(f"expected a count at position {i}, got {ch!r}")
        count = int(ch)
        if count == 0:
            raise ValueError(f"zero count at position {i}")
        if i + 1 >= len(encoded):
            raise ValueError("count at end of input has no character")
        out.append(encoded[i + 1] * count)
        i += 2
    return "".join(out)
