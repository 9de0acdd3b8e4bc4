"""The model channel: a generation run's one way out of its sandbox, to one chat endpoint,
with the harness's key, metered and capped.

A generation run's agent needs its OpenAI-compatible endpoint, but a sandbox has no
network, and the agent must not hold the key (it would leave with the suite, or be spent
past any budget). So the harness listens on a Unix socket, which the backend makes appear
inside the sandbox (tasks/sandbox/model_access.py), and forwards each HTTP request to the
ONE upstream base URL it was given, only for paths under that base's path (anything else:
404), with only the headers an API call needs and `Authorization: Bearer <key>` added
here. It never follows a redirect and ignores proxy variables, so it contacts nothing but
that upstream.

It meters what it forwards with the harness's one meter (tasks/model/metering.py): requests,
and the `usage` that OpenAI-compatible responses report (summed; for `stream: true` it asks
for the final usage chunk with `stream_options.include_usage` and reads it while relaying the
events as they come). Past
the budget it answers 429 `budget_exhausted` without contacting upstream. Tokens are known
only once a response is back, so requests admitted concurrently before the budget ran out
can take the total past `max_total_tokens`; none is admitted after. A successful POST whose
response carries no usage cannot be metered: with a token budget, it closes the channel.

It records what it forwards when given a transcript (tasks/sandbox/transcript.py): each
request body and the response relayed for it, with that exchange's tokens, never a header
(the key travels in one).

Reachability: the socket's folder is fresh, 0711 (not listable), the socket 0666, so the
sandbox's random uid can connect (SECURITY.md says who else could).
"""

from __future__ import annotations

import json
import logging
import shutil
import socketserver
import tempfile
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from types import TracebackType
from urllib.parse import unquote

import httpx

from testprism.tasks.model import bounded_json
from testprism.tasks.model.metering import Budget, Meter, Usage
from testprism.tasks.sandbox.transcript import Transcript, parsed

log = logging.getLogger(__name__)

SOCKET_NAME = "model.sock"
#: beside the socket: the upstream's base path, which the sandbox's base URL mirrors
BASE_PATH_NAME = "base-path"
REQUEST_MAX_BYTES = 32 * 1024 * 1024
RESPONSE_MAX_BYTES = 64 * 1024 * 1024
#: what the sandbox may say to upstream besides the body; everything else is dropped
FORWARDED_HEADERS = ("content-type", "accept")
_SSE_LINE_MAX = 4 * 1024 * 1024


