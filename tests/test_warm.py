"""Warm states (issue 41, tasks/sandbox/warm.py): a run forked from its state's warm process
sees what a cold run sees, comes out as a cold run does, and cannot tell its place among
the warm process's children.

- which commands and suites the warm route takes (no sandbox needed);
- fidelity: what a run sees (variables, sys.path, sys.argv, folder, limits, capabilities,
  pids, descriptors) and its tests' outcomes are a cold run's; a suite that sets what the
  program reads at import before importing it is sent cold, and comes out as cold does (the
  control: with the import-order check off, the warm run's outcome differs);
- a unit's confirmation starts cold (a warm run's string-hash seed is its state's);
- the hidden panel: the first and a later child of one warm process see the same
  surroundings, whatever the runs between them left (module state, variables, files) (the control: without a pid namespace per run, the later child's pid tells
  how many came before it).
"""

from __future__ import annotations

import json
import logging
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import polars as pl
import pytest

from testprism.tasks.execution.batch import Environments, ExecutionOptions
from testprism.tasks.model.benchmark_format import EnvironmentSpec
from testprism.tasks.sandbox import warm, warm_clone
from testprism.tasks.sandbox.base import ExecResult, Limits, RunRequest
from testprism.tasks.sandbox.warm_admission import import_order_risk, packages_of, pytest_command, script_command
from tests.conftest import open_backend
from tests.test_position_signals import PROBE

PYTEST_ENV = EnvironmentSpec(python="3.11", packages=("pytest>=8,<10",))
#: what a run's interpreter is, beside PROBE's surroundings (the Python-level state a warm
#: process could carry from one child to the next)
SEEN = PROBE.replace('print("PROBE"', '''import gc, resource
parts["python"] = json.dumps({
    "argv": sys.argv[1:], "orig_argv": sys.orig_argv[1:], "path": sys.path, "cwd": os.getcwd(),
    "limits": [resource.getrlimit(r) for r in (resource.RLIMIT_FSIZE, resource.RLIMIT_CORE, resource.RLIMIT_NOFILE,
                                               resource.RLIMIT_AS, resource.RLIMIT_NPROC)],
    "pid": os.getpid(), "ppid": os.getppid(), "umask": os.umask(0o22), "main": sys.argv[0],
    "status": [l for l in read("/proc/self/status").splitlines() if l.split(":")[0] in (
        "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "SigIgn", "SigBlk")],
})
import ctypes
parts["left"] = json.dumps([os.path.exists(p) for p in ("/tmp/left", "/dev/shm/left", "/left", "/dev/left")] + [
    getattr(sys.modules.get("sidefx"), "MODE", None), os.environ.get("LEFT"),
    ctypes.CDLL(None).syscall(249, b"user", b"testprism-left", None, 0) > 0])  # request_key: a key left
parts["heap"] = json.dumps({"blocks": sys.getallocatedblocks(), "objects": len(gc.get_objects()),
                            "next_id": id(object()) % 4096})
print("PROBE"''')
PROBE_TEST = "def test_probe():\n    exec(compile(PROBE, 'probe', 'exec'), {})\n"
COMMAND = "python -m pytest -q -s -p no:cacheprovider tmp/test_probe.py --junitxml=$TESTPRISM_JUNIT"


# -- which runs are warm ----------------------------------------------------------------------


def test_an_entry_script_of_one_pytest_command_is_run_warm(tmp_path):
    def entry(text: str) -> object:
        (tmp_path / "run_tests.sh").write_text(text)
        return script_command(RunRequest(tree=tmp_path, suite_folder=tmp_path, suite_files=("run_tests.sh",),
                                          command="bash tmp/run_tests.sh", environment=tmp_path, limits=Limits()))

    found = entry('#!/usr/bin/env bash\nset -u\nexec python -m pytest -q tmp --junitxml="$TESTPRISM_JUNIT"\n')
    assert found is not None and found.arguments == ("-q", "tmp", "--junitxml=\0")
    assert entry("set -u\npip install x\npython -m pytest tmp\n") is None
    assert entry("python -m pytest tmp || true\n") is None
    assert entry("python -m pytest tmp\n") is None  # not exec'd: bash stays the parent, its variables differ
    found = entry("set -u\nX=1 exec python -m pytest tmp\n")
    assert found is not None and found.assignments == (("X", "1"),)
    assert entry("exec X=1 python -m pytest tmp\n") is None  # bash: `exec: X=1: not found`, 127 cold


