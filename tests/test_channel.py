"""A generation run's two capabilities, under `local` (bubblewrap) and `docker` (fresh, fast
mode, which gives such runs a fresh container all the same, and archive mode): the model
channel (tasks/sandbox/channel.py: the one way out of the sandbox, to one chat endpoint,
with the harness's key, metered and capped) and what the run left behind
(tasks/sandbox/outputs.py: the suite under tmp/ and the patch to the program, read without
following a link). Every connection made here goes to loopback; the 10.0.0.1 probe is made
from inside a sandbox without network, so it never leaves the host."""

from __future__ import annotations

import ast
import io
import json
import os
import re
import shutil
import socket
import subprocess
import textwrap
import threading
import time
import tokenize
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

import testprism.tasks.sandbox as sandbox_module
from testprism.tasks.model.benchmark_format import EnvironmentSpec
from testprism.tasks.sandbox.base import Limits, RunRequest, SandboxBackend, SandboxUnavailable
from testprism.tasks.sandbox.channel import Budget, ModelChannel, Usage
from testprism.tasks.sandbox.model_access import RELAY_PORT, SANDBOX_SOCKET
from tests.conftest import open_backend
from tests.test_sandbox import survivors

BARE = EnvironmentSpec(python="3.11", packages=())
KEY = "sk-harness-0d5c1f"


@pytest.fixture(scope="module", params=["local", "docker", "docker-reused", "docker-archive"])
def backend(request, work) -> Iterator[SandboxBackend]:
    made = open_backend(request.param, work)
    yield made
    made.close()


@pytest.fixture(scope="module")
def env(backend) -> Path:
    return backend.prepare(BARE)


@pytest.fixture()
def tree(work_root) -> Path:
    root = work_root / f"tree-{os.getpid()}-{time.monotonic_ns()}"
    root.mkdir()
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "notes.txt").write_text("keep me\n")
    (root / "old.txt").write_text("delete me\n")
    (root / "tail.txt").write_text("no newline at the end")
    return root


def run_probe(backend, env, tree: Path, probe: str, channel: Path | None = None, **fields) -> object:
    """Run `probe` (Python, in the environment's interpreter) from the program root."""
    (tree / "probe.py").write_text(textwrap.dedent(probe))
    request = RunRequest(tree=tree, suite_folder=None, suite_files=(), command="python probe.py",
                         environment=env, limits=Limits(timeout_s=60.0), channel=channel, **fields)
    return backend.run(request)


#: the backends that can give a run a channel (archive mode cannot bind the host's socket:
#: test_archive_mode_refuses_a_channel)
WITH_CHANNEL = pytest.mark.parametrize("backend", ["local", "docker", "docker-reused"], indirect=True)


def chat(marker: str) -> str:
    return json.dumps({"model": "m", "messages": [{"role": "user", "content": f"[[script:{marker}]]"}]})


REQUESTS = '''
import json, os, socket, urllib.request, urllib.error

def via_url(path, body=None):
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + path, data=body and body.encode(),
                                 headers={"Content-Type": "application/json",
                                          "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())

def via_socket(raw_path, body):
    s = socket.socket(socket.AF_UNIX)
    s.connect(os.environ["TESTPRISM_MODEL_SOCKET"])
    data = body.encode()
    s.sendall(b"POST " + raw_path.encode() + b" HTTP/1.1\\r\\nHost: x\\r\\nContent-Type: application/json\\r\\n"
              b"Connection: close\\r\\nContent-Length: " + str(len(data)).encode() + b"\\r\\n\\r\\n" + data)
    reply = b""
    while chunk := s.recv(65536):
        reply += chunk
    head, _, rest = reply.partition(b"\\r\\n\\r\\n")
    return int(head.split()[1]), json.loads(rest)
'''


