"""Shared fixtures: a work area the sandbox's unprivileged uid can traverse (pytest's own
tmp folders are private to root), a Docker engine for the docker backend's tests, and the
one place that decides what a test does when an optional component is missing.

Optional components (`COMPONENTS`): `sandbox` (bubblewrap that can create its namespaces,
and a Python 3.11 the sandbox's uid can run), `docker` (an engine that answers),
`chromium` (the report's rendering tests), `toolchains` (go, gotestsum and node, which
the Go and JavaScript instances replay on; java, javac and mvn, the Java one's; cmake and g++, the C and C++ ones) and `slurm` (Debian's SLURM and munge daemons and
clients, run as root, and dask-jobqueue: tests/test_slurm.py starts a one-node cluster of
its own). A test asks for one with `@pytest.mark.requires("sandbox")` or the `require`
fixture (`require("chromium")`). Missing, it FAILS when `TESTPRISM_REQUIRE_<NAME>` is set
(make test sets all five, after .ci/setup has installed them) and skips, naming that
variable, when it is not (bare pytest)."""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import chatserver

from testprism.flows.progress import QUIET_LOGS
from testprism.tasks.model.workdir import WorkPaths


@dataclass(frozen=True)
class Component:
    variable: str  # set (not "" or "0"): a missing component fails the test instead of skipping it
    problem: Callable[[], str | None]  # why it is unusable here, or None


def _sandbox_problem() -> str | None:
    from testprism.tasks.sandbox.environment import EnvironmentBuildError, find_interpreter
    from testprism.tasks.sandbox.local import bubblewrap_works

    problems = []
    if not shutil.which("bwrap"):
        problems.append("bwrap is not on PATH (apt-get install bubblewrap)")
    elif not bubblewrap_works():
        problems.append("bwrap cannot create its namespaces here (no unprivileged user namespaces?)")
    try:  # as root the sandbox drops to a uid of its own, which must be able to run the interpreter
        find_interpreter("3.11", need_world_readable=os.geteuid() == 0)
    except EnvironmentBuildError as exc:
        problems.append(f"{exc} (apt-get install python3.11 python3.11-venv)")
    return "; ".join(problems) or None


def _docker_problem() -> str | None:
    from testprism.tasks.sandbox.docker.engine import engine_answers

    if engine_answers():
        return None
    where = os.environ.get("DOCKER_HOST", "the default socket")
    return f"no Docker engine answers at {where} (apt-get install docker.io; .ci/start-dockerd)"


def chromium_binary() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _chromium_problem() -> str | None:
    return None if chromium_binary() else "neither chromium nor chromium-browser is on PATH (apt-get install chromium)"


#: the host toolchains the language tests replay on (the local backend's)
TOOLCHAINS = {"go": "golang-go", "gotestsum": "gotestsum", "node": "nodejs", "cargo": "cargo", "rustc": "rustc"}
TOOLCHAINS |= {"java": "default-jdk-headless", "javac": "default-jdk-headless", "mvn": "maven"}  # the Java instance's
#: Vitest and tsc are npm's, which .ci/setup installs (examples/environments/typescript)
TOOLCHAINS |= {"vitest": "npm; then .ci/setup installs it", "tsc": "npm; then .ci/setup installs it"}
TOOLCHAINS |= {"cmake": "cmake", "g++": "g++"}  # the C and C++ instances'
#: ... and the PHP and Ruby tests (tests/test_lang_php_ruby.py)
TOOLCHAINS |= {"php": "php-cli", "phpunit": "phpunit", "ruby": "ruby", "rspec": "ruby-rspec"}
#: ... and the Rust coverage pass's profile tools (tests/test_coverage_lang.py; .ci/setup)
TOOLCHAINS |= {"llvm-profdata-14": "llvm-14 libclang-rt-14-dev", "llvm-cov-14": "llvm-14 libclang-rt-14-dev"}


def _toolchains_problem() -> str | None:
    missing = [f"{tool} (apt-get install {package})" for tool, package in TOOLCHAINS.items() if not shutil.which(tool)]
    return f"not on PATH: {', '.join(missing)}" if missing else None


#: the SLURM and munge programs tests/test_slurm.py runs, and the Debian package of each
SLURM_PROGRAMS = {"slurmctld": "slurmctld", "slurmd": "slurmd", "sinfo": "slurm-client", "sbatch": "slurm-client",
                  "munged": "munge"}


def _slurm_problem() -> str | None:
    problems = [f"{tool} is not on PATH (apt-get install {package})"
                for tool, package in SLURM_PROGRAMS.items() if not shutil.which(tool)]
    if os.geteuid() != 0:  # slurmd starts its jobs' processes as their user, which only root may
        problems.append(f"not root (uid {os.geteuid()}): the test's one-node cluster runs its daemons as root")
    if importlib.util.find_spec("dask_jobqueue") is None:
        problems.append("dask_jobqueue is not importable (pip install -e '.[test]')")
    return "; ".join(problems) or None


COMPONENTS = {
    "sandbox": Component("TESTPRISM_REQUIRE_SANDBOX", _sandbox_problem),
    "docker": Component("TESTPRISM_REQUIRE_DOCKER", _docker_problem),
    "chromium": Component("TESTPRISM_REQUIRE_CHROMIUM", _chromium_problem),
    "toolchains": Component("TESTPRISM_REQUIRE_TOOLCHAINS", _toolchains_problem),
    "slurm": Component("TESTPRISM_REQUIRE_SLURM", _slurm_problem),
}


