"""The provided agent (tasks/generate/agent.py, docs/generate.md) against a real loopback
chat server with scripted replies (tests/chatserver.py): in a real sandbox (`local`,
`docker`) through a real model channel, with the task folder placed as the generate flow
places it (tmp/.task/, the agent itself among its files), and on the host through
`testprism agent`. The scripted program is `add` that subtracts; the scripted model writes
tests of it, and fixes."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from testprism.flows.cli import app
from testprism.tasks.generate.task_folder import language_json
from testprism.tasks.model import syntax
from testprism.tasks.model.benchmark_format import EnvironmentSpec
from testprism.tasks.sandbox.base import ExecResult, Limits, RunRequest
from testprism.tasks.sandbox.channel import Budget, ModelChannel
from tests.chatserver import AGENT_FIX, AGENT_PROGRAM, FAILING_TEST, PASSING_TEST
from tests import test_channel

#: the channel tests' fixtures: a backend per kind, a loopback listener on the host
backend, host_listener = test_channel.backend, test_channel.host_listener

AGENT = Path(__file__).resolve().parents[1] / "tasks" / "generate" / "agent.py"
STRATEGY = {"rounds": 2, "agent_steps": 6, "repair_steps": 3, "context_tokens": 2000, "tool_output_chars": 2000,
            "review_tokens": 512, "model": "agent-test", "repair": False}


#: the sandboxes a generation run gets a channel in (test_channel's `backend` fixture)
SANDBOXES = pytest.mark.parametrize("backend", ["local", "docker"], indirect=True)


@pytest.fixture(scope="module")
def env(backend) -> Path:
    return backend.prepare(EnvironmentSpec())  # with pytest: the agent runs its tests


@pytest.fixture()
def tree(work_root) -> Path:
    root = work_root / f"program-{os.getpid()}-{time.monotonic_ns()}"
    root.mkdir()
    (root / "calc.py").write_text(AGENT_PROGRAM)
    (root / "README.md").write_text("calc: arithmetic.\n")
    return root


def task_folder(work_root: Path, marker: str, reference: str | None = None, **strategy: object) -> Path:
    """A folder holding `.task/` as the generate flow places it under tmp/: the issue (with
    the server's script marker), the strategy, the agent, the reference in TestPrism mode."""
    root = work_root / f"task-{os.getpid()}-{time.monotonic_ns()}"
    task = root / ".task"
    task.mkdir(parents=True)
    (task / "instruction.md").write_text(f"`add` in calc.py subtracts instead of adding. [[script:{marker}]]\n")
    (task / "strategy.json").write_text(json.dumps({**STRATEGY, **strategy}))
    (task / "language.json").write_text(language_json(syntax.PYTHON))
    shutil.copy(AGENT, task / "agent.py")
    if reference is not None:
        (task / "reference.diff").write_text(reference)
    return root


def run_agent(backend, env, tree: Path, folder: Path, channel: ModelChannel) -> tuple[ExecResult, dict]:
    """The agent's run in the sandbox and the usage.json it left."""
    files = tuple(sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()))
    result = backend.run(RunRequest(tree=tree, suite_folder=folder, suite_files=files,
                                    command="python tmp/.task/agent.py", environment=env,
                                    limits=Limits(timeout_s=300.0), channel=channel.socket_path, keep_outputs=True))
    assert result.outputs is not None, result.output_tail
    return result, json.loads(result.outputs.suite_files[".task/usage.json"])


@pytest.mark.slow
@SANDBOXES
def test_a_passing_test_is_revised_into_one_that_fails_and_the_suite_runs(backend, env, tree, work_root, endpoint):
    url, script = endpoint
    with ModelChannel(url, "sk-test") as channel:
        result, usage = run_agent(backend, env, tree, task_folder(work_root, "agent-pass-then-fail"), channel)
        metered = channel.usage
    assert result.exit_code == 0, result.output_tail
    suite = result.outputs.suite_files
    assert suite["test_generated.py"].decode() == FAILING_TEST  # the revision, not the first
    assert {name for name in suite if not name.startswith(".task/")} == {"test_generated.py", "run_tests.sh"}
    assert usage == {"steps": 2, "rounds": 1, "status": "ok", "prompt_tokens": 2, "completion_tokens": 2,
                     "total_tokens": 4}
    assert metered.requests == 2 and metered.total_tokens == usage["total_tokens"]  # the harness's count agrees
    assert "PASSED on the current, buggy program" in script.prompts[1]
    assert result.outputs.program_diff == b""  # plain mode: the program is left as it was
    # The suite it left is a suite: it runs from the program root, fails on the buggy
    # program with a JUnit report, and collects nothing of tmp/.task.
    kept = work_root / f"suite-{time.monotonic_ns()}"
    for name in ("test_generated.py", "run_tests.sh"):
        (kept / name).parent.mkdir(parents=True, exist_ok=True)
        (kept / name).write_bytes(suite[name])
    replayed = backend.run(RunRequest(tree=tree, suite_folder=kept, suite_files=("test_generated.py", "run_tests.sh"),
                                      command="bash tmp/run_tests.sh", environment=env, limits=Limits(timeout_s=120.0)))
    assert replayed.exit_code == 1 and b'failures="1"' in replayed.junit_xml and b'tests="1"' in replayed.junit_xml


