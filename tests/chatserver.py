"""A chat-completions server on 127.0.0.1 for the judge's tests (tests/test_judge.py,
tests/test_curate.py): scripted per marker in the prompt, it records what it saw. No
traffic leaves loopback."""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

MARKER = re.compile(r"\[\[script:([a-z0-9-]+)\]\]")
TIMEOUT_S = 0.5


@dataclass
class Script:
    """What the fake endpoint does per marker, and what it saw."""

    requests: Counter = field(default_factory=Counter)  # marker → requests received
    in_flight: int = 0
    max_in_flight: int = 0
    authorization: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def total(self) -> int:
        return sum(self.requests.values())


def answer(content: str | None, refusal: str | None = None, finish_reason: str = "stop") -> dict:
    return {"id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": "judge-test",
            "choices": [{"index": 0, "finish_reason": finish_reason,
                         "message": {"role": "assistant", "content": content, "refusal": refusal}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def scored(score: int) -> dict:
    return answer(json.dumps({"score": score, "rationale": f"scored {score}"}))


def respond(marker: str, seen: int) -> tuple[int, dict, float]:
    """(status, body, seconds to sleep first) for the `seen`-th request (from 1) of a marker."""
    if marker.startswith("score-"):
        return 200, scored(int(marker.removeprefix("score-"))), 0.0
    if marker == "fenced":
        return 200, answer('```json\n{"score": 85, "rationale": "fenced"}\n```'), 0.0
    if marker == "strategy":  # rsi's llm proposer (tests/test_rsi.py): a strategy in a fence, out of bounds
        return 200, answer('Next:\n```json\n{"rounds": 99, "agent_steps": 7.4, "model": "other"}\n```'), 0.0
    if marker == "malformed":
        return 200, answer("These tests look fine to me."), 0.0
    if marker == "out-of-range":
        return 200, answer('{"score": 140, "rationale": "very good"}'), 0.0
    if marker == "refuse":
        return 200, answer(None, refusal="I cannot help with that."), 0.0
    if marker == "rate-limited-once":
        if seen == 1:
            return 429, {"error": {"message": "slow down", "type": "rate_limit", "code": "rate_limit"}}, 0.0
        return 200, scored(90), 0.0
    if marker == "unavailable":
        return 503, {"error": {"message": "overloaded", "type": "server_error", "code": None}}, 0.0
    if marker == "unauthorized":
        return 401, {"error": {"message": "bad key", "type": "auth", "code": "invalid_api_key"}}, 0.0
    if marker == "hang":
        return 200, scored(90), TIMEOUT_S * 4
    if marker.startswith("slow-"):
        return 200, scored(90), 0.3
    raise AssertionError(f"no script for {marker!r}")


def handler_for(script: Script) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # quiet: pytest shows what matters
            pass

        def do_POST(self) -> None:
            assert self.path == "/v1/chat/completions", self.path
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            prompt = "\n".join(m["content"] for m in body["messages"])
            marker = MARKER.search(prompt).group(1)
            with script.lock:
                script.requests[marker] += 1
                seen = script.requests[marker]
                script.authorization.add(self.headers.get("Authorization", ""))
                script.in_flight += 1
                script.max_in_flight = max(script.max_in_flight, script.in_flight)
            try:
                status, payload, delay = respond(marker, seen)
                time.sleep(delay)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout): expected
                pass
            finally:
                with script.lock:
                    script.in_flight -= 1

    return Handler


@pytest.fixture
def endpoint() -> Iterator[tuple[str, Script]]:
    """A chat-completions server on 127.0.0.1 (an ephemeral port) and its record."""
    script = Script()
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(script))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", script
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