def test_only_a_plain_pytest_command_is_run_warm():
    command = pytest_command("PYTHONWARNINGS=ignore::UserWarning python -m pytest -rA a/test_x.py "
                             "--junitxml=$TESTPRISM_JUNIT")
    assert command is not None
    assert command.assignments == (("PYTHONWARNINGS", "ignore::UserWarning"),)
    assert command.arguments == ("-rA", "a/test_x.py", "--junitxml=\0")
    for shell in ("python -m pytest tests; rm -rf x", "python -m pytest tests && true", "python -m pytest $X",
                  "python -m pytest 'tests/*.py'", "python -m pytest tests > out", "cd x && python -m pytest",
                  "python -m pytest -p myplugin tests", "pytest tests", "python tests/run.py", "X=$Y python -m pytest"):
        assert pytest_command(shell) is None, shell
    assert pytest_command("python -m pytest -p no:cacheprovider tests") is not None


def test_the_program_packages_come_from_the_tree(tmp_path):
    for name, init in (("pkg", True), ("tests", True), ("data", False), ("not-an-id", True)):
        (tmp_path / name).mkdir()
        if init:
            (tmp_path / name / "__init__.py").write_text("")
    (tmp_path / "setup.py").write_text("")
    assert packages_of(tmp_path) == ("pkg",)


def test_what_runs_before_the_program_import_decides():
    program = ["import os\nMODE = os.environ.get('PKG_MODE', 'off')\nimport sys\nFLAG = getattr(sys, '_pkg_flag', 0)\n"]
    neutral = ('"""doc"""\nimport os, sys\nfrom typing import Any\nLIMIT = 3\nsys._running_pytest = True\n'
               'def helper():\n    os.environ["PKG_MODE"] = "on"\nimport pkg\nos.environ["PKG_MODE"] = "on"\n')
    assert import_order_risk({"test_a.py": neutral}, ("pkg",), program) is None
    for risky in ('import os\nos.environ["PKG_MODE"] = "on"\nimport pkg\n',
                  "import sys\nsys._pkg_flag = 1\nfrom pkg import x\n",
                  "import os\nos.putenv('A', 'b')\nimport pkg\n",
                  "import pytest\n@pytest.fixture\ndef f(): pass\nimport pkg\n",
                  "import os\nos.environ['PKG_MODE'] = 'on'\ndef test(): import pkg\n"):
        assert import_order_risk({"test_a.py": risky}, ("pkg",), program), risky


# -- in the sandbox --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def state(work_root) -> Path:
    """A finished work-area tree whose package reads a variable at import."""
    tree = work_root / "warm" / "state" / "tree"
    (tree / "sidefx").mkdir(parents=True, exist_ok=True)
    (tree / "sidefx" / "__init__.py").write_text("import os\nMODE = os.environ.get('SIDEFX_MODE', 'off')\n")
    (tree.parent / ".ready").touch()
    return tree


