"""Local environments: one virtualenv per environment key, built once and shared by every
instance and candidate with that key; for an environment without a Python, an empty folder
whose `bin/` stands first on PATH, and the host toolchains it names, checked."""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from testprism.tasks.model.benchmark_format import EnvironmentSpec
from testprism.tasks.model.workdir import WorkPaths, build_once

log = logging.getLogger(__name__)


class EnvironmentBuildError(RuntimeError):
    """An environment could not be built (no interpreter, install failed). Never retried:
    the same recipe fails the same way."""


def world_readable(path: Path) -> bool:
    """Whether an unprivileged uid can reach and run `path` (every parent traversable)."""
    real = path.resolve()
    for parent in [real, *real.parents]:
        mode = parent.stat().st_mode
        if parent != real and not mode & 0o001:
            return False
    return bool(real.stat().st_mode & 0o005)


def find_interpreter(version: str, need_world_readable: bool) -> Path:
    """An interpreter of `version`: `$TESTPRISM_PYTHON_<major><minor>` if set, else the
    system's, else PATH's. A sandbox that drops to an unprivileged uid needs one it can read
    (a pyenv under /root is not)."""
    override = os.environ.get(f"TESTPRISM_PYTHON_{version.replace('.', '')}")
    found = [Path(override)] if override else []
    found += [Path(f"/usr/bin/python{version}"), Path(f"/usr/local/bin/python{version}")]
    on_path = shutil.which(f"python{version}")
    if on_path:
        found.append(Path(on_path))
    if f"{sys.version_info.major}.{sys.version_info.minor}" == version:
        found.append(Path(sys.executable))
    for candidate in found:
        if candidate.exists() and (not need_world_readable or world_readable(candidate)):
            return candidate
    hint = " readable by an unprivileged user" if need_world_readable else ""
    raise EnvironmentBuildError(
        f"environment.python: no Python {version} interpreter{hint} found (tried {', '.join(map(str, found))}); "
        f"install one or point TESTPRISM_PYTHON_{version.replace('.', '')} at it"
    )


def check_toolchains(spec: EnvironmentSpec, need_world_readable: bool = False) -> None:
    """The host commands a local run of `spec` needs (`toolchains`), all on this host's
    PATH (and runnable by the sandbox's uid when it drops to one), or one error naming every
    missing one and how to get it. The local backend runs on the host's own toolchains: it
    cannot build a Dockerfile."""
    missing = [name for name in spec.toolchains if not _runnable(name, need_world_readable)]
    if missing:
        hints = ", ".join(f"{name} (Debian: apt install {DEBIAN_PACKAGES.get(name, name)})" for name in missing)
        raise EnvironmentBuildError(f"environment.toolchains: not on this host: {hints}; or use --backend docker")
    if spec.dockerfile is not None and spec.python is None and not spec.toolchains:
        raise EnvironmentBuildError(
            f"environment.dockerfile: the local backend cannot build {spec.dockerfile}; list the host commands "
            "its runs need in environment.toolchains, or use --backend docker"
        )


#: the Debian package that gives a toolchain command, for check_toolchains' hint
DEBIAN_PACKAGES = {"go": "golang-go", "gotestsum": "gotestsum", "node": "nodejs", "npm": "npm",
                   "java": "default-jdk-headless", "javac": "default-jdk-headless", "mvn": "maven",
                   "gradle": "gradle", "cargo": "cargo", "tsc": "node-typescript",
                   "rustc": "rustc",
                   "cmake": "cmake", "ctest": "cmake", "make": "make", "cc": "gcc", "gcc": "gcc", "gcov": "gcc", "c++": "g++", "g++": "g++"}
#: npm's Vitest has no Debian package: .ci/setup installs it (examples/environments/typescript)
DEBIAN_PACKAGES["vitest"] = "npm, then run .ci/setup"
#: the Rust coverage pass's profile tools (tasks/score/coverage/toolchains/rust.py)
DEBIAN_PACKAGES |= {"llvm-profdata-14": "llvm-14 libclang-rt-14-dev", "llvm-cov-14": "llvm-14 libclang-rt-14-dev"}
DEBIAN_PACKAGES |= {"php": "php-cli", "phpunit": "phpunit", "ruby": "ruby",
                    "rspec": "ruby-rspec ruby-rspec-junit-formatter"}


#: the folders on a run's PATH after the environment's own bin/ (tasks/sandbox/local.py)
RUN_PATH = ("/usr/local/bin", "/usr/bin", "/bin")


