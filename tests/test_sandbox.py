"""Hostile suites under every backend: each contained and recorded, the host untouched.

Every test here runs under `local` (bubblewrap), `docker` (a fresh container per run) and
`docker-reused` (fast mode: one container, workspace reset between runs). What a test
checks on the host (a canary file, the program's own tree, processes left alive, a service
on the host's loopback) is the same for all three.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from testprism.tasks.model.benchmark import load_benchmark
from testprism.tasks.model.benchmark_format import EnvironmentSpec
from testprism.tasks.model.outcome import Outcome, Reason
from testprism.tasks.replay.runs import plan, unrunnable_rows
from testprism.tasks.execution.batch import ExecutionOptions
from testprism.tasks.sandbox.base import Limits, RunRequest, SandboxBackend, SandboxUnavailable
from testprism.tasks.sandbox.base import Mount
from testprism.tasks.sandbox.local import LocalBackend
from testprism.tasks.execution.verdict import Policy, classify, judge
from testprism.tasks.model.workdir import WorkPaths, WorkspacesUnsafe
from testprism.tasks.sandbox.workspace import SETTLED_MTIME
from tests.benchfixture import CHECKS, make_benchmark
from tests.conftest import open_backend

BARE = EnvironmentSpec(python="3.11", packages=())


@pytest.fixture(scope="module", params=["local", "docker", "docker-reused"])
def backend(request, work) -> Iterator[SandboxBackend]:
    made = open_backend(request.param, work)
    yield made
    made.close()


@pytest.fixture(scope="module")
def env(backend) -> Path:
    return backend.prepare(BARE)


@pytest.fixture()
def tree(work_root) -> Iterator[Path]:
    """A state's tree as materialise leaves one (a finished build_once folder, `.ready`
    beside it), so that runs layer it over its image (the default, layer.py); tests fill
    it before its first run and never change it afterwards, as the harness does."""
    root = work_root / f"state-{os.getpid()}-{time.monotonic_ns()}" / "tree"
    root.mkdir(parents=True)
    (root.parent / ".ready").touch()
    (root / "data.txt").write_text("program file\n")
    yield root


def run(backend, env, tree, script: str, **limits):
    request = RunRequest(tree=tree, suite_folder=None, suite_files=(), command=script, environment=env,
                         limits=Limits(**{"timeout_s": 20.0, **limits}))
    return backend.run(request)


def survivors(marker: str, wait_s: float = 10.0) -> list[int]:
    """Host processes whose command line holds `marker`, once those being killed are gone:
    a sandbox's processes are the host's too (nested pid namespaces), so none may outlive
    its run."""
    deadline = time.monotonic() + wait_s
    while True:
        found = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit() or int(proc.name) == os.getpid():
                continue
            try:
                if marker.encode() in (proc / "cmdline").read_bytes():
                    found.append(int(proc.name))
            except OSError:
                continue
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def test_exit_status_decides_without_junit(backend, env, tree):
    assert classify(run(backend, env, tree, "true")) == (Outcome.PASS, None)
    assert classify(run(backend, env, tree, "exit 3")) == (Outcome.FAIL, None)


def test_infinite_loop_ends_as_timeout_without_hanging(backend, env, tree):
    result = run(backend, env, tree, "while :; do :; done  # spin-a41c", timeout_s=1.5)
    assert result.timed_out
    assert classify(result) == (Outcome.ERROR, Reason.TIMEOUT)
    assert judge(lambda: result, Policy()).attempts == 1  # timeouts are not replayed
    assert survivors("spin-a41c") == []


def test_fork_bomb_is_contained_and_leaves_nothing(backend, env, tree):
    bomb = run(backend, env, tree, "f() { f | f & }; f; sleep 2; exit 1  # bomb-5e2d", timeout_s=10, processes=64)
    # Forks past the limit fail: `local` counts them in the run's pids cgroup and records
    # the run-wide limit (tests/test_run_limits.py); under a backend that does not, the script
    # goes on to fail by itself; or the timeout ends it.
    expected = {(Outcome.ERROR, Reason.PROCESS_LIMIT), (Outcome.ERROR, Reason.TIMEOUT)}
    assert classify(bomb) in (expected if backend.name == "local" else expected | {(Outcome.FAIL, None)})
    assert survivors("bomb-5e2d") == []
    assert classify(run(backend, env, tree, "true")) == (Outcome.PASS, None)  # the backend still works


def test_allocating_10_gib_fails_the_run_not_the_host(backend, env, tree):
    """The run's memory cgroup kills the process once it touches more than allowed: the run
    is `E`/`memory_limit` under every backend (a run-wide limit says nothing of the state)."""
    hog = run(backend, env, tree, "python -c 'b = bytearray(10 * 1024**3); b[::4096] = bytes(len(b[::4096])); "
                                  "print(\"got it\")'", memory_mb=1024)
    assert hog.exit_code != 0 and not hog.timed_out
    assert "got it" not in hog.output_tail
    assert classify(hog) == (Outcome.ERROR, Reason.MEMORY_LIMIT)  # docker: the engine's oom events


def test_1_gib_of_stdout_is_cut_early_and_flagged(backend, env, tree):
    result = run(backend, env, tree, "head -c 1073741824 /dev/zero | tr '\\0' x; echo wrote-it-all",
                 output_bytes=4_000_000, tail_bytes=1000, timeout_s=60)
    assert result.output_exceeded
    assert len(result.output_tail) <= 1000 and "wrote-it-all" not in result.output_tail  # stopped, not drained
    assert classify(result) == (Outcome.ERROR, Reason.OUTPUT_LIMIT)


@pytest.fixture()
def host_service() -> Iterator[int]:
    """A TCP service on the host's loopback: a sandbox must not reach it either."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    reached = threading.Event()
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            reached.set()
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()
    assert not reached.is_set(), "a sandbox reached the host's loopback service"


