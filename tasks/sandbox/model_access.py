"""How a run reaches the model channel (tasks/sandbox/channel.py), the same under every
backend that supports one: the socket at `SANDBOX_SOCKET`, the relay (tasks/sandbox/
relay.py) on 127.0.0.1:`RELAY_PORT` of the sandbox's own loopback, started by the sandbox's
shell before the command, and the variables an OpenAI client reads. Nothing here depends on
the state: every run of a channel sees the same paths, port and variables."""

from __future__ import annotations

import base64
import shlex
from functools import cache
from pathlib import Path, PurePosixPath

from testprism.tasks.sandbox.base import RunRequest
from testprism.tasks.sandbox.channel import sandbox_base_path

#: where the channel's socket appears inside the sandbox
SANDBOX_SOCKET = PurePosixPath("/run/testprism/model.sock")
#: the relay's port on the sandbox's own loopback
RELAY_PORT = 41400
#: the key the sandbox's client sends; the channel drops it and adds the real one
DUMMY_KEY = "testprism-channel"
#: the exit status when the relay could not start (the command never ran), as env(1) uses
RELAY_FAILED = 125


@cache
def _relay_program() -> str:
    """relay.py as one line of Python: base64, so the shell line stays one line."""
    encoded = base64.b64encode((Path(__file__).parent / "relay.py").read_bytes()).decode()
    return f"import base64; exec(base64.b64decode('{encoded}'))"


def channel_env(request: RunRequest) -> dict[str, str]:
    """The variables a run with a channel gets on top of the usual ones (none without)."""
    if request.channel is None:
        return {}
    base = f"http://127.0.0.1:{RELAY_PORT}{sandbox_base_path(request.channel)}"
    return {"OPENAI_BASE_URL": base, "OPENAI_API_KEY": DUMMY_KEY, "TESTPRISM_MODEL_SOCKET": str(SANDBOX_SOCKET)}


def sandbox_command(request: RunRequest) -> str:
    """The command the sandbox's shell runs: with a channel, the relay started first (it
    returns once it listens) on the same line, so bash's line numbers do not move. Its
    interpreter is the environment's own, or, in an environment without a virtualenv (Go,
    Node), the system's python3 (the host's /usr under local, the base image's under docker),
    as the provided agent's is (tasks/generate/task_folder.py)."""
    if request.channel is None:
        return request.command
    python = shlex.quote(str(request.environment / "bin" / "python"))
    relay = (f'testprism_relay={python}; [ -x "$testprism_relay" ] || testprism_relay=python3; '
             f'"$testprism_relay" -I -S -c {shlex.quote(_relay_program())} {SANDBOX_SOCKET} {RELAY_PORT} '
             f"|| {{ echo 'testprism: the model relay did not start' >&2; exit {RELAY_FAILED}; }}; "
             "unset testprism_relay")
    return f"{relay}; {request.command}"