@WITH_CHANNEL
def test_the_endpoint_answers_through_the_relay_and_the_socket_with_the_key_added_outside(
        backend, env, tree, endpoint):
    url, script = endpoint
    with ModelChannel(url, KEY) as channel:
        result = run_probe(backend, env, tree, REQUESTS + f'''
print(json.dumps({{
    "url": via_url("/chat/completions", {chat("score-70")!r}),
    "socket": via_socket("/v1/chat/completions", {chat("score-71")!r}),
    "base": os.environ["OPENAI_BASE_URL"], "key": os.environ["OPENAI_API_KEY"],
    "leaked": {KEY!r} in open("/proc/self/environ").read() or any({KEY!r} in v for v in os.environ.values()),
}}))
''', channel=channel.socket_path)
        usage = channel.usage
    assert result.exit_code == 0, result.output_tail
    seen = json.loads(result.output_tail.strip().splitlines()[-1])
    assert seen["url"][0] == 200 and json.loads(seen["url"][1]["choices"][0]["message"]["content"])["score"] == 70
    assert seen["socket"][0] == 200 and "71" in seen["socket"][1]["choices"][0]["message"]["content"]
    assert seen["base"] == f"http://127.0.0.1:{RELAY_PORT}/v1" and seen["key"] == "testprism-channel"
    assert seen["leaked"] is False
    assert script.authorization == {f"Bearer {KEY}"}  # the harness's key, never the sandbox's dummy
    assert script.requests == {"score-70": 1, "score-71": 1}
    assert usage == Usage(requests=2, prompt_tokens=2, completion_tokens=2, total_tokens=4)
    assert survivors(str(SANDBOX_SOCKET)) == []  # the relay died with the run


@pytest.fixture()
def host_listener() -> Iterator[tuple[int, threading.Event]]:
    """Another service on the host's loopback, and whether anything reached it."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    reached, stop = threading.Event(), threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                server.accept()[0].close()
                reached.set()
            except OSError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], reached
    stop.set()
    thread.join(timeout=5)
    server.close()


@WITH_CHANNEL
def test_nothing_but_the_channel_is_reachable(backend, env, tree, endpoint, host_listener):
    url, script = endpoint
    upstream_port = int(url.rsplit(":", 1)[1].split("/")[0])
    listener_port, reached = host_listener
    with ModelChannel(url, KEY) as channel:
        result = run_probe(backend, env, tree, REQUESTS + f'''
def connect(host, port):
    try:
        socket.create_connection((host, port), timeout=3).close()
        return "connected"
    except OSError as e:
        return type(e).__name__

def resolve(name):
    try:
        return socket.getaddrinfo(name, 80)[0][4][0]
    except OSError as e:
        return type(e).__name__

def raw_status(path):
    s = socket.create_connection(("127.0.0.1", {RELAY_PORT}), timeout=10)
    s.sendall(b"GET " + path.encode() + b" HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n")
    reply = b""
    while chunk := s.recv(65536):
        reply += chunk
    return int(reply.split()[1])

print(json.dumps({{
    "upstream": connect("127.0.0.1", {upstream_port}), "listener": connect("127.0.0.1", {listener_port}),
    "outside": connect("10.0.0.1", 80), "dns": resolve("example.com"),
    "paths": [raw_status(p) for p in ("/", "/other/chat/completions", "/v1/../admin", "/v1/%2e%2e/admin",
                                        "/v1x/models", "http://127.0.0.1:{listener_port}/v1/models")],
}}))
''', channel=channel.socket_path)
    assert result.exit_code == 0, result.output_tail
    seen = json.loads(result.output_tail.strip().splitlines()[-1])
    assert seen["upstream"] != "connected" and seen["listener"] != "connected" and seen["outside"] != "connected"
    assert seen["dns"] == "gaierror"
    assert seen["paths"] == [404] * 6
    assert not reached.is_set()
    assert script.total() == 0  # nothing reached upstream either


@WITH_CHANNEL
def test_the_budget_stops_forwarding_at_its_tokens(backend, env, tree, endpoint):
    url, script = endpoint
    with ModelChannel(url, KEY, Budget(max_total_tokens=4)) as channel:
        result = run_probe(backend, env, tree, REQUESTS + f'''
print(json.dumps([via_url("/chat/completions", {chat("score-50")!r}) for _ in range(4)]))
''', channel=channel.socket_path)
        assert channel.exhausted
        usage = channel.usage
    assert result.exit_code == 0, result.output_tail
    answers = json.loads(result.output_tail.strip().splitlines()[-1])
    assert [status for status, _ in answers] == [200, 200, 429, 429]
    assert answers[2][1]["error"]["type"] == "budget_exhausted"
    assert script.requests == {"score-50": 2}  # upstream saw no request past the budget
    assert usage == Usage(requests=2, prompt_tokens=2, completion_tokens=2, total_tokens=4)


def test_without_a_channel_a_run_gets_no_relay_and_no_variables(backend, env, tree):
    result = run_probe(backend, env, tree, f'''
import json, os, socket
try:
    socket.create_connection(("127.0.0.1", {RELAY_PORT}), timeout=3).close()
    relay = "connected"
except OSError as e:
    relay = type(e).__name__
print(json.dumps({{"relay": relay, "vars": sorted(k for k in os.environ if "OPENAI" in k or "MODEL" in k),
                   "socket": os.path.exists("/run/testprism/model.sock")}}))
''')
    assert result.exit_code == 0, result.output_tail
    assert json.loads(result.output_tail.strip().splitlines()[-1]) == {
        "relay": "ConnectionRefusedError", "vars": [], "socket": False}
    assert result.outputs is None


@pytest.mark.parametrize("backend", ["docker-archive"], indirect=True)
def test_archive_mode_refuses_a_channel(backend, env, tree, endpoint):
    with ModelChannel(endpoint[0], KEY) as channel, pytest.raises(SandboxUnavailable, match="model channel"):
        run_probe(backend, env, tree, "print('never')", channel=channel.socket_path)


# -- host side: the budget on requests, streaming, the relay's syntax ---------------------------


def test_the_relay_is_a_program_for_any_python_3_from_3_4():
    """It runs under the environment's interpreter, whatever its version."""
    source = (Path(sandbox_module.__file__).parent / "relay.py").read_text()
    ast.parse(source, feature_version=(3, 4))  # no walrus, no async words as names, ...
    strings = [t.string for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.STRING]
    assert not [t for t in strings if re.match(r"[a-zA-Z]*[fF]['\"]", t)]  # f-strings came with 3.6