def test_sockets_reach_nothing_outside_the_sandbox(backend, env, tree, host_service):
    script = (
        "python - <<'EOF'\n"
        "import socket\n"
        f"for target in [('1.1.1.1', 80), ('10.255.255.1', 80), ('127.0.0.1', {host_service})]:\n"
        "    try:\n"
        "        socket.create_connection(target, timeout=2).close(); print('CONNECTED', target)\n"
        "    except OSError as exc:\n"
        "        print('refused', target, exc.errno)\n"
        "try:\n"
        "    socket.getaddrinfo('pypi.org', 443); print('RESOLVED')\n"
        "except OSError:\n"
        "    print('no dns')\n"
        "own = socket.create_server(('127.0.0.1', 0))  # its own loopback works\n"
        "socket.create_connection(own.getsockname(), timeout=2).close(); print('own loopback ok')\n"
        "EOF"
    )
    result = run(backend, env, tree, script)
    assert "CONNECTED" not in result.output_tail and "RESOLVED" not in result.output_tail
    assert result.output_tail.count("refused") == 3 and "own loopback ok" in result.output_tail


def test_writing_outside_the_workspace_leaves_the_host_untouched(backend, env, tree, work_root):
    canary = work_root / "canary.txt"
    canary.write_text("untouched\n")
    script = (f"ls {work_root}; echo END; rm -f {canary}; echo x > {canary}; echo y > /etc/testprism-escape; "
              f"echo z > {tree}/data.txt; echo w > /var/tmp/testprism-escape; true")
    result = run(backend, env, tree, script)
    assert result.exit_code == 0
    assert canary.read_text() == "untouched\n"
    assert "canary.txt" not in result.output_tail.split("END", 1)[0]  # the work area is hidden
    assert not Path("/etc/testprism-escape").exists() and not Path("/var/tmp/testprism-escape").exists()
    assert (tree / "data.txt").read_text() == "program file\n"


def test_deleting_the_program_harms_only_its_own_workspace(backend, env, tree):
    gone = run(backend, env, tree, f"rm -rf ./* {tree}; ls -A; echo LISTED")
    assert gone.output_tail.split("LISTED")[0].split() == []  # its copy is gone...
    assert (tree / "data.txt").read_text() == "program file\n"  # ...the state tree is not
    again = run(backend, env, tree, "cat data.txt")
    assert again.exit_code == 0 and "program file" in again.output_tail  # the next run gets a fresh copy


def test_sleeping_children_die_with_the_run(backend, env, tree):
    result = run(backend, env, tree, "(sleep 313.37 & disown; setsid sleep 313.37 &) ; nohup sleep 313.37 & exit 0")
    assert result.exit_code == 0
    assert survivors("313.37") == []