class ModelChannel:
    """A forwarder to `upstream` (a base URL such as `http://127.0.0.1:8000/v1`) on a Unix
    socket; use it as a context manager, pass `socket_path` as `RunRequest.channel`."""

    def __init__(self, upstream: str, api_key: str | None, budget: Budget = Budget(), *,
                 timeout_s: float = 600.0, directory: Path | None = None,
                 transcript: Transcript | None = None) -> None:
        self.upstream = httpx.URL(upstream)
        if self.upstream.scheme not in ("http", "https") or not self.upstream.host:
            raise ValueError(f"model channel: upstream {upstream!r} is not an http(s) base URL")
        self.base_path = self.upstream.path.rstrip("/")
        self.budget = budget
        self._api_key = api_key
        self.transcript = transcript
        self._client = httpx.Client(timeout=httpx.Timeout(timeout_s, connect=30.0), trust_env=False,
                                    follow_redirects=False)
        self.meter = Meter(budget)
        self._folder = Path(tempfile.mkdtemp(prefix="testprism-channel-", dir=directory))
        self.socket_path = self._folder / SOCKET_NAME
        try:
            self._folder.chmod(0o711)
            (self._folder / BASE_PATH_NAME).write_text(self.base_path)
            (self._folder / BASE_PATH_NAME).chmod(0o644)
            self._server = _Server(str(self.socket_path), _Handler)
            self.socket_path.chmod(0o666)
        except BaseException:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._client.close()
            raise
        self._server.channel = self
        self._thread = threading.Thread(target=self._server.serve_forever, name="model-channel", daemon=True)
        self._thread.start()
        log.info("model channel to %s on %s (budget %s)", self.upstream, self.socket_path, budget)

    def __enter__(self) -> ModelChannel:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Stop listening, wait for the server loop, remove the socket's folder."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
        self._client.close()
        shutil.rmtree(self._folder, ignore_errors=True)
        if self.transcript is not None:
            self.transcript.close()
        log.info("model channel closed: %s", self.usage)

    @property
    def usage(self) -> Usage:
        return self.meter.usage

    @property
    def exhausted(self) -> bool:
        return self.meter.exhausted

    # -- one request (from the server's threads) -----------------------------------------

    def _meter(self, usage: object, expected: bool) -> None:
        """Add a response's `usage` object; `expected`: the response should have carried one."""
        if not self.meter.record(usage, expected):
            log.warning("model channel: a response without usage cannot be metered; closing the channel")

    def _allowed(self, path: str) -> bool:
        """Under the upstream's base path, with no `.` or `..` segment (raw or escaped)."""
        route = path.split("?", 1)[0]
        if not path.isascii() or not route.startswith(self.base_path + "/") or "#" in path or "\\" in path:
            return False
        segments = unquote(route).split("/")[1:]
        return all(s not in ("", ".", "..") for s in segments[:-1]) and segments[-1] not in (".", "..")

    def forward(self, handler: _Handler) -> None:
        """Answer one request the sandbox sent."""
        if not self._allowed(handler.path):
            return _reply(handler, 404, "not_found", f"only {self.base_path}/... is forwarded")
        if handler.headers.get("Transfer-Encoding"):
            return _reply(handler, 411, "length_required", "send a Content-Length")
        try:
            length = int(handler.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0:
            handler.close_connection = True
            return _reply(handler, 400, "bad_request", "Content-Length is not a length")
        if length > REQUEST_MAX_BYTES:
            handler.close_connection = True
            return _reply(handler, 413, "too_large", f"requests are at most {REQUEST_MAX_BYTES} bytes")
        sent = handler.rfile.read(length)
        if not self.meter.admit():
            return _reply(handler, 429, "budget_exhausted", f"the channel's budget is spent: {self.usage}")
        streaming, body = _ask_stream_usage(sent)
        headers = {k: v for k in FORWARDED_HEADERS if (v := handler.headers.get(k))}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        url = self.upstream.copy_with(raw_path=handler.path.encode("ascii"))
        assert (url.scheme, url.host, url.port) == (self.upstream.scheme, self.upstream.host, self.upstream.port)
        request = self._client.build_request(handler.command, url, headers=headers, content=body)
        try:
            response = self._client.send(request, stream=True)
        except httpx.HTTPError as exc:
            log.warning("model channel: upstream %s: %s", self.upstream, exc)
            self._record(handler.path, 502, sent, {"error": str(exc)}, None)
            return _reply(handler, 502, "upstream_unavailable", str(exc))
        try:
            expected = handler.command == "POST" and response.is_success

            def settle(usage: object, text: str) -> None:
                self._meter(usage, expected)
                self._record(handler.path, response.status_code, sent, {"stream": True, "content": text}, usage)

            if streaming and response.headers.get("content-type", "").startswith("text/event-stream"):
                _relay_events(handler, response, settle)
            else:
                self._relay_body(handler, response, expected, sent)
        finally:
            response.close()

    def _record(self, path: str, status: int, request: bytes, response: object, usage: object) -> None:
        if self.transcript is not None:
            self.transcript.record(path, status, request, response, usage)

    def _relay_body(self, handler: _Handler, response: httpx.Response, expected: bool, sent: bytes) -> None:
        data = b""
        try:
            for chunk in response.iter_bytes():
                data += chunk
                if len(data) > RESPONSE_MAX_BYTES:
                    self._meter(None, expected)
                    self._record(handler.path, 502, sent, {"error": f"past {RESPONSE_MAX_BYTES} bytes"}, None)
                    return _reply(handler, 502, "upstream_too_large", f"past {RESPONSE_MAX_BYTES} bytes")
        except httpx.HTTPError as exc:
            self._meter(None, expected)
            self._record(handler.path, 502, sent, {"error": str(exc)}, None)
            return _reply(handler, 502, "upstream_unavailable", str(exc))
        try:
            usage = json.loads(data).get("usage")
        except (ValueError, AttributeError):
            usage = None
        self._meter(usage, expected)
        self._record(handler.path, response.status_code, sent, parsed(data), usage)
        handler.send_response(response.status_code)
        handler.send_header("Content-Type", response.headers.get("content-type", "application/json"))
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)