def socket_client(channel: ModelChannel) -> httpx.Client:
    return httpx.Client(transport=httpx.HTTPTransport(uds=str(channel.socket_path)), base_url="http://channel")


def test_the_budget_stops_forwarding_at_its_requests(endpoint):
    url, script = endpoint
    with ModelChannel(url, KEY, Budget(max_requests=1)) as channel, socket_client(channel) as client:
        first = client.post("/v1/chat/completions", content=chat("score-10"))
        second = client.post("/v1/chat/completions", content=chat("score-10"))
        assert channel.exhausted and channel.usage.requests == 1
    assert first.status_code == 200
    assert second.status_code == 429 and second.json()["error"]["type"] == "budget_exhausted"
    assert script.total() == 1


def test_concurrent_requests_get_no_more_than_the_budget(endpoint):
    url, script = endpoint
    with ModelChannel(url, KEY, Budget(max_requests=5)) as channel:
        def ask(_: int) -> int:
            with socket_client(channel) as client:
                return client.post("/v1/chat/completions", content=chat("slow-1")).status_code

        # More at once than socketserver's default backlog of 5 admits on a Unix socket.
        with ThreadPoolExecutor(max_workers=40) as pool:
            statuses = sorted(pool.map(ask, range(40)))
    assert statuses == [200] * 5 + [429] * 35
    assert script.total() == 5 and channel.usage.requests == 5