def test_symlinks_in_the_program_do_not_lead_out(backend, env, tree, work_root):
    outside = work_root / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "secret.txt").write_text("host secret\n")
    (tree / "escape").symlink_to(outside)
    result = run(backend, env, tree, "cat escape/secret.txt; echo pwned > escape/secret.txt; echo x > escape/new; true")
    assert "host secret" not in result.output_tail
    assert (outside / "secret.txt").read_text() == "host secret\n" and not (outside / "new").exists()


def test_symlinked_suite_is_rejected_before_any_sandbox(backend, tmp_path, work_root):
    """A suite package holding a symlink is refused when loaded (tests/test_benchmark.py has
    `../` paths in patches): its runs are recorded `E`/invalid_suite without starting a
    sandbox, whichever backend replays."""
    root = make_benchmark(tmp_path / "b", {"strong": {"test_m.py": CHECKS}})
    (root / "suites" / "strong" / "mini__median-even" / "escape").symlink_to("/etc/passwd")
    options = ExecutionOptions(backend=backend.name, work_root=work_root, store_root=tmp_path / "store")
    rows = unrunnable_rows(plan(load_benchmark(root), options), options)
    assert len(rows) == 4  # buggy, reference, its two candidates
    assert {(r["outcome"], r["reason"], r["isolation"]) for r in rows} == {("E", "invalid_suite", "none")}


def test_non_utf8_output_is_kept_readable(backend, env, tree):
    result = run(backend, env, tree, r"printf 'caf\xe9 \xff\xfe done\n'")
    assert result.exit_code == 0 and "done" in result.output_tail and "\ufffd" in result.output_tail


def test_mounts_show_a_host_folder_read_only_and_a_writable_folder_of_the_run_s_own(backend, env, tree, work_root):
    """RunRequest.mounts (a Harbor verifier's /tests and /logs): the host folder is there
    and cannot be written; the folder without a host is the run's to write, empty in every
    run. Control: the same run without mounts has neither."""
    tests = work_root / "task-tests"
    tests.mkdir(exist_ok=True)
    (tests / "test.sh").write_text("echo from-the-task\n")
    script = ("cat /tests/test.sh && ls -A /logs | wc -l && mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt "
              "&& cat /logs/verifier/reward.txt && ! touch /tests/planted 2>/dev/null")
    mounts = (Mount("/tests", tests), Mount("/logs"))
    for _ in range(2):
        result = backend.run(RunRequest(tree=tree, suite_folder=None, suite_files=(), command=script,
                                        environment=env, limits=Limits(timeout_s=60), mounts=mounts))
        assert result.exit_code == 0, result.output_tail
        assert result.output_tail.split() == ["echo", "from-the-task", "0", "1"]
    assert sorted(p.name for p in tests.iterdir()) == ["test.sh"]
    control = run(backend, env, tree, "cat /tests/test.sh || touch /logs/reward.txt")
    assert control.exit_code != 0


def test_junit_is_never_read_through_a_link_the_suite_made(backend, env, tree, work_root):
    secret = work_root / "junit.xml"
    secret.write_text("<testsuite><testcase name='host-secret'/></testsuite>")
    result = run(backend, env, tree, f"rm -rf ../out && ln -s {work_root} ../out && exit 0")
    assert result.junit_xml is None


def test_untrusted_suites_need_isolation_or_an_explicit_flag(work, monkeypatch):
    monkeypatch.setattr("testprism.tasks.sandbox.local.bubblewrap_works", lambda: False)
    with pytest.raises(SandboxUnavailable, match="install it.*--backend docker.*--unsafe-no-sandbox"):
        LocalBackend(work)
    assert LocalBackend(work, trusted=True).isolation == "none"


