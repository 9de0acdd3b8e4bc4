"""The local backend under hostile suites: each contained, recorded, the host untouched."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from testprism.tasks.benchmark import EnvironmentSpec
from testprism.tasks.outcome import Outcome, Reason
from testprism.tasks.sandbox import Limits, RunRequest, SandboxUnavailable
from testprism.tasks.sandbox.local import LocalBackend, bubblewrap_works
from testprism.tasks.verdict import Policy, classify, judge

pytestmark = pytest.mark.skipif(not bubblewrap_works(), reason="bubblewrap is required (make test installs it)")

BARE = EnvironmentSpec(python="3.11", packages=())


@pytest.fixture(scope="module")
def backend(work):
    return LocalBackend(work)


@pytest.fixture(scope="module")
def env(backend):
    return backend.prepare(BARE)


@pytest.fixture()
def tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tree")
    (root / "data.txt").write_text("program file\n")
    return root


def run(backend, env, tree, script: str, **limits):
    request = RunRequest(tree=tree, suite_folder=None, suite_files=(), command=script, environment=env,
                         limits=Limits(**{"timeout_s": 20.0, **limits}))
    return backend.run(request)


def test_exit_status_decides_without_junit(backend, env, tree):
    assert classify(run(backend, env, tree, "true")) == (Outcome.PASS, None)
    assert classify(run(backend, env, tree, "exit 3")) == (Outcome.FAIL, None)


def test_infinite_loop_ends_as_timeout_without_hanging(backend, env, tree):
    result = run(backend, env, tree, "while :; do :; done", timeout_s=1.5)
    assert result.timed_out
    assert classify(result) == (Outcome.ERROR, Reason.TIMEOUT)
    assert judge(lambda: result, Policy()).attempts == 1  # timeouts are not replayed


def test_network_is_unreachable(backend, env, tree):
    script = (
        "python - <<'EOF'\n"
        "import socket\n"
        "for host in ('1.1.1.1', '10.255.255.1'):\n"
        "    s = socket.socket(); s.settimeout(2)\n"
        "    try:\n"
        "        s.connect((host, 80)); print('CONNECTED', host)\n"
        "    except OSError as exc:\n"
        "        print('refused', host, exc.errno)\n"
        "EOF"
    )
    result = run(backend, env, tree, script)
    assert "CONNECTED" not in result.output_tail
    assert result.output_tail.count("refused") == 2


def test_output_flood_is_cut_and_flagged(backend, env, tree):
    result = run(backend, env, tree, "yes flood", output_bytes=1_000_000, tail_bytes=1000)
    assert result.output_exceeded
    assert len(result.output_tail) <= 1000
    assert classify(result) == (Outcome.ERROR, Reason.OUTPUT_LIMIT)


def test_host_is_read_only_and_workspace_is_private(backend, env, tree, work_root):
    canary = work_root / "canary.txt"
    canary.write_text("untouched\n")
    script = f"ls {work_root}; echo END; rm -f {canary}; echo x > {canary}; echo y > /etc/testprism-escape; rm -f data.txt"
    result = run(backend, env, tree, script)
    listing = result.output_tail.split("END", 1)[0].split()
    assert canary.read_text() == "untouched\n"
    assert not Path("/etc/testprism-escape").exists()
    assert (tree / "data.txt").exists()  # only the run's own copy was deleted
    assert "canary.txt" not in listing and "runs" in listing  # the work area is hidden from the sandbox


def test_fork_bomb_and_memory_hog_are_contained(backend, env, tree):
    bomb = run(backend, env, tree, "f() { f | f & }; f; sleep 2; echo survived", timeout_s=10, processes=64)
    assert bomb.exit_code is not None or bomb.timed_out
    hog = run(backend, env, tree, "python -c 'b = bytearray(10 * 1024**3)'", memory_mb=1024)
    assert hog.exit_code != 0 and "MemoryError" in hog.output_tail


def test_sleeping_children_die_with_the_run(backend, env, tree, work_root):
    marker = tree / "late.txt"
    script = f"(sleep 3; echo late > {marker}) & disown; exit 0"
    result = run(backend, env, tree, script)
    assert result.exit_code == 0
    time.sleep(4)
    assert not marker.exists()


def test_untrusted_suites_need_isolation_or_an_explicit_flag(work, monkeypatch):
    monkeypatch.setattr("testprism.tasks.sandbox.local.bubblewrap_works", lambda: False)
    with pytest.raises(SandboxUnavailable, match="install it.*--backend docker.*--unsafe-no-sandbox"):
        LocalBackend(work)
    assert LocalBackend(work, trusted=True).isolation == "none"


def test_non_utf8_output_is_kept_readable(backend, env, tree):
    result = run(backend, env, tree, r"printf 'caf\xe9 \xff\xfe done\n'")
    assert result.exit_code == 0 and "done" in result.output_tail and "\ufffd" in result.output_tail


def test_junit_is_never_read_through_a_link_the_suite_made(backend, env, tree, work_root):
    secret = work_root / "junit.xml"
    secret.write_text("<testsuite><testcase name='host-secret'/></testsuite>")
    result = run(backend, env, tree, f"rm -rf ../out && ln -s {work_root} ../out && exit 0")
    assert result.junit_xml is None