@pytest.fixture(scope="module")
def suites(work_root) -> Path:
    folder = work_root / "warm-suites"
    folder.mkdir(exist_ok=True)
    (folder / "test_probe.py").write_text(f"PROBE = {SEEN!r}\n{PROBE_TEST}")
    (folder / "test_order.py").write_text(
        "import os\nos.environ['SIDEFX_MODE'] = 'on'\nimport sidefx\n\n"
        "def test_the_suite_set_the_mode_first():\n    assert sidefx.MODE == 'on'\n")
    (folder / "test_leave.py").write_text(
        "import ctypes, os, sidefx\n\ndef test_leave_what_a_next_run_could_find():\n"
        "    sidefx.MODE = 'left'\n    os.environ['LEFT'] = '1'\n"
        "    for path in ('/tmp/left', '/dev/shm/left', '/left', '/dev/left'):\n"
        "        try:\n            open(path, 'w').write('1')\n        except OSError:\n            pass\n"
        "    ctypes.CDLL(None).syscall(248, b'user', b'testprism-left', b'1', 1, -4)  # add_key to the user keyring\n")
    (folder / "test_plain.py").write_text(
        "import sys\nsys._plain_suite = True\nimport sidefx\n\n"
        "def test_the_program_imported():\n    assert sidefx.MODE == 'off'\n")
    return folder


@pytest.fixture
def backend(work):
    backend = open_backend("local", work)
    yield backend
    backend.close()


def _run(backend, tree: Path, suites: Path, file: str, warm_route: bool, script: bool = False
         ) -> tuple[int | None, str]:
    """A run of the suite file `file`, by a command line or (`script`) an entry script as the
    bundled suites have (`bash tmp/run_tests.sh`)."""
    command = COMMAND.replace("test_probe.py", file)
    if script:
        quoted = command.replace("$TESTPRISM_JUNIT", '"$TESTPRISM_JUNIT"')
        (suites / "run_tests.sh").write_text(f"#!/usr/bin/env bash\nset -u\nexec {quoted}\n")
    result = backend.run(RunRequest(
        tree=tree, suite_folder=suites, suite_files=(file, "run_tests.sh") if script else (file,),
        command="bash tmp/run_tests.sh" if script else command,
        environment=backend.prepare(PYTEST_ENV), limits=Limits(timeout_s=120.0, tail_bytes=1 << 20), warm=warm_route))
    return result.exit_code, result.output_tail


def _seen(backend, tree: Path, suites: Path, warm_route: bool, script: bool = False) -> dict[str, str]:
    code, tail = _run(backend, tree, suites, "test_probe.py", warm_route, script)
    assert code == 0, tail
    line = next(line for line in tail.splitlines() if line.startswith("PROBE "))
    return json.loads(line.removeprefix("PROBE "))


def _went_cold(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "goes cold" in r.getMessage()]