def test_a_run_sees_only_system_folders_its_environment_and_its_workspace(backend, env, tree):
    """Nothing of the host but what SECURITY.md lists: a world-readable folder elsewhere on
    the host (where a user keeps a benchmark) can be neither listed nor read, nor can the
    benchmark's own instance.toml, the work area's other states or the store."""
    base = Path("/srv") if Path("/srv").is_dir() else Path("/opt")
    outside = Path(tempfile.mkdtemp(prefix="testprism-visible-", dir=base))
    try:
        outside.chmod(0o755)
        (outside / "instance.toml").write_text('[[candidates]]\nid = "x"\nlabel = "invalid"\n')
        (outside / "instance.toml").chmod(0o644)
        script = (f"echo '== list'; ls -A {outside} 2>/dev/null; echo '== read'; cat {outside}/instance.toml 2>/dev/null; "
                  f"echo '== root'; ls -A /; echo '== host tree'; ls -A {tree} 2>/dev/null; echo '== end'; "
                  "echo PWD=$PWD; test -w /usr || echo usr-ro")
        result = run(backend, env, tree, script)
        parts = dict(chunk.split("\n", 1) for chunk in result.output_tail.split("== ")[1:])
        assert parts["list\n".strip()].split() == [] and parts["read"].split() == []
        assert parts["host tree"].split() == []  # the state tree on the host is not there
        if backend.name == "local":  # a root of its own: nothing but the listed mounts
            allowed = {"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "dev", "proc", "tmp", "var",
                       "workspace", str(env).split("/")[1]}
            assert set(parts["root"].split()) <= allowed, parts["root"]
        assert "PWD=/workspace/program" in parts["end"] and "usr-ro" in parts["end"]
    finally:
        shutil.rmtree(outside, ignore_errors=True)


# -- where workspaces go ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["local", "docker"])
def test_workspaces_go_to_the_folder_asked_for(name, work_root, tmp_path, monkeypatch):
    """TESTPRISM_WORKSPACES (a tmpfs, say) holds every run's workspace, and only while it
    runs."""
    chosen = Path(tempfile.mkdtemp(prefix="testprism-test-", dir="/dev/shm")) / "runs"
    chosen.parent.chmod(0o755)  # as /dev/shm itself: the sandbox's uid passes through to its workspace
    monkeypatch.setenv("TESTPRISM_WORKSPACES", str(chosen))
    work = WorkPaths(work_root)  # its environments: a path the sandbox's uid can traverse
    assert work.workspaces == chosen
    made = open_backend(name, work)
    try:
        request = RunRequest(tree=tree_of(tmp_path), suite_folder=None, suite_files=(), command="sleep 2; cat data.txt",
                             environment=made.prepare(BARE), limits=Limits(timeout_s=60.0))
        done: list = []
        runner = threading.Thread(target=lambda: done.append(made.run(request)))
        runner.start()
        deadline, seen = time.monotonic() + 30, []
        while not seen and time.monotonic() < deadline:
            seen = [p for p in chosen.iterdir() if (p / "program" / "data.txt").is_file()]
            time.sleep(0.05)
        runner.join()
        assert seen, "no workspace with the state's tree appeared in the chosen folder"
        assert done[0].exit_code == 0 and "program file" in done[0].output_tail
    finally:
        made.close()
        left = [p.name for p in chosen.iterdir()] if chosen.is_dir() else []
        shutil.rmtree(chosen.parent, ignore_errors=True)
    assert left == []  # removed with its run (and the pre-started container's with the backend)


def tree_of(root: Path) -> Path:
    tree = root / "tree"
    tree.mkdir()
    (tree / "data.txt").write_text("program file\n")
    return tree


def test_an_unsafe_workspaces_folder_is_refused(tmp_path):
    """A folder another user could have made or can write, or a link, is never written into."""
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "open").mkdir(mode=0o777)
    (tmp_path / "open").chmod(0o777)
    for chosen in (tmp_path / "link", tmp_path / "open"):
        with pytest.raises(WorkspacesUnsafe, match="TESTPRISM_WORKSPACES"):
            WorkPaths(tmp_path / "work", runs_root=chosen).ensure()
    WorkPaths(tmp_path / "work", runs_root=tmp_path / "fresh").ensure()  # one it makes itself is fine
    assert (tmp_path / "fresh").is_dir() and not (tmp_path / "elsewhere" / "run").exists()


def _snapshot(root: Path) -> dict[str, tuple]:
    """Every entry under `root`: kind, mode, owner, modification time and content (a
    link's target); not the access time, which this reading itself moves."""
    seen = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            st = path.lstat()
            body = os.readlink(path) if path.is_symlink() else (path.read_bytes() if path.is_file() else b"")
            seen[str(path.relative_to(root))] = (st.st_mode, st.st_uid, st.st_mtime_ns, body)
    return seen


