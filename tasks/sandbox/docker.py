"""The `docker` backend: one image per environment, a fresh container per run.

Guarantees (docs/docker.md): every run gets a new container from its environment's image,
with no network (`network_mode=none`: loopback only), a memory limit without swap, a
process limit (`pids_limit`), a CPU quota, rlimits on file size, open files and core dumps,
no capabilities and no privilege escalation, running as an unprivileged uid of its own.
The state tree and the suite are copied for the run alone (a bind-mounted host copy, or a
tar archive when the engine is remote), so nothing one run writes is seen by another; a
wall-clock timeout or output past the bound kills the container; the container is removed
whatever happens. Containers are labelled so that `sweep()` removes those a crashed
process left behind.

Images: the environment image is the base image plus a virtualenv at
`/opt/testprism/envs/<key>` with the environment's packages, built once (the only step
with network) and tagged `testprism-env:<key>`, where the key hashes the base image's
layers and the EnvironmentSpec. No registry is assumed: the default base image
(`testprism-base:bookworm`) is bootstrapped from a Debian root filesystem when missing
(`ensure_base_image`, same as `.ci/base-image`). `TESTPRISM_DOCKER_BASE` names another.

Fast mode (`TESTPRISM_DOCKER_REUSE=1` or `reuse=True`) keeps one container per environment
and thread and resets its workspace between runs: cheaper, weaker isolation (docs/docker.md).

The docker SDK is imported lazily, so testprism works without the `docker` extra.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import secrets
import shlex
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from testprism.tasks.model.benchmark import EnvironmentSpec
from testprism.tasks.sandbox.environment import EnvironmentBuildError
from testprism.tasks.model.hashing import digest
from testprism.tasks.sandbox.base import (
    ExecResult,
    RunRequest,
    SandboxBackend,
    SandboxError,
    SandboxUnavailable,
    register,
)
from testprism.tasks.sandbox.workspace import clear_workspace, fill_workspace, read_junit
from testprism.tasks.model.workdir import WorkPaths, locked, orphaned_workspaces, start_time, workspace_prefix

if TYPE_CHECKING:
    from docker import APIClient

log = logging.getLogger(__name__)

DEFAULT_BASE = "testprism-base:bookworm"
BASE_PACKAGES = ("python3", "python3-venv", "git", "patch", "ca-certificates")
DEBIAN_MIRROR = "http://deb.debian.org/debian"
ENV_REPOSITORY = "testprism-env"
ENV_ROOT = PurePosixPath("/opt/testprism/envs")
WORKSPACE = PurePosixPath("/workspace")
#: bump when the image recipe below changes: every environment image is then rebuilt
RECIPE = "2"

LABEL = "testprism"  # on every image and container testprism makes
RUN_LABEL = "testprism.run"  # on run containers (fresh and reused): what sweep() removes
OWNER_LABEL = "testprism.owner"  # host:pid:start-time of the process that made it
SESSION_LABEL = "testprism.session"  # the backend instance that made it
BUILD_PREFIX = "testprism-build-"  # build containers: testprism-build-<pid>.<start-time>-<key>

UID_BASE = 200_000  # same range as the local backend: no passwd entry, no host files
JUNIT_MAX_BYTES = 8 * 1024 * 1024
BUILD_TIMEOUT_S = 1800
STOP_GRACE_S = 10  # how long a killed container may take to report its exit
#: the directories an unprivileged uid can write to in the base image, wiped between
#: runs in fast mode (the workspace is recreated)
SCRATCH = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")


def _sdk():
    try:
        import docker
    except ImportError as exc:
        raise SandboxUnavailable(
            "the docker backend needs the docker SDK: pip install 'testprism[docker]'"
        ) from exc
    return docker


# -- the engine ------------------------------------------------------------------------------


_api_versions: dict[str, str] = {}  # engine address -> negotiated API version
_version_lock = threading.Lock()


def api_client(timeout: float = 120) -> APIClient:
    """A low-level client of the engine named by the environment (DOCKER_HOST, else the
    local socket). The API version is negotiated once per process and engine address, so
    the first client of an engine that does not answer raises SandboxUnavailable."""
    docker = _sdk()
    kwargs = _from_env_kwargs()
    address = str(kwargs.get("base_url") or "default")
    with _version_lock:
        try:
            client = docker.APIClient(**kwargs, version=_api_versions.get(address, "auto"), timeout=timeout)
            _api_versions[address] = client.api_version
        except docker.errors.DockerException as exc:
            raise SandboxUnavailable(
                f"no Docker engine answers ({exc}); start one (CI: .ci/start-dockerd) or set DOCKER_HOST"
            ) from exc
    return client


def _from_env_kwargs() -> dict[str, Any]:
    docker = _sdk()
    kwargs = docker.utils.kwargs_from_env()
    return {k: v for k, v in kwargs.items() if k in ("base_url", "tls")}


def engine_answers() -> bool:
    """Whether a Docker engine answers here (the SDK installed and the daemon up)."""
    try:
        api = api_client(timeout=10)
        api.ping()
        api.close()
        return True
    except Exception:  # noqa: BLE001 - any failure means "no engine"; callers only branch on it
        return False


def _errors():
    docker = _sdk()
    return docker.errors


def _owner() -> str:
    """This process, stably: host, pid and the pid's start time (pids are reused)."""
    return f"{socket.gethostname()}:{os.getpid()}:{start_time(os.getpid())}"


def _owner_alive(owner: str) -> bool:
    """Whether the process named by an owner label is alive; True for another host's (it
    is not ours to judge)."""
    try:
        host, pid, started = owner.rsplit(":", 2)
    except ValueError:
        return False
    if host != socket.gethostname():
        return True
    return start_time(int(pid)) == started