def _runnable(name: str, need_world_readable: bool) -> bool:
    """Whether a run can start the host command `name`: PATH's, or, when the sandbox's uid
    cannot run that one (rustup's cargo under /root), the system folders' own."""
    found = shutil.which(name)
    if found is None:
        return False
    return (not need_world_readable or world_readable(Path(found))
            or shutil.which(name, path=os.pathsep.join(RUN_PATH)) is not None)


def _link_toolchains(spec: EnvironmentSpec, prefix: Path, need_world_readable: bool) -> None:
    """An empty prefix whose `bin/` links each toolchain command that the host has outside
    the run's PATH (Go at /usr/local/go/bin, say): a run sees the host's system folders, not
    its PATH. A link, so the toolchain finds its own root through it (go, node do). One the
    sandbox's uid cannot run (rustup's cargo under /root) is not linked: the runs use the
    system folders' own (Debian's /usr/bin/cargo)."""
    (prefix / "bin").mkdir(parents=True)
    for name in spec.toolchains:
        found = shutil.which(name)
        if (found and str(Path(found).parent) not in RUN_PATH
                and (not need_world_readable or world_readable(Path(found)))):
            (prefix / "bin" / name).symlink_to(found)


#: a Maven project in an environment's Dockerfile folder whose tests bring, when run once,
#: every plugin and library its instances' runs use (examples/environments/java)
MAVEN_SEED = "maven-seed"


def _maven_repository(spec: EnvironmentSpec, prefix: Path) -> None:
    """For an environment whose toolchains include `mvn` and whose Dockerfile folder holds a
    MAVEN_SEED project: a Maven repository of its own (`m2/`), filled from the registry by
    the seed's `mvn test` (what its Dockerfile does in the image), and a `bin/mvn` that runs
    the host's Maven on it. Runs are offline and cannot read /root/.m2; they read the
    environment. The seed is the benchmark owner's recipe, like `packages` (SECURITY.md)."""
    seed = spec.context / MAVEN_SEED if spec.context is not None else None
    if "mvn" not in spec.toolchains or seed is None or not (seed / "pom.xml").is_file():
        return
    mvn = shutil.which("mvn")
    assert mvn is not None  # check_toolchains found it
    repository = prefix / "m2"
    log.info("environment %s: resolving %s's Maven dependencies into %s", spec.key, seed, repository)
    with tempfile.TemporaryDirectory() as scratch:
        project = shutil.copytree(seed, Path(scratch) / MAVEN_SEED, symlinks=True)
        done = subprocess.run([mvn, "-B", "-q", f"-Dmaven.repo.local={repository}", "test"], cwd=project,
                              capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise EnvironmentBuildError(f"environment {spec.key}: mvn test of {seed} failed:\n{done.stdout[-2000:]}")
    wrapper = prefix / "bin" / "mvn"
    wrapper.unlink(missing_ok=True)  # _link_toolchains' link to a Maven outside the run's PATH
    wrapper.write_text(f'#!/bin/sh\nexec {shlex.quote(mvn)} -Dmaven.repo.local={shlex.quote(str(repository))} "$@"\n')
    wrapper.chmod(0o755)


def build_environment(spec: EnvironmentSpec, work: WorkPaths, need_world_readable: bool) -> Path:
    """Build (once) the virtualenv of an environment key; returns its folder. Without a
    Python, the folder is an empty prefix (`bin/` first on PATH, nothing in it): runs use
    the host's toolchains, checked first."""
    check_toolchains(spec, need_world_readable)
    if spec.python is None:
        def host(target: Path) -> None:
            _link_toolchains(spec, target / "host", need_world_readable)
            _maven_repository(spec, target / "host")

        return build_once(work.environment(spec.key), host) / "host"

    def build(target: Path) -> None:
        assert spec.python is not None
        interpreter = find_interpreter(spec.python, need_world_readable)
        venv = target / "venv"
        log.info("building environment %s with %s: %s", spec.key, interpreter, ", ".join(spec.packages))
        steps = [[str(interpreter), "-m", "venv", "--without-pip", str(venv)]]
        if spec.packages:
            steps.append([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
                          "--quiet", "--disable-pip-version-check", *spec.packages])
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True, timeout=1800)
            if done.returncode != 0:
                raise EnvironmentBuildError(f"environment {spec.key}: {' '.join(step[:3])} failed:\n{done.stderr[-2000:]}")

    return build_once(work.environment(spec.key), build) / "venv"