def _overlays_under(folder: Path, wait_s: float = 10.0) -> list[str]:
    """Overlays mounted under `folder` once finished runs' workspaces are removed (the
    local backend removes them off the run's path)."""
    deadline = time.monotonic() + wait_s
    while True:
        with open("/proc/self/mountinfo", encoding="utf-8") as fh:
            found = [line for line in fh if " - overlay " in line and line.split()[4].startswith(str(folder))]
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


LAYER_SCRIPT = """
stat -f -c 'fs=%T' .
echo "owner=$(stat -c %u data.txt) me=$(id -u) mtime=$(stat -c %Y sub/dir/nested.txt)"
grep -c -F "$STATE_TREE" /proc/self/mountinfo | sed 's/^/tree-in-mounts=/'
echo more >> data.txt && chmod 600 data.txt && rm sub/dir/nested.txt && mkdir -p new/deep \
  && echo n > new/deep/f && mv sub moved && touch -d 2001-01-01 moved && rm tool.sh && ln -sf /etc link \
  && echo done
"""


@pytest.mark.parametrize("layered", ["image", "tree", "0"])  # the default, the old layer, a copy
def test_a_layered_program_is_the_runs_own_and_the_state_tree_is_left_as_it_was(backend, env, tree, layered,
                                                                                  monkeypatch, work):
    """By default where the harness can (root, Linux 6.12+), a run's program is the state's
    tree (its image, or with TESTPRISM_LAYERED=tree the tree itself) under a writable layer
    of the run's own (tasks/sandbox/layer.py), not a copy: the run owns what
    it sees, with the settled times, may change, chmod, delete, rename and link anything,
    and the state's tree afterwards is what it was, entry for entry (mode, owner, times,
    bytes); the run's mount table does not name the tree; no overlay is left mounted.
    Fast mode (one container, its workspace reset) and the default copy."""
    monkeypatch.setenv("TESTPRISM_LAYERED", layered)
    (tree / "sub" / "dir").mkdir(parents=True)
    (tree / "sub" / "dir" / "nested.txt").write_text("nested\n")
    (tree / "tool.sh").write_text("#!/bin/sh\n")
    (tree / "tool.sh").chmod(0o755)
    os.symlink("data.txt", tree / "alias")
    for path in [*tree.rglob("*"), tree]:  # a layer gives the state's own tree these times, once
        os.utime(path, (SETTLED_MTIME, SETTLED_MTIME), follow_symlinks=False)
    before = _snapshot(tree)
    request = RunRequest(tree=tree, suite_folder=None, suite_files=(), command=LAYER_SCRIPT, environment=env,
                         limits=Limits(timeout_s=30.0), env={"STATE_TREE": str(tree)})
    done = backend.run(request)
    out = done.output_tail
    assert done.exit_code == 0 and "done" in out, out
    expect_layer = layered != "0" and not getattr(backend, "reuse", False)
    assert ("fs=overlayfs" in out) is expect_layer, out
    owner, me = re.search(r"owner=(\d+) me=(\d+)", out).groups()
    assert owner == me
    assert "mtime=1600000000" in out and "tree-in-mounts=0" in out
    assert _snapshot(tree) == before
    assert _overlays_under(work.workspaces) == []


@pytest.mark.parametrize("name", ["local", "docker"])
def test_what_a_layered_run_writes_to_its_program_is_bounded_by_its_memory_limit(name, tree, work, monkeypatch):
    """A layered program's writable layer is a tmpfs as large as the run's disk bound, and
    its pages count against the run's memory: a run that writes more than its memory limit
    into its program is refused (killed by its memory cgroup, or out of space), where a copy
    on disk had no bound but the disk."""
    monkeypatch.setenv("TESTPRISM_LAYERED", "1")
    made = open_backend(name, work)
    try:
        done = run(made, made.prepare(BARE), tree, "stat -f -c 'fs=%T' .; dd if=/dev/zero of=big bs=1M count=200 2>&1; echo rc=$?",
                   memory_mb=128, timeout_s=60.0)
    finally:
        made.close()
    out = done.output_tail
    assert "fs=overlayfs" in out, out
    assert "rc=0" not in out and ("No space left" in out or done.exit_code not in (0, None)), out
    assert _overlays_under(work.workspaces) == []