@pytest.mark.slow
@SANDBOXES
def test_the_reference_is_in_the_prompt_in_testprism_mode_only(backend, env, tree, work_root, endpoint):
    url, script = endpoint
    with ModelChannel(url, "sk-test") as channel:
        plain, plain_usage = run_agent(backend, env, tree, task_folder(work_root, "agent-fail"), channel)
        prism, prism_usage = run_agent(backend, env, tree, task_folder(work_root, "agent-fail", AGENT_FIX), channel)
    assert plain.exit_code == 0 and prism.exit_code == 0, plain.output_tail + prism.output_tail
    assert len(script.prompts) == 2
    assert "+    return a + b" not in script.prompts[0] and "reference fix" not in script.prompts[0]
    assert AGENT_FIX.rstrip("\n") in script.prompts[1]
    # In TestPrism mode the test also passed with the reference applied (one step, no
    # revision), and the reference was taken back out of the program.
    assert plain_usage["steps"] == prism_usage["steps"] == 1
    assert prism.outputs.program_diff == b"" and prism.outputs.suite_files["test_generated.py"].decode() == FAILING_TEST


@pytest.mark.slow
@SANDBOXES
def test_an_exhausted_budget_stops_the_agent_with_what_it_has(backend, env, tree, work_root, endpoint):
    url, script = endpoint
    with ModelChannel(url, "sk-test", Budget(max_requests=1)) as channel:
        result, usage = run_agent(backend, env, tree, task_folder(work_root, "agent-pass-then-fail"), channel)
        assert channel.exhausted
    assert result.exit_code == 0, result.output_tail  # it wrote a test, if not a good one
    assert usage["status"] == "budget_exhausted" and usage["steps"] == 1
    assert script.total() == 1
    assert result.outputs.suite_files["test_generated.py"].decode() == PASSING_TEST


@pytest.mark.slow
@SANDBOXES
def test_in_repair_mode_the_fix_that_makes_its_test_pass_comes_back_as_the_program_diff(
        backend, env, tree, work_root, endpoint):
    url, script = endpoint
    with ModelChannel(url, "sk-test") as channel:
        result, usage = run_agent(backend, env, tree, task_folder(work_root, "agent-repair", repair=True), channel)
    assert result.exit_code == 0, result.output_tail
    assert usage["status"] == "ok" and usage["steps"] == 3  # the test, a diff that does not apply, the fix
    assert "does not apply" in script.prompts[2]
    copy = work_root / f"repaired-{time.monotonic_ns()}"
    shutil.copytree(tree, copy)
    subprocess.run(["git", "apply", "-"], cwd=copy, input=result.outputs.program_diff, check=True)
    assert (copy / "calc.py").read_text() == AGENT_PROGRAM.replace("a - b", "a + b")
    assert result.outputs.suite_files["test_generated.py"].decode() == FAILING_TEST


@pytest.mark.slow
@SANDBOXES
def test_the_agents_tests_reach_the_channel_and_nothing_else(backend, env, tree, work_root, endpoint, host_listener):  # noqa: F811
    url, script = endpoint
    upstream_port = int(url.rsplit(":", 1)[1].split("/")[0])
    listener_port, reached = host_listener
    with ModelChannel(url, "sk-test") as channel:
        result, usage = run_agent(
            backend, env, tree, task_folder(work_root, f"agent-probe-{listener_port}-{upstream_port}"), channel)
    assert result.exit_code == 0, result.output_tail
    assert usage["steps"] == 2
    # The probe "test" errored with what it could reach; the agent fed that back.
    probe = re.search(r"RuntimeError: probe: listener=(\S+) upstream=(\S+) relay=(\S+)", script.prompts[1])
    assert probe, script.prompts[1]
    found = dict(zip(("listener", "upstream", "relay"), probe.groups()))
    assert found["relay"] == "200"  # the channel, through the relay
    assert found["listener"] != "connected" and found["upstream"] != "connected"
    assert not reached.is_set()


# -- on the host ---------------------------------------------------------------------------------


def test_the_agent_is_standard_library_python_3_8():
    """It runs under the instance environment's interpreter, where nothing is installed."""
    tree = ast.parse(AGENT.read_text(), feature_version=(3, 8))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module and node.level == 0}
    assert imported - {"__future__"} <= sys.stdlib_module_names


def test_testprism_agent_runs_it_in_a_program_folder(tree, work_root, endpoint, monkeypatch):
    url, script = endpoint
    folder = task_folder(work_root, "agent-pass-then-fail")
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    result = CliRunner().invoke(app, ["agent", str(tree), "--task-dir", str(folder / ".task")])
    assert result.exit_code == 0, result.output
    assert (tree / "tmp" / "test_generated.py").read_text() == FAILING_TEST
    assert (tree / "tmp" / "run_tests.sh").stat().st_mode & 0o111
    assert json.loads((folder / ".task" / "usage.json").read_text())["steps"] == 2
    assert script.total() == 2


@pytest.mark.parametrize(("base_url", "strategy", "says"), [
    (None, {}, "OPENAI_BASE_URL is not set"),
    ("http://127.0.0.1:9/v1", {"rounds": "three"}, "field rounds: expected int >= 0"),
    ("http://127.0.0.1:9/v1", {"model": ""}, "no model"),
])
def test_testprism_agent_with_an_unusable_task_exits_2(tree, work_root, monkeypatch, base_url, strategy, says):
    if base_url is None:
        monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    else:
        monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    monkeypatch.delenv("TESTPRISM_MODEL", raising=False)
    folder = task_folder(work_root, "agent-fail", **strategy)
    result = CliRunner().invoke(app, ["agent", str(tree), "--task-dir", str(folder / ".task")])
    assert result.exit_code == 2
    assert says in " ".join(result.output.split())  # the log line, however the console wrapped it
    assert not (tree / "tmp").exists() and not (folder / ".task" / "usage.json").exists()