@pytest.mark.parametrize("script", [False, True], ids=["command", "entry-script"])
def test_a_warm_run_sees_what_a_cold_run_sees(backend, state, suites, caplog, script):
    caplog.set_level(logging.DEBUG, logger="testprism.tasks.sandbox.local")
    cold = _seen(backend, state, suites, False, script)
    warm_seen = _seen(backend, state, suites, True, script)
    assert not _went_cold(caplog)
    for part in ("python", "env", "fds", "cwd", "pids", "host", "inodes", "cgroup"):
        if part in cold:
            assert warm_seen[part] == cold[part], part
    status = json.loads(warm_seen["python"])["status"]
    assert {"CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "NoNewPrivs:\t1"} <= set(status)


def test_a_suite_that_sets_what_the_import_reads_runs_cold_and_as_cold(backend, state, suites, caplog):
    caplog.set_level(logging.DEBUG, logger="testprism.tasks.sandbox.local")
    assert _run(backend, state, suites, "test_order.py", False)[0] == 0
    assert _run(backend, state, suites, "test_order.py", True)[0] == 0
    assert any("SIDEFX_MODE" in m for m in _went_cold(caplog))
    caplog.clear()
    assert _run(backend, state, suites, "test_plain.py", True)[0] == 0  # sets what the program does not read
    assert not _went_cold(caplog)


def test_control_without_the_import_order_check_the_warm_outcome_differs(backend, state, suites, monkeypatch):
    monkeypatch.setattr(warm, "import_order_risk", lambda *args: None)
    code, tail = _run(backend, state, suites, "test_order.py", True)
    assert code == 1 and "assert 'off' == 'on'" in tail


#: the child compared with the first (runs of another suite between them)
LATER = 5
#: the hidden panel's case: the hundredth clone of one warm process
HUNDREDTH = 100


def _first_and_later(backend, state: Path, suites: Path, later: int = LATER) -> tuple[dict, dict]:
    first = _seen(backend, state, suites, True)
    for _ in range(later - 2):  # runs that leave what they can: module state, variables, files
        assert _run(backend, state, suites, "test_leave.py", True)[0] == 0
    return first, _seen(backend, state, suites, True)


@pytest.mark.parametrize("later", [LATER, pytest.param(HUNDREDTH, marks=pytest.mark.slow)])
def test_a_later_child_sees_what_the_first_saw(backend, state, suites, caplog, later):
    """Its pid, parent, processes, descriptors, mounts, cgroup, folders' inodes, variables,
    limits, capabilities, interpreter (allocated blocks, objects, the next object's address),
    and what earlier runs tried to leave (files at /tmp, /dev/shm, /, /dev, a key, module
    state, a variable): the same for the first and the later clone, the fifth or the
    hundredth (the controls below take one defence off each)."""
    caplog.set_level(logging.DEBUG, logger="testprism.tasks.sandbox.local")
    first, later_seen = _first_and_later(backend, state, suites, later)
    assert not _went_cold(caplog)
    assert later_seen == first


def test_control_without_a_pid_namespace_per_run_the_place_shows(backend, state, suites, monkeypatch):
    monkeypatch.setattr(warm_clone, "FRESH_PID_NAMESPACE", False)
    first, later = _first_and_later(backend, state, suites)
    assert json.loads(later["python"])["pid"] > json.loads(first["python"])["pid"]


def test_control_with_the_shared_mounts_writable_a_file_left_there_shows(backend, state, suites, monkeypatch):
    """bubblewrap's root and /dev are tmpfs mounts of the warm sandbox, the same for each of
    its children: the defence makes them read-only in every child."""
    monkeypatch.setattr(warm_clone, "READ_ONLY", ())
    first, later = _first_and_later(backend, state, suites)
    assert json.loads(first["left"])[2:4] == [False, False]
    assert json.loads(later["left"])[2:4] == [True, True]


def test_control_with_keyrings_allowed_a_key_left_shows(backend, state, suites, monkeypatch):
    """Every child has its warm process's uid in its user namespace, so one user keyring,
    which outlives the run that added to it (a cold run's uid and namespace are its own)."""
    monkeypatch.setattr(warm_clone, "DENY_KEYRINGS", False)
    first, later = _first_and_later(backend, state, suites)
    assert json.loads(first["left"])[-1] is False
    assert json.loads(later["left"])[-1] is True


# -- confirmations -----------------------------------------------------------------------------


class _Recording:
    """A backend that fails every run of the test `t` and records whether each was warm."""

    def __init__(self) -> None:
        self.warm: list[bool] = []

    def prepare(self, spec: EnvironmentSpec) -> Path:
        return Path("/nonexistent-env")

    def run(self, request: RunRequest) -> ExecResult:
        self.warm.append(request.warm)
        report = (b'<testsuites><testsuite name="s" tests="1" failures="1"><testcase classname="m" name="t">'
                  b'<failure message="no"/></testcase></testsuite></testsuites>')
        return ExecResult(exit_code=1, duration_s=0.0, output_tail="1 failed", junit_xml=report)


def test_only_the_first_attempt_is_warm_its_confirmation_starts_cold():
    """A warm run has its state's string-hash seed: a failure that follows hash order would
    repeat in a warm confirmation, so the confirmation starts cold (a seed of its own)."""
    backend = _Recording()
    options = ExecutionOptions(backend="local", work_root=None, store_root=None)
    Environments(backend).judged(PYTEST_ENV, options, ("m::t",), lambda environment: RunRequest(
        tree=environment, suite_folder=None, suite_files=(), command="python -m pytest", environment=environment,
        limits=Limits(), warm=True), confirm=True)
    assert backend.warm[0] is True and len(backend.warm) >= 2
    assert not any(backend.warm[1:])


def test_an_evicted_warm_process_ends_after_its_runs_in_flight(backend, state, suites, work_root, monkeypatch,
                                                               caplog):
    """Past KEEP warm processes the least recently used goes, but only once the runs forked
    from it are done: they live in its pid namespace."""
    caplog.set_level(logging.DEBUG, logger="testprism.tasks.sandbox.local")
    monkeypatch.setattr(warm, "KEEP", 1)
    other = work_root / "warm" / "other" / "tree"
    (other / "sidefx").mkdir(parents=True, exist_ok=True)
    (other / "sidefx" / "__init__.py").write_text("MODE = 'off'\n")
    (other.parent / ".ready").touch()
    with ThreadPoolExecutor(max_workers=2) as pool:
        codes = list(pool.map(lambda tree: _run(backend, tree, suites, "test_plain.py", True)[0],
                              [state, other, state, other]))
    assert codes == [0, 0, 0, 0]
    assert not _went_cold(caplog)


# -- hostile programs: a frozen warm process, clones made by the harness --------------------------

#: a program whose import-time code (run once, in the warm process) would count the runs
#: made from it: by a fork hook, and by the calls of the warm process's own loop (it wraps
#: `os.read`, which the warm process calls to wait for a request; a clone resumes inside that
#: one call). A frozen warm process calls neither again.
COUNTING = """import os
FORKS, READS = [0], [0]
os.register_at_fork(before=lambda: FORKS.__setitem__(0, FORKS[0] + 1))
_read = os.read
def read(fd, n):
    READS[0] += 1
    return _read(fd, n)
os.read = read
"""
#: a program that keeps what its clones would share: a shared page and a descriptor
SHARING = """import mmap, os
SHARED = mmap.mmap(-1, 4096, flags=mmap.MAP_SHARED)
KEPT = os.open("/tmp", os.O_TMPFILE | os.O_RDWR)
"""
COUNTED = """import json, hostile

def test_place():
    seen = [hostile.FORKS[0], hostile.READS[0]]
    print("PLACE", json.dumps(seen))
    assert seen == [0, 1]
"""
SHARED = """import json, os, hostile

def test_place():
    try:
        kept = os.lseek(hostile.KEPT, 0, os.SEEK_CUR)
        os.write(hostile.KEPT, b"x")
    except OSError:
        kept = -1
    seen = [hostile.SHARED[0], kept]
    hostile.SHARED[0] += 1
    print("PLACE", json.dumps(seen))
    assert seen == [0, 0]
"""
#: the control of COUNTING: the same program served as the warm route served it before the
#: freeze (its process loops, reading a byte per run and forking): each child sees its place
SERVER = """import json, os, sys
sys.path.insert(0, os.getcwd())
import hostile
r, w = os.pipe()
os.write(w, b"xxx")
for _ in range(3):
    os.read(r, 1)
    if os.fork() == 0:
        print("PLACE", json.dumps([hostile.FORKS[0], hostile.READS[0]]), flush=True)
        os._exit(0)
    os.wait()
"""


def _program(work_root: Path, name: str, source: str) -> Path:
    tree = work_root / "warm" / name / "tree"
    (tree / "hostile").mkdir(parents=True, exist_ok=True)
    (tree / "hostile" / "__init__.py").write_text(source)
    (tree.parent / ".ready").touch()
    return tree


def _places(backend, tree: Path, suites: Path, suite: str, runs: int = 3) -> list[list[int]]:
    (suites / "test_place.py").write_text(suite)
    places = []
    for _ in range(runs):
        _, tail = _run(backend, tree, suites, "test_place.py", True)
        places.append(json.loads(next(line for line in tail.splitlines() if "PLACE" in line).split("PLACE ")[1]))
    return places


def test_a_hostile_program_cannot_count_the_runs_cloned_from_its_frozen_warm_process(backend, work_root, suites,
                                                                                     caplog):
    """Its import-time code ran in the warm process, which never runs again: every clone
    starts from the same memory, so a fork hook never fires and the loop's call it wrapped
    was made once, for all of them. The control: the same program served by a process that
    forks its runs itself (the warm route before the freeze) gives each child its place."""
    caplog.set_level(logging.DEBUG, logger="testprism.tasks.sandbox")
    tree = _program(work_root, "counting", COUNTING)
    assert _places(backend, tree, suites, COUNTED) == [[0, 1]] * 3
    assert not _went_cold(caplog) and any("frozen" in r.getMessage() for r in caplog.records)
    python = backend.prepare(PYTEST_ENV) / "bin" / "python"
    served = subprocess.run([str(python), "-c", SERVER], cwd=tree, capture_output=True, text=True, check=True).stdout
    assert [json.loads(line.split("PLACE ")[1]) for line in served.splitlines()] == [[1, 1], [2, 2], [3, 3]]


def test_a_warm_process_holding_what_its_clones_would_share_is_refused(backend, work_root, suites, caplog,
                                                                       monkeypatch):
    """A shared page or a descriptor the import kept would be every clone's: the freeze
    refuses that warm process and its state runs cold, each run seeing nothing of the others
    (control: without the check, the shared page counts the runs; the descriptor is closed
    in every clone all the same)."""
    caplog.set_level(logging.DEBUG, logger="testprism.tasks.sandbox.local")
    tree = _program(work_root, "sharing", SHARING)
    assert _places(backend, tree, suites, SHARED) == [[0, 0]] * 3
    assert any("shared memory" in m for m in _went_cold(caplog))
    backend.close()
    monkeypatch.setattr(warm, "CHECK_AT_FREEZE", False)
    unchecked = open_backend("local", backend.work)
    try:
        assert _places(unchecked, tree, suites, SHARED) == [[0, -1], [1, -1], [2, -1]]
    finally:
        unchecked.close()


def test_a_replay_with_warm_states_on_an_untrusted_benchmark_clones_every_state(tmp_path, work_root, caplog):
    """`replay --warm` clones the runs of any benchmark's states from their frozen warm
    processes (`runs.warm_route`), every state alike: a hostile candidate whose suite run
    fails when its import-time code sees a fork passes, warm."""
    from testprism.storage import Store
    from testprism.tasks.model.benchmark import load_benchmark
    from testprism.tasks.replay import runs

    from tests.benchfixture import BUGGY, diff, make_benchmark

    caplog.set_level(logging.DEBUG, logger="testprism.tasks.sandbox")
    hostile = diff("hostile/__init__.py", "", "import os\nFORKS = [0]\n"
                   "os.register_at_fork(before=lambda: FORKS.__setitem__(0, FORKS[0] + 1))\n")
    suite = "import hostile\n\ndef test_no_fork_seen():\n    assert hostile.FORKS == [0]\n"
    extra = {"hostile": ("valid", diff("stats.py", BUGGY, BUGGY + "# hostile\n") + hostile)}
    root = make_benchmark(tmp_path / "bench", {"s": {"test_h.py": suite}}, extra)
    benchmark = load_benchmark(root)
    store = Store(root.parent / "store")
    runs.record_plan(benchmark, store)
    options = ExecutionOptions(backend="local", work_root=work_root, store_root=root.parent / "store",
                               concurrency=1, warm=True, trusted=False)
    specs = [s for s in runs.plan(benchmark, options) if s.runs_in_sandbox and s.state.candidate_id == "hostile"]
    runs.execute_batch(specs, options)
    rows = store.scan("runs").collect().filter(pl.col("candidate_id") == "hostile")
    assert [f"{r['outcome']}/{r['reason']}" for r in rows.iter_rows(named=True)] == ["P/None"]
    assert any("frozen" in r.getMessage() for r in caplog.records) and not _went_cold(caplog)