#: Counts the pages of its program's `big` that are in the page cache (mincore on a mapping
#: that is never touched, so counting reads nothing in)
RESIDENT_SCRIPT = r"""python3 - <<'EOF'
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype, libc.mmap.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                                                          ctypes.c_int, ctypes.c_int, ctypes.c_long]
fd = os.open("big", os.O_RDONLY)
size = os.fstat(fd).st_size
addr = libc.mmap(None, size, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
vec = (ctypes.c_ubyte * ((size + 4095) // 4096))()
assert libc.mincore(ctypes.c_void_p(addr), ctypes.c_size_t(size), vec) == 0, ctypes.get_errno()
print(f"resident={sum(v & 1 for v in vec)}")
EOF
"""


@pytest.mark.parametrize("name,layered", [("local", "image"), ("docker", "image"), ("local", "tree")])
def test_a_run_does_not_find_in_the_page_cache_what_an_earlier_run_of_its_state_read(name, layered, tree, work,
                                                                                     monkeypatch):
    """Each run mounts its state's image afresh (tree_image.lower_mount), a superblock of
    its own: a run that reads 1 MiB of a program file leaves none of its pages for the next
    run of the same state to find (mincore through the overlay, no timing), which would tell that run its state ran
    before (a confirmation replay) or carry a message. The control: on the old layer over
    the state's tree itself (`tree`), whose files' page cache every run shares, the next
    run finds the pages the first one read."""
    monkeypatch.setenv("TESTPRISM_LAYERED", layered)
    with open(tree / "big", "wb") as fh:
        fh.write(os.urandom(4 << 20))
        fh.flush()
        os.fsync(fh.fileno())
        os.posix_fadvise(fh.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)  # as a state's tree long made
    made = open_backend(name, work)
    try:
        env = made.prepare(BARE)
        before = run(made, env, tree, RESIDENT_SCRIPT).output_tail
        marked = run(made, env, tree, "dd if=big of=/dev/null bs=4096 count=256 && echo marked")
        after = run(made, env, tree, RESIDENT_SCRIPT).output_tail
    finally:
        made.close()
    assert "marked" in marked.output_tail, marked.output_tail
    assert "resident=0" in before, before
    found = int(re.search(r"resident=(\d+)", after).group(1))
    if layered == "image":
        assert found == 0, after
    else:
        assert found >= 256, after


@pytest.mark.parametrize("warm", [True, False])  # the defence, and without it (the control)
def test_each_run_mounts_its_state_s_image_with_every_page_of_it_in_the_page_cache(warm, tmp_path, monkeypatch):
    """Every mount of a state's image reads through the image file's pages in the host's
    page cache, shared by all its runs: were only some cached, a run could time which
    blocks an earlier run read. So each run's mount (tree_image.lower_mount) first brings
    them all in, whatever the machine dropped since (fincore counts them, from the host).
    The control: without that step, a dropped image stays cold at the next mount."""
    from testprism.tasks.sandbox import tree_image

    tree = tmp_path / "state" / "tree"
    tree.mkdir(parents=True)
    (tmp_path / "state" / ".ready").touch()
    (tree / "big").write_bytes(os.urandom(4 << 20))
    image = tree_image.image_of(tree, SETTLED_MTIME)
    if not warm:
        monkeypatch.setattr(tree_image, "_warm", lambda image: None)
    fd = os.open(image, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # as memory pressure may leave it
    finally:
        os.close(fd)
    os.close(tree_image.lower_mount(image))
    pages, size = map(int, subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "PAGES,SIZE",
                                           str(image)], capture_output=True, text=True, check=True).stdout.split())
    total = (size + os.sysconf("SC_PAGE_SIZE") - 1) // os.sysconf("SC_PAGE_SIZE")
    assert (pages == total) is warm, (pages, total)