@functools.cache
def _problem(name: str) -> str | None:
    return COMPONENTS[name].problem()  # once a session: the probes start processes


def required(name: str) -> bool:
    return os.environ.get(COMPONENTS[name].variable, "") not in ("", "0")


def require(name: str) -> None:
    """Return when component `name` is usable; else fail (required) or skip (not required)."""
    problem = _problem(name)
    if problem is None:
        return
    variable = COMPONENTS[name].variable
    if required(name):
        pytest.fail(f"{variable} is set but {name} is unusable: {problem}. "
                    f"`.ci/setup test` installs it, or says what to do", pytrace=False)
    pytest.skip(f"{name} is unusable: {problem} (set {variable}=1 to make this a failure; make test does)")


@pytest.fixture(name="require", scope="session")
def require_fixture() -> Callable[[str], None]:
    """`require` for tests that decide inside a fixture (a parametrised backend, say)."""
    return require


#: opts in the tests marked polyglot (`make test-polyglot`): the replays of the bundled Rust,
#: Java, TypeScript, C, C++, PHP and Ruby instances under both backends (each builds its
#: toolchain's image and replays every state, 5 to 13 minutes a module cold), the agent in
#: those languages, the labelling of Go, JavaScript, Java and Rust mutants, the scripted generators'
#: Go suites and Go/JavaScript under docker: more than CI's 30 minutes leave
POLYGLOT = "TESTPRISM_POLYGLOT"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"requires(*components): needs optional components ({', '.join(COMPONENTS)})")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A `polyglot` test not opted in skips, saying how to opt in (never silently: -ra lists it)."""
    if os.environ.get(POLYGLOT) == "1":
        return
    skip = pytest.mark.skip(reason=f"a language's replay under both backends: opt in with {POLYGLOT}=1 "
                                   "(make test-polyglot)")
    for item in items:
        if item.get_closest_marker("polyglot") is not None:
            item.add_marker(skip)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Runs after skipif (a tryfirst hook: an opt-in test not opted in skips, whatever it
    requires) and before the test's fixtures are set up (none of them is built for nothing)."""
    for mark in item.iter_markers("requires"):
        for name in mark.args:
            require(name)


@pytest.fixture(scope="session")
def work_root() -> Path:
    base = Path("/var/tmp") if Path("/var/tmp").is_dir() else Path(tempfile.gettempdir())
    root = Path(tempfile.mkdtemp(prefix="testprism-tests-", dir=base))
    root.chmod(0o755)
    yield root
    # Gigabytes by the end (environments, exported image roots, built trees): removing them
    # took 43 s of CI's wall time at the session's end, so a detached `rm` does it after.
    subprocess.Popen(["rm", "-rf", "--one-file-system", str(root)], stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


@pytest.fixture(scope="session")
def work(work_root: Path) -> WorkPaths:
    paths = WorkPaths(work_root)
    paths.ensure()
    return paths


@pytest.fixture(scope="session")
def docker_engine() -> None:
    require("docker")


def script_module(path: Path, name: str):
    """A script that is not a package module (bench/, the bundled generators), loaded by path."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def open_backend(name: str, work: WorkPaths):
    """A sandbox backend by its name in tests: `local`, `docker` (fresh containers, the copy
    mode the engine allows), `docker-reused` (fast mode), `docker-archive` (archive copy
    mode even on this host); the component it needs is required first."""
    if name == "local":
        require("sandbox")
        from testprism.tasks.sandbox.local import LocalBackend

        return LocalBackend(work)
    require("docker")
    from testprism.tasks.sandbox.docker.backend import DockerBackend

    return DockerBackend(work, reuse=name == "docker-reused", copy="archive" if name == "docker-archive" else None)


@pytest.fixture(scope="session")
def chromium_path() -> str:
    require("chromium")
    return chromium_binary()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Stop Prefect's temporary API servers while pytest's streams are still open: their
    atexit hook logs to a console that pytest has closed by then ("Logging error")."""
    from prefect.logging.handlers import APILogWorker
    from prefect.server.api.server import SubprocessASGIServer

    APILogWorker.drain_all(timeout=5)  # the run logs still queued go to the server before it stops
    logging.getLogger("prefect").setLevel(logging.WARNING)  # "Stopping temporary server": noise
    for server in list(SubprocessASGIServer._instances.values()):
        server.stop()


#: the loopback chat-completions server (tests/chatserver.py), for the judge's tests
endpoint = chatserver.endpoint


def _restore_log_levels() -> None:
    for name in QUIET_LOGS:
        if (value := _LOG_LEVELS_AT_START.get(name)) is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


#: flows/progress.py's QUIET_LOGS as pytest started
_LOG_LEVELS_AT_START = {name: os.environ.get(name) for name in QUIET_LOGS}


@pytest.fixture(autouse=True)
def _cli_log_levels_stay_in_their_test():
    """A command run in-process (typer's CliRunner) quiets Prefect's and Dask's console logs
    by setting flows/progress.py's QUIET_LOGS in the process environment, as a real CLI process
    does for its own life; here that life is one test, so each test starts and ends with the
    values pytest started with (a later test's Prefect worker or SLURM job would inherit them,
    and log nothing at INFO). At the start too, not only the end: a module's fixture runs
    commands before its first test's own set-up (test_select's store did, and test_slurm's
    job then logged nothing)."""
    _restore_log_levels()
    yield
    _restore_log_levels()
