"""JSON that a run handed back, read within bounds: the one reader of untrusted JSON.

Rewards, coverage reports, SWE-bench Pro's `output.json`, RSpec's and `go test -json`'s
events and an agent's requests are written by code under test, and the harness parses them
as root outside every limit. `json.loads` recurses once per nesting level: a document of
60,000 nested arrays raises RecursionError (not ValueError), which escaped the readers that
caught ValueError and failed a whole stage. And it builds whatever it is given: 8 MiB of
`[],` is 2.8 million lists.

So the bounds are checked on the bytes BEFORE anything is parsed, without recursion: at
most `max_bytes`; the strings are cut out (one regular expression, so a bracket inside a
string counts for nothing; no byte of a quote, backslash or bracket is ever part of another
character's UTF-8 sequence); what is left is scanned for the nesting depth (a running sum
over the brackets, in C: no Python loop per byte) and its values counted (every container
plus every comma, an upper bound of the values). Only a document within all three is
decoded as UTF-8 (RFC 8259) and handed to `json.loads`, whose recursion then stays under
`max_depth`. The scan holds two transient copies at most the document's size. Past a bound:
JSONTooLarge; not JSON: ValueError; both are ValueErrors, so a reader that treats ValueError
as "unreadable" needs no other case.
"""

from __future__ import annotations

import json
import re
from array import array
from itertools import accumulate
from typing import Any

#: bytes of a document (a run's report bound, tasks/sandbox/base.py REPORT_MAX_BYTES)
MAX_BYTES = 8 * 1024 * 1024
#: how deep arrays and objects may nest (the reports read here nest five levels at most)
MAX_DEPTH = 64
#: values a document may hold (containers and items): a coverage report of a large change
#: holds some hundred thousand line numbers; a million lists in memory are ~60 MiB
MAX_ELEMENTS = 1_000_000

#: a JSON string, escapes included (unrolled: no backtracking, linear in its length)
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
#: every byte that is neither a bracket nor a comma, deleted before counting
_OTHER = bytes(b for b in range(256) if b not in b"[]{},")
#: openers to +1, closers to -1 (as signed bytes), commas to 0
_SIGNS = bytes.maketrans(b"[{]},", b"\x01\x01\xff\xff\x00")


class JSONTooLarge(ValueError):
    """The document passes one of the reader's bounds (its message says which)."""


def loads(data: bytes | str, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH,
          max_elements: int = MAX_ELEMENTS) -> Any:
    """`data` parsed as JSON once it is known to be within the bounds (module docstring).
    Raises JSONTooLarge past a bound, ValueError (UnicodeDecodeError, JSONDecodeError) when
    it is not UTF-8 JSON."""
    raw = data.encode("utf-8", errors="surrogatepass") if isinstance(data, str) else data
    if len(raw) > max_bytes:
        raise JSONTooLarge(f"{len(raw)} bytes, over {max_bytes}")
    structure = _STRING.sub(b"", raw).translate(None, _OTHER)
    values = len(structure) - structure.count(b"]") - structure.count(b"}")
    if values > max_elements:
        raise JSONTooLarge(f"over {max_elements} values")
    signs = array("b", structure.translate(_SIGNS))
    if max(accumulate(signs), default=0) > max_depth:
        raise JSONTooLarge(f"arrays and objects nested over {max_depth} deep")
    del structure, signs
    return json.loads(raw.decode("utf-8"))