@pytest.fixture()
def streaming_upstream() -> Iterator[tuple[str, list[dict]]]:
    """A chat endpoint that streams events, with a usage chunk when asked for one."""
    bodies: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            bodies.append(body)
            events = [{"choices": [{"delta": {"content": word}}]} for word in ("hello", " world")]
            if (body.get("stream_options") or {}).get("include_usage"):
                events.append({"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}})
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for event in events:
                self.wfile.write(b"data: " + json.dumps(event).encode() + b"\n\n")
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", bodies
    server.shutdown()
    server.server_close()


def test_a_stream_is_relayed_and_metered_from_its_usage_chunk(streaming_upstream, tmp_path):
    from testprism.tasks.sandbox.transcript import Transcript, read_transcript

    url, bodies = streaming_upstream
    transcript = Transcript(tmp_path / "t.jsonl.gz", KEY)
    with ModelChannel(url, KEY, transcript=transcript) as channel, socket_client(channel) as client:
        payload = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
        with client.stream("POST", "/v1/chat/completions", json=payload) as response:
            events = [line for line in response.iter_lines() if line.startswith("data: {")]
        usage = channel.usage
    words = [json.loads(e[6:])["choices"][0]["delta"]["content"] for e in events if json.loads(e[6:])["choices"]]
    assert words == ["hello", " world"]
    assert bodies[0]["stream_options"] == {"include_usage": True}  # asked for, so the stream can be metered
    assert usage == Usage(requests=1, prompt_tokens=7, completion_tokens=2, total_tokens=9)
    recorded = read_transcript(tmp_path / "t.jsonl.gz")  # the stream's text as its deltas assembled it
    assert [(e["request"]["messages"], e["response"], e["usage"]["total_tokens"]) for e in recorded] == [
        (payload["messages"], {"stream": True, "content": "hello world"}, 9)]


# -- what a run left behind ---------------------------------------------------------------------

LEAVE = '''
import os
os.makedirs("tmp/pkg", exist_ok=True)
open("tmp/test_x.py", "w").write("from calc import add\\n\\ndef test_add():\\n    assert add(1, 2) == 3\\n")
open("tmp/pkg/conftest.py", "w").write("")
os.symlink("/etc/passwd", "tmp/evil")
with open("tmp/big.bin", "wb") as fh:
    fh.truncate(20 * 1024 * 1024)
open("calc.py", "w").write("def add(a, b):\\n    return a + b\\n")
open("new.txt", "w").write("made by the run\\n")
open("tail.txt", "w").write("still no newline, but changed")
os.remove("old.txt")
os.symlink("/etc", "linked")
os.makedirs("__pycache__", exist_ok=True)
open("__pycache__/calc.cpython-311.pyc", "wb").write(b"\\0cache")
os.remove("probe.py")
'''


def test_the_suite_and_the_patch_come_back_without_following_links(backend, env, tree, work_root):
    result = run_probe(backend, env, tree, LEAVE, keep_outputs=True)
    assert result.exit_code == 0, result.output_tail
    out = result.outputs
    assert out is not None
    assert out.suite_files == {"test_x.py": b"from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n",
                               "pkg/conftest.py": b""}
    reasons = dict(s.split(": ", 1) for s in out.skipped)
    assert reasons["tmp/evil"] == "a link"
    assert "cap" in reasons["tmp/big.bin"]
    assert reasons["linked"] == "a link"
    assert not any("pycache" in s for s in out.skipped)
    assert b"root:" not in out.program_diff and all(b"root:" not in v for v in out.suite_files.values())
    # The patch applies to the tree the run started from and makes what the run left.
    copy = work_root / f"applied-{time.monotonic_ns()}"
    shutil.copytree(tree, copy)
    subprocess.run(["git", "apply", "-"], cwd=copy, input=out.program_diff, check=True)
    assert sorted(p.name for p in copy.iterdir()) == ["calc.py", "new.txt", "notes.txt", "tail.txt"]
    assert (copy / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert (copy / "new.txt").read_text() == "made by the run\n"
    assert (copy / "tail.txt").read_text() == "still no newline, but changed"


def test_an_untouched_program_gives_an_empty_patch(backend, env, tree):
    result = run_probe(backend, env, tree, "import calc", keep_outputs=True)
    assert result.exit_code == 0, result.output_tail
    assert result.outputs.program_diff == b"" and result.outputs.suite_files == {}


def test_a_transcript_never_writes_the_key_even_when_upstream_echoes_it(tmp_path):
    """The channel records bodies only, and scrubs the key from every line it writes; the
    control, a transcript told no key, shows the echo would have been written."""
    from testprism.tasks.sandbox.transcript import REDACTED, Transcript, read_transcript

    echoed = json.dumps({"choices": [{"message": {"role": "assistant", "content": f"your key is {KEY}"}}]}).encode()
    kept = {}
    for name, secret in (("scrubbed", KEY), ("control", None)):
        transcript = Transcript(tmp_path / f"{name}.jsonl.gz", secret)
        transcript.record("/v1/chat/completions", 200, chat("score-1").encode(), json.loads(echoed), {"total_tokens": 2})
        transcript.close()
        kept[name] = read_transcript(tmp_path / f"{name}.jsonl.gz")
    assert KEY in json.dumps(kept["control"])  # the defence off: the echo is written
    assert KEY not in json.dumps(kept["scrubbed"]) and REDACTED in json.dumps(kept["scrubbed"])
    assert kept["scrubbed"][0]["usage"] == {"prompt_tokens": None, "completion_tokens": None, "total_tokens": 2}


def test_a_transcript_stops_at_its_bound(tmp_path):
    from testprism.tasks.sandbox.transcript import Transcript, read_transcript

    transcript = Transcript(tmp_path / "t.jsonl.gz", KEY, max_bytes=600)
    for _ in range(10):
        transcript.record("/v1/chat/completions", 200, chat("score-1").encode(), {"ok": True}, None)
    transcript.close()
    assert 1 <= len(read_transcript(tmp_path / "t.jsonl.gz")) < 10