# -- base image ------------------------------------------------------------------------------


def base_image_name(explicit: str | None = None) -> str:
    """The base image: the argument, else `$TESTPRISM_DOCKER_BASE`, else the default."""
    return explicit or os.environ.get("TESTPRISM_DOCKER_BASE") or DEFAULT_BASE


def cache_dir() -> Path:
    """Where the base root filesystem tarball is cached (`$TESTPRISM_CACHE`)."""
    return Path(os.environ.get("TESTPRISM_CACHE") or "/var/cache/testprism")


def base_tarball() -> Path:
    return cache_dir() / "base" / "rootfs-bookworm.tar.gz"


def ensure_base_image(api: APIClient, name: str) -> dict:
    """Make the base image exist and return its inspection; the same steps as
    `.ci/base-image`: nothing when it exists; else import the cached root filesystem;
    else debootstrap one (root, debootstrap and deb.debian.org needed; minutes), cache it
    and import it. Only the default base is bootstrapped: another name must exist."""
    errors = _errors()
    try:
        return api.inspect_image(name)
    except errors.ImageNotFound:
        pass
    except errors.APIError as exc:
        raise SandboxError(f"docker: cannot inspect base image {name}: {exc}") from exc
    if name != DEFAULT_BASE:
        raise SandboxUnavailable(
            f"base image {name} (TESTPRISM_DOCKER_BASE) is missing: build or load it first, or unset "
            f"TESTPRISM_DOCKER_BASE to use {DEFAULT_BASE}"
        )
    tarball = base_tarball()
    with locked(tarball.with_suffix(".lock")):
        if not tarball.is_file():
            bootstrap_rootfs(tarball)
        try:  # another process may have imported it while we waited for the lock
            return api.inspect_image(name)
        except errors.ImageNotFound:
            pass
        repository, tag = name.rsplit(":", 1)
        log.info("importing %s as %s", tarball, name)
        api.import_image_from_file(
            str(tarball), repository=repository, tag=tag,
            changes=[f"LABEL {LABEL}=1", "ENV LANG=C.UTF-8", 'CMD ["bash"]'],
        )
        return api.inspect_image(name)