def test_a_layer_s_mount_options_are_the_same_whatever_descriptors_the_harness_holds(tmp_path):
    """The overlay's options, which every run reads in its /proc/self/mountinfo, name the
    layer's folders by /proc/self/fd/<n>: n is one number the process reserved, not the
    lowest free one, which followed how many descriptors the harness held at that moment
    (in a long session it differed between one state's run and the next: the clean-clone
    CI's metadata spy saw it). The control: holding 200 more descriptors moves the lowest
    free number."""
    from testprism.tasks.sandbox import layer

    assert layer.available(), "layered programs need root and Linux 6.12+ (the probe said why)"
    tree = tmp_path / "state" / "tree"
    tree.mkdir(parents=True)
    (tmp_path / "state" / ".ready").touch()
    (tree / "f").write_text("x\n")

    def options(ws: Path) -> tuple[str, int]:
        ws.mkdir()
        layer.mount_program(tree, ws, 212_345, SETTLED_MTIME, 16)
        try:
            point = str(ws / "program")
            lines = [line.split(" - ")[1] for line in Path("/proc/self/mountinfo").read_text().splitlines()
                     if line.split()[4] == point]
        finally:
            layer.discard(ws)
        lowest = fcntl.fcntl(0, fcntl.F_DUPFD, 100)  # the number the options used to name
        os.close(lowest)
        return lines[0], lowest

    first, lowest_first = options(tmp_path / "ws1")
    held = [os.open("/", os.O_PATH) for _ in range(200)]
    try:
        second, lowest_second = options(tmp_path / "ws2")
    finally:
        for fd in held:
            os.close(fd)
    assert "/proc/self/fd/" in first and first == second, (first, second)
    assert lowest_first != lowest_second


def test_a_layer_under_a_linked_work_area_is_found_and_removed(tmp_path, monkeypatch):
    """A workspace reached through a link (a linked work area, a relative --work) is
    spelled otherwise in the mount table: its layer is still unmounted and removed."""
    from testprism.tasks.sandbox import layer

    assert layer.available(), "layered programs need root and Linux 6.12+ (the probe said why)"
    real = tmp_path / "real"
    (real / "ws").mkdir(parents=True)
    (tmp_path / "state" / "tree").mkdir(parents=True)
    (tmp_path / "state" / ".ready").touch()
    (tmp_path / "state" / "tree" / "f").write_text("x\n")
    os.symlink(real, tmp_path / "linked")
    ws = tmp_path / "linked" / "ws"
    layer.mount_program(tmp_path / "state" / "tree", ws, 212_345, SETTLED_MTIME, 16)
    assert (ws / "program" / "f").stat().st_uid == 212_345 and layer._mounts_under(real)
    layer.discard(ws)
    assert layer._mounts_under(real) == [] and sorted(p.name for p in real.iterdir()) == []


def test_a_sandbox_that_cannot_be_set_up_is_an_error_not_a_failing_suite(work, tmp_path):
    """bubblewrap exits 1 when a bind source is out of the run's reach, before the command
    runs: that is the sandbox failing (SandboxError: `E`/sandbox_error, redone), never the
    suite's `F`."""
    from testprism.tasks.sandbox.base import SandboxError

    locked, tree = tmp_path / "locked", tmp_path / "tree"
    (locked / "env" / "bin").mkdir(parents=True)
    tree.mkdir()
    locked.chmod(0)
    backend = LocalBackend(work)
    try:
        with pytest.raises(SandboxError, match="did not start the command"):
            backend.run(RunRequest(tree=tree, suite_folder=None, suite_files=(), command="exit 0",
                                   environment=locked / "env", limits=Limits(timeout_s=20.0)))
    finally:
        locked.chmod(0o755)
        backend.close()


def test_a_work_area_given_relative_runs(work_root, monkeypatch):
    """`--work work`: the sandbox binds its folders by path from elsewhere, so the work area
    is made absolute where it is given."""
    monkeypatch.chdir(work_root)
    backend = LocalBackend(WorkPaths(Path("relative-work")))
    try:
        environment = backend.prepare(BARE)
        assert environment.is_absolute()
        tree = work_root / "relative-tree"
        tree.mkdir(exist_ok=True)
        result = backend.run(RunRequest(tree=tree, suite_folder=None, suite_files=(), command="exit 0",
                                        environment=environment, limits=Limits(timeout_s=20.0)))
        assert classify(result) == (Outcome.PASS, None)
    finally:
        backend.close()