def _ask_stream_usage(body: bytes) -> tuple[bool, bytes]:
    """Whether the request asks for a stream, and its body, asking for the final usage chunk
    when it does (the only way a stream says what it cost)."""
    try:  # the sandbox's body: within the JSON bounds, or forwarded as it is
        payload = bounded_json.loads(body, max_bytes=REQUEST_MAX_BYTES) if body else None
    except ValueError:
        return False, body
    if not (isinstance(payload, dict) and payload.get("stream") is True):
        return False, body
    options = payload.get("stream_options")
    payload["stream_options"] = {**(options if isinstance(options, dict) else {}), "include_usage": True}
    return True, json.dumps(payload).encode()


def _relay_events(handler: _Handler, response: httpx.Response, meter: Callable[[object, str], None]) -> None:
    """Relay an event stream chunk by chunk (chunked encoding) and `meter` the last `usage`
    object its `data:` lines carried (None if none did), with the text their deltas
    assembled (bounded), before ending it, so the stream's end means it is counted."""
    handler.send_response(response.status_code)
    handler.send_header("Content-Type", response.headers["content-type"])
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    usage, pending, listening, text, kept = None, b"", True, [], 0
    try:
        for chunk in response.iter_bytes():
            if listening:
                listening = _send_chunk(handler, chunk)
            *lines, pending = (pending + chunk).split(b"\n")
            pending = pending if len(pending) <= _SSE_LINE_MAX else b""
            for line in lines:
                usage = _event_usage(line) or usage
                if kept < _SSE_LINE_MAX:  # the text the transcript keeps of a stream, bounded
                    text.append(_event_text(line))
                    kept += len(text[-1])
    except httpx.HTTPError as exc:  # the stream broke: the client sees it end unterminated
        log.warning("model channel: upstream stream broke: %s", exc)
        listening = False
    meter(_event_usage(pending) or usage, "".join(text))
    if listening:
        handler.wfile.write(b"0\r\n\r\n")
    else:
        handler.close_connection = True


def _send_chunk(handler: _Handler, chunk: bytes) -> bool:
    """Whether the sandbox still listens. When it hangs up mid-stream the relay goes on
    reading upstream to its usage chunk: the tokens are spent whether or not anyone reads
    them, and a client that hung up early must not stream for free."""
    try:
        handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        handler.wfile.flush()
        return True
    except OSError:
        return False


def _event_usage(line: bytes) -> object:
    if not line.startswith(b"data:"):
        return None
    try:
        event = json.loads(line[5:])
    except ValueError:  # `[DONE]`, or not JSON
        return None
    return event.get("usage") if isinstance(event, dict) and isinstance(event.get("usage"), dict) else None


def _event_text(line: bytes) -> str:
    """The content delta of one event line ("" when it carries none)."""
    if not line.startswith(b"data:"):
        return ""
    try:
        event = json.loads(line[5:])
        delta = event["choices"][0]["delta"].get("content")
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return ""
    return delta if isinstance(delta, str) else ""


def _reply(handler: _Handler, status: int, kind: str, message: str) -> None:
    """An OpenAI-style JSON error of the channel's own."""
    data = json.dumps({"error": {"type": kind, "message": message, "code": kind}}).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


class _Server(socketserver.ThreadingUnixStreamServer):
    """socketserver's default backlog is 5: a Unix socket refuses the sixth waiting connect
    with EAGAIN instead of queueing it, so an agent's burst of parallel requests (or several
    sandboxes sharing a channel) would fail before the budget is even consulted."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = 128
    channel: ModelChannel


class _Handler(BaseHTTPRequestHandler):
    """HTTP/1.1 with keep-alive (the openai client reuses connections); every answer has a
    length or is chunked."""

    protocol_version = "HTTP/1.1"
    timeout = 900  # an idle kept-alive connection does not hold a thread forever
    server: _Server

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self._forward()

    def do_POST(self) -> None:  # noqa: N802
        self._forward()

    def _forward(self) -> None:
        try:
            self.server.channel.forward(self)
        except (BrokenPipeError, ConnectionResetError):  # the sandbox hung up (killed, timed out)
            self.close_connection = True

    def address_string(self) -> str:  # a Unix socket's peer has no address
        return "sandbox"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's signature
        log.debug("model channel: " + format, *args)


def sandbox_base_path(socket_path: Path) -> str:
    """The upstream base path of the channel listening at `socket_path` (for the sandbox's
    base URL, which mirrors it); read from beside the socket, so a backend in another
    process of this host finds it too."""
    return (socket_path.parent / BASE_PATH_NAME).read_text()