def bootstrap_rootfs(tarball: Path) -> None:
    """debootstrap Debian bookworm (minbase + BASE_PACKAGES) into a gzipped tarball."""
    if not shutil.which("debootstrap") or os.geteuid() != 0:
        raise SandboxUnavailable(
            f"the base image {DEFAULT_BASE} is missing and cannot be bootstrapped here (needs root and "
            "debootstrap): run .ci/base-image as root, or set TESTPRISM_DOCKER_BASE to an image you have"
        )
    mirror = os.environ.get("TESTPRISM_DEBIAN_MIRROR") or DEBIAN_MIRROR
    tarball.parent.mkdir(parents=True, exist_ok=True)
    rootfs = Path(tempfile.mkdtemp(prefix="testprism-rootfs.", dir="/var/tmp"))
    part = tarball.with_name(tarball.name + ".part")
    log.warning("bootstrapping the base image's root filesystem with debootstrap (a few minutes, once)")
    try:
        done = subprocess.run(
            ["debootstrap", "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}", "bookworm", str(rootfs), mirror],
            capture_output=True, text=True, timeout=3600,
        )
        if done.returncode != 0:
            raise SandboxUnavailable(f"debootstrap failed:\n{(done.stdout + done.stderr)[-3000:]}")
        for pattern in ("var/cache/apt/archives/*.deb", "var/lib/apt/lists/*", "tmp/*", "var/tmp/*"):
            for path in rootfs.glob(pattern):
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                else:
                    path.unlink()
        with open(part, "wb") as fh:
            tar = subprocess.Popen(["tar", "--numeric-owner", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
            gz = subprocess.run(["gzip", "-1"], stdin=tar.stdout, stdout=fh)
            tar.wait()
        if tar.returncode or gz.returncode:
            raise SandboxUnavailable(f"could not write {tarball}")
        part.rename(tarball)
    finally:
        shutil.rmtree(rootfs, ignore_errors=True)
        part.unlink(missing_ok=True)


# -- environment images ----------------------------------------------------------------------


def environment_image_key(base: dict, spec: EnvironmentSpec) -> str:
    """Content key of an environment image: the recipe, the base image's layers (stable
    across re-imports of the same root filesystem) and the EnvironmentSpec."""
    layers = base.get("RootFS", {}).get("Layers") or [base["Id"]]
    return digest("docker-env", RECIPE, *layers, spec.key)


def environment_tag(key: str) -> str:
    return f"{ENV_REPOSITORY}:{key}"


def _pip_settings() -> tuple[list[str], list[str]]:
    """This machine's pip configuration as `export PIP_...` lines for the build script,
    and the local files and folders it names (mounted read-only at the same paths)."""
    settings: dict[str, str] = {}
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=60,
    )
    for line in listed.stdout.splitlines():  # e.g. global.extra-index-url='file:///opt/pypi/simple'
        name, _, value = line.partition("=")
        option = name.rsplit(".", 1)[-1]
        if option and value:
            settings["PIP_" + option.upper().replace("-", "_")] = value.strip().strip("'\"")
    for name, value in os.environ.items():
        if name.startswith("PIP_") or name.upper() in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"):
            settings[name] = value
    for name in ("PIP_REQUIRE_VIRTUALENV", "PIP_USER", "PIP_TARGET", "PIP_PREFIX", "PIP_PYTHON"):
        settings.pop(name, None)
    mounts: set[str] = set()
    for name, value in settings.items():
        for word in value.split():
            path = word.removeprefix("file://").rstrip("/")
            if not path.startswith("/") or not os.path.exists(path):
                continue
            if name in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"):
                path = os.path.dirname(path)  # a local index links to files beside simple/
            mounts.add(path)
    exports = [f"export {name}={shlex.quote(value)}" for name, value in sorted(settings.items())]
    return exports, sorted(mounts)


def build_environment_image(api: APIClient, base_name: str, base: dict, spec: EnvironmentSpec, key: str) -> None:
    """Build `testprism-env:<key>`: a container from the base image (network: host, the
    only networked step) creates the venv and pip-installs the packages with this
    machine's pip configuration; the container is committed and removed."""
    errors = _errors()
    venv = ENV_ROOT / key
    exports, mounts = _pip_settings()
    install = ""
    if spec.packages:
        install = (
            f'"$py" -m venv /tmp/pip-tool\n'
            f"/tmp/pip-tool/bin/pip --python {venv}/bin/python install --no-cache-dir "
            f"--disable-pip-version-check --quiet {' '.join(shlex.quote(p) for p in spec.packages)}\n"
            "rm -rf /tmp/pip-tool\n"
        )
    script = "\n".join([
        "set -eu", *exports,
        f"py=$(command -v python{spec.python} || true)",
        f'[ -n "$py" ] || {{ echo "no python{spec.python} in the base image" >&2; exit 3; }}',
        f'"$py" -m venv --without-pip {venv}',
        install + f"rm -rf /root/.cache; chmod -R a+rX {ENV_ROOT}",
    ])
    labels = {LABEL: "1", "testprism.kind": "environment", "testprism.environment": spec.key,
              "testprism.python": spec.python, "testprism.packages": json.dumps(list(spec.packages)),
              "testprism.base": base_name, "testprism.recipe": RECIPE}
    log.info("building docker image %s (python %s: %s)", environment_tag(key), spec.python, ", ".join(spec.packages))
    # No labels of its own: a commit would copy them into the image and so into every
    # container made from it. The name says whose it is, for sweep().
    pid = os.getpid()
    container = api.create_container(
        base["Id"], command=["bash", "-c", script], user="0", name=f"{BUILD_PREFIX}{pid}.{start_time(pid)}-{key[:12]}",
        host_config=api.create_host_config(
            network_mode="host", binds={m: {"bind": m, "mode": "ro"} for m in mounts},
        ),
    )["Id"]
    try:
        api.start(container)
        try:
            status = api.wait(container, timeout=BUILD_TIMEOUT_S)["StatusCode"]
        except Exception as exc:  # requests' ReadTimeout or a broken connection
            raise EnvironmentBuildError(f"environment {spec.key}: image build did not finish: {exc}") from exc
        if status != 0:
            tail = api.logs(container, tail=60).decode(errors="replace")
            if status == 3:
                raise EnvironmentBuildError(
                    f"environment.python: the base image {base_name} has no python{spec.python}; set "
                    f"TESTPRISM_DOCKER_BASE to a base image that has it"
                )
            raise EnvironmentBuildError(f"environment {spec.key}: image build failed (exit {status}):\n{tail[-3000:]}")
        api.commit(
            container, repository=ENV_REPOSITORY, tag=key,
            conf={"Labels": labels, "Cmd": ["bash"], "User": "", "WorkingDir": "",
                  "Env": ["LANG=C.UTF-8", f"PATH={venv}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]},
        )
    except errors.APIError as exc:
        raise SandboxError(f"docker: image build of environment {spec.key} broke: {exc}") from exc
    finally:
        with contextlib.suppress(errors.APIError):
            api.remove_container(container, force=True)


@dataclass(frozen=True)
class ImageInfo:
    tag: str
    kind: str  # base | environment
    environment: str
    python: str
    packages: tuple[str, ...]
    size_mb: float
    created: str


def list_images(api: APIClient) -> list[ImageInfo]:
    """testprism's images (label `testprism=1`)."""
    out = []
    for image in api.images(filters={"label": f"{LABEL}=1"}):
        labels = image.get("Labels") or {}
        tags = [t for t in image.get("RepoTags") or () if t != "<none>:<none>"]
        out.append(ImageInfo(
            tag=tags[0] if tags else image["Id"][:19],
            kind=labels.get("testprism.kind", "base"),
            environment=labels.get("testprism.environment", ""),
            python=labels.get("testprism.python", ""),
            packages=tuple(json.loads(labels.get("testprism.packages", "[]"))),
            size_mb=round(image.get("Size", 0) / 1e6, 1),
            created=time.strftime("%Y-%m-%d %H:%M", time.gmtime(image.get("Created", 0))),
        ))
    return sorted(out, key=lambda i: (i.kind != "base", i.tag))


def prune_images(api: APIClient, keep: set[str] | None = None, include_base: bool = False) -> list[str]:
    """Remove testprism's images (label `testprism=1`) but the base, and environment
    images whose environment key (EnvironmentSpec.key) is in `keep` (none kept when `keep`
    is None); the base image too with `include_base`. Returns the removed tags."""
    errors = _errors()
    removed: list[str] = []
    failed: dict[str, str] = {}
    while True:  # children before parents: retry what failed while anything goes
        progress = False
        for info in list_images(api):
            if info.kind == "base" and not include_base:
                continue
            if info.kind == "environment" and keep is not None and info.environment in keep:
                continue
            try:
                api.remove_image(info.tag, force=True)
            except errors.APIError as exc:
                failed[info.tag] = str(exc)
                continue
            removed.append(info.tag)
            failed.pop(info.tag, None)
            progress = True
        if not progress or not failed:
            break
    for tag, why in failed.items():
        log.warning("could not remove %s: %s", tag, why)
    return removed


# -- one run: the workspace ------------------------------------------------------------------
#
# Two ways to put a fresh workspace in a container, chosen once per backend (`copy_mode`):
# `bind` (the engine runs on this host: a fresh host copy, bind-mounted; the cheapest) and
# `archive` (a remote or rootless engine: a tar copied in with put_archive, the JUnit XML
# fetched back with get_archive). Either way every entry belongs to the run's uid.


def copy_mode(api: APIClient) -> str:  # noqa: D401
    """`$TESTPRISM_DOCKER_COPY` (bind | archive), else bind when the engine shares this
    host's filesystem and uids (same host name, not rootless), else archive."""
    forced = os.environ.get("TESTPRISM_DOCKER_COPY", "")
    if forced in ("bind", "archive"):
        return forced
    info = api.info()
    rootless = any("rootless" in opt for opt in info.get("SecurityOptions") or ())
    return "bind" if info.get("Name") == socket.gethostname() and not rootless else "archive"


def workspace_archive(request: RunRequest, uid: int, staging_root: Path) -> tuple[tempfile.SpooledTemporaryFile, str]:
    """The archive-mode workspace: the one fill (tasks/sandbox/workspace.py) in a staging
    folder, as a tar of `workspace/program` and `workspace/out` to extract at `/`, every
    entry owned by `uid` and links stored as links. Returns it and how the suite's patch
    applied."""
    buffer = tempfile.SpooledTemporaryFile(max_size=64 * 1024 * 1024)
    staging = Path(tempfile.mkdtemp(prefix="archive-", dir=staging_root))
    try:
        installed = fill_workspace(request, staging)

        def owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
            info.uid = info.gid = uid
            info.uname = info.gname = ""
            return info

        with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
            tar.add(str(staging), arcname=str(WORKSPACE.relative_to("/")), filter=owned)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    buffer.seek(0)
    return buffer, installed


def _fetch_junit(api: APIClient, container: str) -> bytes | None:
    """Archive mode: the JUnit XML the run wrote, if a regular file."""
    errors = _errors()
    try:
        stream, info = api.get_archive(container, f"{WORKSPACE}/out/junit.xml")
    except errors.NotFound:
        return None
    data = b"".join(stream)
    if info.get("linkTarget"):
        return None
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        member = tar.next()
        if member is None or not member.isreg():
            return None
        content = tar.extractfile(member)
        return content.read(JUNIT_MAX_BYTES) if content else None


# -- one run: the process --------------------------------------------------------------------


class _Pump:
    """Reads a container's multiplexed output stream, keeping a bounded tail, and calls
    `on_exceeded` once when the total passes the bound.

    `on_exceeded` runs on a thread of its own while reading goes on: a kill done through
    the engine (an exec in fast mode) can wait on the engine copying this very stream,
    which would never happen if the reader stopped to wait for it."""

    def __init__(self, sock: Any, output_bytes: int, tail_bytes: int, on_exceeded: Callable[[], None]) -> None:
        self.sock, self.output_bytes, self.tail_bytes, self.on_exceeded = sock, output_bytes, tail_bytes, on_exceeded
        self.tail: deque[bytes] = deque()
        self.kept = self.total = 0
        self.exceeded = False
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        from docker.utils.socket import frames_iter

        try:
            for _stream, chunk in frames_iter(self.sock, tty=False):
                self.total += len(chunk)
                self.tail.append(chunk)
                self.kept += len(chunk)
                while self.kept - len(self.tail[0]) >= self.tail_bytes:
                    self.kept -= len(self.tail.popleft())
                if self.total > self.output_bytes and not self.exceeded:
                    self.exceeded = True
                    threading.Thread(target=self.on_exceeded, daemon=True).start()
        except OSError:
            pass  # the container went away: the socket closed

    def join(self, timeout: float | None) -> bool:
        """Wait for the end of the stream; True if it ended."""
        self.thread.join(timeout)
        return not self.thread.is_alive()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
        self.thread.join(5)

    @property
    def output(self) -> str:
        return b"".join(self.tail)[-self.tail_bytes:].decode("utf-8", errors="replace")


def _run_env(request: RunRequest) -> dict[str, str]:
    """The same variables as the local backend."""
    return {
        "PATH": f"{request.environment / 'bin'}:/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1",
        "TESTPRISM_JUNIT": f"{WORKSPACE}/out/junit.xml", **request.env,
    }


def _merged(command: str) -> list[str]:
    """`bash -c command` with stderr on stdout, one ordered stream as in the local
    backend (the engine would otherwise carry two, interleaved in no fixed order)."""
    return ["bash", "-c", 'exec bash -c "$1" 2>&1', "bash", command]


def _run_uid() -> int:
    return UID_BASE + secrets.randbelow(60_000)


@dataclass
class _Box:
    """A fresh container of one run: created, or pre-started and waiting for its run."""

    id: str
    uid: int
    ws: Path | None
    sock: Any
    started: bool
    installed: str = ""  # how the suite's test patch applied


def _write_run_script(ws: Path, uid: int, request: RunRequest) -> None:
    """The script a pre-started container's launcher runs: this run's variables, then
    the command from the program root (the same as a container made for the run)."""
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in _run_env(request).items())
    script = ws / ".run"
    script.write_text(
        f"rm -f {WORKSPACE}/.run {WORKSPACE}/.go\n{exports}cd {WORKSPACE}/program || exit 126\n"
        f"exec bash -c {shlex.quote(request.command)} 2>&1\n"
    )
    os.chown(script, uid, uid)
    script.chmod(0o600)


@dataclass
class _Reusable:
    """A long-lived container of fast mode, and its host workspace in bind mode."""

    id: str
    key: tuple[str, str]  # image tag, limits key
    ws: Path | None


@register("docker")
class DockerBackend(SandboxBackend):
    """Runs each suite in a container. See the module docstring and docs/docker.md."""

    def __init__(
        self,
        work: WorkPaths,
        *,
        trusted: bool = False,
        unsafe: bool = False,
        base_image: str | None = None,
        reuse: bool | None = None,
        cpus: float | None = None,
        copy: str | None = None,
        prewarm: bool | None = None,
    ) -> None:
        super().__init__(work)
        self.base_name = base_image_name(base_image)
        self.reuse = reuse if reuse is not None else os.environ.get("TESTPRISM_DOCKER_REUSE", "") not in ("", "0")
        self.cpus = cpus if cpus is not None else float(os.environ.get("TESTPRISM_DOCKER_CPUS") or 1.0)
        self.isolation = "container-reused" if self.reuse else "container"
        self._local = threading.local()
        self._clients: list[APIClient] = []
        self._clients_lock = threading.Lock()
        api = self._api()
        try:
            self.copy = copy or copy_mode(api)
        except Exception as exc:  # noqa: BLE001 - any failure to answer means unavailable
            raise SandboxUnavailable(
                f"no Docker engine answers ({exc}); start one (CI: .ci/start-dockerd) or set DOCKER_HOST"
            ) from exc
        work.ensure()  # bind mode's workspaces, archive mode's staging folders
        if prewarm is None:
            prewarm = os.environ.get("TESTPRISM_DOCKER_PREWARM", "1") not in ("", "0")
        self.prewarm = prewarm and self.copy == "bind" and not self.reuse
        self.owner = _owner()
        self.session = secrets.token_hex(8)
        self._handles: dict[str, Path] = {}
        self._specs: dict[str, EnvironmentSpec] = {}  # image key -> what it was built from
        self._base: dict | None = None
        self._lock = threading.Lock()
        self._key_locks: dict[str, threading.Lock] = {}
        self._idle: dict[tuple[str, str], list[_Reusable]] = {}
        self._all_reused: list[_Reusable] = []
        self._warm: dict[tuple[str, str], list[_Box]] = {}
        self._coming: dict[tuple[str, str], int] = {}
        self._in_flight = 0
        self._closing = False
        self._filler = ThreadPoolExecutor(max_workers=2, thread_name_prefix="docker-prestart")

    def _api(self) -> APIClient:
        """One client per thread: the SDK's session is not meant to be shared by threads."""
        api = getattr(self._local, "api", None)
        if api is None:
            api = self._local.api = api_client()
            with self._clients_lock:
                self._clients.append(api)
        return api

    @classmethod
    def default_concurrency(cls) -> int:
        # Suites are CPU-bound, and so is starting a container (dockerd, containerd, the
        # shim and runc spend ~0.2 s of CPU on each); more runs than cores only queue for
        # the CPU and stretch timeouts. Measured in docs/docker.md.
        return max(1, os.cpu_count() or 1)

    # -- environments ------------------------------------------------------------------------

    def base(self) -> dict:
        with self._lock:
            if self._base is None:
                self._base = ensure_base_image(self._api(), self.base_name)
            return self._base

    def prepare(self, environment: EnvironmentSpec) -> Path:
        """Build (once, across processes) the image of an environment; the handle is the
        venv's path inside it, whose name is the image key."""
        handle = self._handles.get(environment.key)
        if handle is not None:
            return handle
        base = self.base()
        key = environment_image_key(base, environment)
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock, locked(self.work.root / "docker" / f"{key}.lock"):
            api = self._api()
            if not self._image_exists(api, environment_tag(key)):
                build_environment_image(api, self.base_name, base, environment, key)
        handle = Path(ENV_ROOT / key)
        self._handles[environment.key] = handle
        self._specs[key] = environment
        return handle

    def _image_exists(self, api: APIClient, tag: str) -> bool:
        errors = _errors()
        try:
            api.inspect_image(tag)
            return True
        except errors.ImageNotFound:
            return False
        except errors.APIError as exc:
            raise SandboxError(f"docker: cannot inspect {tag}: {exc}") from exc

    def _tag_of(self, request: RunRequest) -> str:
        handle = PurePosixPath(request.environment)
        if handle.parent != ENV_ROOT:
            raise SandboxError(f"docker: {request.environment} is not an environment prepared by this backend")
        return environment_tag(handle.name)

    def _run_on(self, request: RunRequest, tag: str) -> ExecResult:
        return self._run_reused(request, tag) if self.reuse else self._run_fresh(request, tag)

    def _forget(self, tag: str) -> EnvironmentSpec | None:
        """The image vanished (pruned under us): the next prepare() rebuilds it. Returns
        what it was built from, when this backend built or found it."""
        key = tag.rsplit(":", 1)[1]
        for spec_key, handle in list(self._handles.items()):
            if handle.name == key:
                del self._handles[spec_key]
        return self._specs.get(key)

    # -- containers --------------------------------------------------------------------------

    def _host_config(self, api: APIClient, request: RunRequest, ws: Path | None) -> dict:
        docker = _sdk()
        limits = request.limits
        memory = limits.memory_mb * 1024 * 1024
        fsize = limits.file_size_mb * 1024 * 1024
        return api.create_host_config(
            network_mode="none", mem_limit=memory, memswap_limit=memory, pids_limit=limits.processes,
            nano_cpus=int(self.cpus * 1e9), init=True, cap_drop=["ALL"], security_opt=["no-new-privileges"],
            ulimits=[docker.types.Ulimit(name="fsize", soft=fsize, hard=fsize),
                     docker.types.Ulimit(name="core", soft=0, hard=0),
                     docker.types.Ulimit(name="nofile", soft=1024, hard=1024)],
            log_config=docker.types.LogConfig(type="none"),
            binds={str(ws): {"bind": str(WORKSPACE), "mode": "rw"}} if ws else None,
        )

    def _labels(self, **extra: str) -> dict[str, str]:
        return {LABEL: "1", RUN_LABEL: "1", OWNER_LABEL: self.owner, SESSION_LABEL: self.session, **extra}

    def _host_workspace(self) -> Path:
        """A new host folder for a bind-mounted workspace, named after this process so that
        sweep() knows whose it is."""
        return Path(tempfile.mkdtemp(prefix=workspace_prefix("docker"), dir=self.work.workspaces))

    def _wait(self, api: APIClient, container: str, timeout_s: float) -> dict | None:
        """The container's exit status, or None if it still runs after `timeout_s`."""
        import requests

        try:
            return api.wait(container, timeout=max(0.1, timeout_s))
        except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
            return None

    def _kill(self, container: str) -> None:
        errors = _errors()
        with contextlib.suppress(errors.APIError), contextlib.closing(api_client(timeout=30)) as api:
            api.kill(container)

    def _remove(self, api: APIClient, container: str) -> None:
        errors = _errors()
        try:
            api.remove_container(container, force=True, v=True)
        except errors.NotFound:
            pass
        except errors.APIError as exc:
            log.warning("docker: could not remove container %s (sweep will): %s", container[:12], exc)

    # -- runs --------------------------------------------------------------------------------

    def run(self, request: RunRequest) -> ExecResult:
        tag = self._tag_of(request)
        errors = _errors()
        with self._lock:
            self._in_flight += 1
        try:
            try:
                return self._run_on(request, tag)
            except errors.ImageNotFound as exc:
                # Pruned under a running replay (`testprism images prune` elsewhere): build
                # it again, once, rather than fail every remaining run of the environment.
                spec = self._forget(tag)
                if spec is None:
                    raise SandboxError(f"docker: image {tag} is gone: {exc}") from exc
                log.warning("docker: image %s vanished during the replay; building it again", tag)
                self.prepare(spec)
                return self._run_on(request, tag)
        except errors.ImageNotFound as exc:
            self._forget(tag)
            raise SandboxError(f"docker: image {tag} is gone: {exc}") from exc
        except OSError as exc:  # the SDK's APIError and requests' errors are OSErrors too
            raise SandboxError(f"docker: {exc}") from exc
        finally:
            with self._lock:
                self._in_flight -= 1

    def _run_fresh(self, request: RunRequest, tag: str) -> ExecResult:
        api = self._api()
        box = self._take_warm(request, tag) if self.prewarm else None
        try:
            if box is None:
                box = self._create_fresh(api, request, tag)
            else:
                assert box.ws is not None
                box.installed = fill_workspace(request, box.ws, box.uid)
                _write_run_script(box.ws, box.uid, request)
            container = box.id
            pump = _Pump(box.sock, request.limits.output_bytes, request.limits.tail_bytes,
                         on_exceeded=lambda: self._kill(container))
            try:
                start = time.monotonic()
                if box.started:
                    self._go(api, box)
                else:
                    api.start(container)
                pump.start()
                # The output stream ends when the command exits, or earlier if it closes
                # its stdout and stderr: the exit itself decides, under the same deadline.
                deadline = start + request.limits.timeout_s
                timed_out = not pump.join(request.limits.timeout_s)
                status = None if timed_out else self._wait(api, container, deadline - time.monotonic())
                if status is None:
                    timed_out = True
                    self._kill(container)
                    status = self._wait(api, container, STOP_GRACE_S + 60)
                    if status is None:
                        raise SandboxError(f"docker: container {container[:12]} did not stop when killed")
                duration = time.monotonic() - start
            finally:
                pump.close()
            junit = None
            if not (timed_out or pump.exceeded):
                junit = read_junit(box.ws) if box.ws is not None else _fetch_junit(api, container)
            return ExecResult(
                exit_code=status.get("StatusCode"), duration_s=duration, output_tail=pump.output,
                timed_out=timed_out, output_exceeded=pump.exceeded, junit_xml=junit,
                suite_patch_method=box.installed,
            )
        finally:
            if box is not None:
                self._discard_box(api, box)

    def _create_fresh(self, api: APIClient, request: RunRequest, tag: str) -> _Box:
        """A created (not started) container that runs the command itself."""
        uid = _run_uid()
        ws = self._host_workspace() if self.copy == "bind" else None
        box = _Box("", uid, ws, None, started=False)
        try:
            if ws is not None:
                box.installed = fill_workspace(request, ws, uid)
            box.id = api.create_container(
                tag, command=_merged(request.command), user=f"{uid}:{uid}",
                working_dir=f"{WORKSPACE}/program", environment=_run_env(request), network_disabled=True,
                labels=self._labels(), host_config=self._host_config(api, request, ws),
            )["Id"]
            if ws is None:
                archive, box.installed = workspace_archive(request, uid, self.work.workspaces)
                with archive:
                    if not api.put_archive(box.id, "/", archive):
                        raise SandboxError("docker: could not copy the workspace into the container")
            box.sock = api.attach_socket(box.id, params={"stdout": 1, "stderr": 1, "stream": 1})
            return box
        except BaseException:
            self._discard_box(api, box)
            raise

    def _discard_box(self, api: APIClient, box: _Box) -> None:
        if box.sock is not None:
            with contextlib.suppress(OSError):
                box.sock.close()
        if box.id:
            self._remove(api, box.id)
        if box.ws is not None:
            shutil.rmtree(box.ws, ignore_errors=True)

    # -- pre-started containers (bind mode) --------------------------------------------------
    #
    # Starting a container is most of a fresh run's overhead, and nothing in it depends on
    # the run but the image and the limits. So while a run executes, the next container is
    # created and started in the background, with an empty bind-mounted workspace and a
    # launcher that waits on a FIFO there. A run fills the workspace, writes its script and
    # opens the FIFO: the container runs that one command and is removed. Still one fresh
    # container per run; only the start is taken off the run's path.

    def _warm_key(self, request: RunRequest, tag: str) -> tuple[str, str]:
        return tag, request.limits.key

    def _take_warm(self, request: RunRequest, tag: str) -> _Box | None:
        """A pre-started container for this run if one is ready; and, as long as fewer
        are ready or coming than runs are in flight, another one started for a next run."""
        key = self._warm_key(request, tag)
        with self._lock:
            ready = self._warm.setdefault(key, [])
            box = ready.pop() if ready else None
            if not self._closing and len(ready) + self._coming.get(key, 0) < self._in_flight:
                self._coming[key] = self._coming.get(key, 0) + 1
                self._filler.submit(self._refill, request, tag)
        return box

    def _refill(self, request: RunRequest, tag: str) -> None:
        key = self._warm_key(request, tag)
        api = self._api()
        box = None
        try:
            box = self._create_warm(api, request, tag)
        except Exception as exc:  # noqa: BLE001 - a run then starts its own container
            log.debug("docker: could not pre-start a container: %s", exc)
        with self._lock:
            self._coming[key] -= 1
            if box is not None and not self._closing:
                self._warm[key].append(box)
                return
        if box is not None:
            self._discard_box(api, box)

    def _create_warm(self, api: APIClient, request: RunRequest, tag: str) -> _Box:
        uid = _run_uid()
        box = _Box("", uid, self._host_workspace(), None, started=True)
        assert box.ws is not None
        try:
            os.mkfifo(box.ws / ".go", 0o600)
            os.chown(box.ws / ".go", uid, uid)
            os.chown(box.ws, uid, uid)
            box.id = api.create_container(
                tag, command=["bash", "-c", f"read -r _ < {WORKSPACE}/.go && exec bash {WORKSPACE}/.run"],
                user=f"{uid}:{uid}", working_dir=str(WORKSPACE), environment=_run_env(request),
                network_disabled=True, labels=self._labels(), host_config=self._host_config(api, request, box.ws),
            )["Id"]
            box.sock = api.attach_socket(box.id, params={"stdout": 1, "stderr": 1, "stream": 1})
            api.start(box.id)
            return box
        except BaseException:
            self._discard_box(api, box)
            raise

    def _go(self, api: APIClient, box: _Box) -> None:
        """Release a pre-started container's launcher (it blocks reading the FIFO)."""
        assert box.ws is not None
        deadline, checked = time.monotonic() + 30, time.monotonic()
        while True:
            try:
                fd = os.open(box.ws / ".go", os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError as exc:  # ENXIO: the launcher has not opened it yet
                now = time.monotonic()
                if now > deadline:
                    raise SandboxError(f"docker: a pre-started container did not take its run: {exc}") from exc
                if now - checked > 0.5:
                    checked = now
                    if not api.inspect_container(box.id)["State"]["Running"]:
                        raise SandboxError("docker: a pre-started container died before its run") from exc
                time.sleep(0.002)
        try:
            os.write(fd, b"go\n")
        finally:
            os.close(fd)

    # -- fast mode ---------------------------------------------------------------------------

    def _checkout(self, api: APIClient, request: RunRequest, tag: str) -> _Reusable:
        """An idle container of this image and these limits, or a new one."""
        key = self._warm_key(request, tag)
        with self._lock:
            idle = self._idle.setdefault(key, [])
            if idle:
                return idle.pop()
        ws = self._host_workspace() if self.copy == "bind" else None
        container = api.create_container(
            tag, command=["sleep", "infinity"], user="0", network_disabled=True,
            labels=self._labels(**{"testprism.reused": "1"}), host_config=self._host_config(api, request, ws),
        )["Id"]
        reusable = _Reusable(container, key, ws)
        with self._lock:
            self._all_reused.append(reusable)
        api.start(container)
        return reusable

    def _exec(self, api: APIClient, container: str, script: str, user: str = "0") -> tuple[int | None, bytes]:
        exec_id = api.exec_create(container, ["bash", "-c", script], user=user)["Id"]
        output = api.exec_start(exec_id)
        return api.exec_inspect(exec_id).get("ExitCode"), output

    def _kill_uid(self, container: str, uid: int) -> None:
        """Kill every process of a run's uid (kill(-1) as that uid: atomic, forks included)."""
        with contextlib.closing(api_client(timeout=30)) as api:
            self._exec(api, container, "kill -9 -1 2>/dev/null; true", user=f"{uid}:{uid}")

    def _reset(self, api: APIClient, container: str, uid: int) -> None:
        """After a run in fast mode: no process of its uid left, its System V IPC objects
        removed, and everything it could write (the workspace, the world-writable scratch
        folders) wiped. Done as the run's uid, which owns all of it: the container has no
        capabilities, not even as root."""
        targets = " ".join(f"{d}/* {d}/.[!.]* {d}/..?*" for d in (str(WORKSPACE), *SCRATCH))
        code, output = self._exec(
            api, container,
            f"kill -9 -1 2>/dev/null; ipcrm --all 2>/dev/null; chmod -R u+rwX {targets} 2>/dev/null; "
            f"rm -rf {targets} 2>/dev/null; "
            f"! find {WORKSPACE} {' '.join(SCRATCH)} -mindepth 1 -user {uid} -print -quit 2>/dev/null | grep -q .",
            user=f"{uid}:{uid}",
        )
        if code != 0:
            raise SandboxError(f"docker: could not reset a reused container: {output[-500:]!r}")

    def _run_reused(self, request: RunRequest, tag: str) -> ExecResult:
        api = self._api()
        reusable = self._checkout(api, request, tag)
        container, healthy = reusable.id, False
        try:
            uid = _run_uid()
            if reusable.ws is not None:
                clear_workspace(reusable.ws)
                installed = fill_workspace(request, reusable.ws, uid)
            else:
                archive, installed = workspace_archive(request, uid, self.work.workspaces)
                with archive:
                    if not api.put_archive(container, "/", archive):
                        raise SandboxError("docker: could not copy the workspace into the container")
            exec_id = api.exec_create(
                container, _merged(request.command), user=f"{uid}:{uid}",
                environment=_run_env(request), workdir=f"{WORKSPACE}/program",
            )["Id"]
            sock = api.exec_start(exec_id, socket=True)
            pump = _Pump(sock, request.limits.output_bytes, request.limits.tail_bytes,
                         on_exceeded=lambda: self._kill_uid(container, uid))
            try:
                start = time.monotonic()
                pump.start()
                timed_out = False
                # The stream ends when the command exits, unless a background process
                # keeps its output open: then the exec's state says it is done.
                deadline = start + request.limits.timeout_s
                while not pump.join(min(0.25, max(0.0, deadline - time.monotonic()))):
                    if not api.exec_inspect(exec_id).get("Running"):
                        break
                    if time.monotonic() >= deadline:
                        timed_out = True
                        break
                if not pump.join(0):
                    self._kill_uid(container, uid)
                    pump.join(STOP_GRACE_S)
                duration = time.monotonic() - start
            finally:
                pump.close()
            exit_code = api.exec_inspect(exec_id).get("ExitCode")
            junit = None
            if not (timed_out or pump.exceeded):
                junit = read_junit(reusable.ws) if reusable.ws is not None else _fetch_junit(api, container)
            healthy = True
            return ExecResult(
                exit_code=exit_code, duration_s=duration, output_tail=pump.output,
                timed_out=timed_out, output_exceeded=pump.exceeded, junit_xml=junit,
                suite_patch_method=installed,
            )
        finally:
            with self._lock:
                recycle = healthy and not self._closing
                if recycle:  # reset off the run's path; the container is idle again after it
                    self._filler.submit(self._recycle, reusable, uid)
            if not recycle:
                self._retire(api, reusable)

    def _recycle(self, reusable: _Reusable, uid: int) -> None:
        api = self._api()
        try:
            self._reset(api, reusable.id, uid)
        except (SandboxError, OSError) as exc:
            log.warning("docker: a reused container could not be reset, removing it: %s", exc)
            self._retire(api, reusable)
            return
        with self._lock:
            if not self._closing:
                self._idle.setdefault(reusable.key, []).append(reusable)
                return
        self._retire(api, reusable)

    def _retire(self, api: APIClient, reusable: _Reusable) -> None:
        with self._lock:
            if reusable not in self._all_reused:
                return
            self._all_reused.remove(reusable)
        self._discard(api, reusable)

    def _discard(self, api: APIClient, reusable: _Reusable) -> None:
        self._remove(api, reusable.id)
        if reusable.ws is not None:
            shutil.rmtree(reusable.ws, ignore_errors=True)

    def close(self) -> None:
        with self._lock:
            self._closing = True
        self._filler.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            reused, self._all_reused, self._idle = self._all_reused, [], {}
            warm, self._warm = [b for boxes in self._warm.values() for b in boxes], {}
        api = self._api()
        for reusable in reused:
            self._discard(api, reusable)
        for box in warm:
            self._discard_box(api, box)
        with self._clients_lock:
            clients, self._clients = self._clients, []
        for client in clients:
            client.close()
        self._local = threading.local()

    # -- leftovers ---------------------------------------------------------------------------

    @classmethod
    def sweep(cls, work: WorkPaths) -> int:
        """Remove the containers and host workspaces of processes that are gone (a crash,
        a kill -9); those of live processes, here or on other hosts, are left alone."""
        removed = 0
        for path in orphaned_workspaces(work, "docker"):
            shutil.rmtree(path, ignore_errors=True)
            removed += 1
        if not engine_answers():
            return removed
        api = api_client()
        errors = _errors()
        try:
            runs = api.containers(all=True, filters={"label": f"{RUN_LABEL}=1"})
            builds = api.containers(all=True, filters={"name": BUILD_PREFIX})
            for container in runs + builds:
                labels = container.get("Labels") or {}
                if RUN_LABEL in labels:
                    alive = _owner_alive(labels.get(OWNER_LABEL, ""))
                else:
                    name = (container.get("Names") or ["/"])[0].lstrip("/")
                    owner = name.removeprefix(BUILD_PREFIX).split("-", 1)[0]
                    alive = not name.startswith(BUILD_PREFIX) or _owner_alive(f"{socket.gethostname()}:{owner.replace('.', ':')}")
                if alive:
                    continue
                try:
                    api.remove_container(container["Id"], force=True, v=True)
                    removed += 1
                except errors.NotFound:
                    pass
        finally:
            api.close()
        if removed:
            log.info("docker: removed %d leftovers of crashed runs", removed)
        return removed
