"""A model channel's transcript: every request it forwarded and the response it relayed,
one JSON object a line, gzip, in a file of the harness's own (never where the sandbox can
reach it).

What the agent said to its model is its trajectory, the thing a generator is fine-tuned on
(SWEPatchTest RQ2), so the channel keeps it as it passes: the request's JSON body as the
sandbox sent it (headers are never written: the key travels in one), the response's JSON
(for a stream, the text its deltas assembled), the status and the tokens upstream reported
for that exchange. The API key is scrubbed from every line before it is written, should
upstream ever echo it. The file is bounded: past `max_bytes` of lines it records one
`truncated` line and nothing more, so a sandbox cannot fill the harness's disk through it.
"""

from __future__ import annotations

import gzip
import json
import logging
import threading
from pathlib import Path
from typing import Any

from testprism.tasks.model import bounded_json

log = logging.getLogger(__name__)

#: uncompressed bytes of lines a transcript keeps, at most
TRANSCRIPT_MAX_BYTES = 256 * 1024 * 1024
#: what replaces the key wherever it would appear
REDACTED = "[redacted]"


def parsed(body: bytes) -> Any:
    """A body as JSON when it is JSON within the JSON bounds (tasks/model/bounded_json.py;
    its size is the channel's to bound), else as text (what a human would read of it): a
    request is the sandbox's, and one nested 60,000 deep passes json.loads' recursion limit."""
    try:
        return bounded_json.loads(body, max_bytes=len(body))
    except ValueError:
        return {"raw": body.decode("utf-8", errors="replace")}


class Transcript:
    """Thread-safe: a channel's server threads record into one file."""

    def __init__(self, path: Path, secret: str | None, max_bytes: int = TRANSCRIPT_MAX_BYTES) -> None:
        self.path = path
        self._secrets = [s for s in {secret, json.dumps(secret or "")[1:-1]} if s]
        self._max_bytes = max_bytes
        self._written = 0
        self._exchanges = 0
        self._truncated = False
        self._lock = threading.Lock()
        self._file = gzip.open(path, "wt", encoding="utf-8")

    @property
    def exchanges(self) -> int:
        with self._lock:
            return self._exchanges

    def record(self, path: str, status: int, request: bytes, response: Any, usage: object) -> None:
        """One exchange: `response` is its parsed body (or a stream's assembled text)."""
        counts = {k: (usage.get(k) if isinstance(usage, dict) and isinstance(usage.get(k), int) else None)
                  for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
        with self._lock:
            if self._truncated or self._file.closed:
                return
            self._exchanges += 1
            line = json.dumps({"exchange": self._exchanges, "path": path, "status": status,
                               "request": parsed(request), "response": response, "usage": counts},
                              ensure_ascii=False, sort_keys=True)
            for secret in self._secrets:
                line = line.replace(secret, REDACTED)
            if self._written + len(line) + 1 > self._max_bytes:
                self._truncated = True
                line = json.dumps({"truncated": True, "exchange": self._exchanges,
                                   "note": f"the transcript's bound ({self._max_bytes} bytes) is reached"})
                log.warning("model channel transcript %s: bound of %d bytes reached; later exchanges not kept",
                            self.path, self._max_bytes)
            self._file.write(line + "\n")
            self._written += len(line) + 1

    def close(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.close()


def read_transcript(path: Path) -> list[dict]:
    """The exchanges of a stored transcript, in order (the truncation line left out)."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [e for e in (json.loads(line) for line in fh if line.strip()) if not e.get("truncated")]
