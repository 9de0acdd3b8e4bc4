"""The Docker engine: a client of it, whether one answers, and the labels and names that
say what is testprism's and which process made it (what `DockerBackend.sweep()` judges).

The docker SDK is imported lazily, so testprism works without the `docker` extra.
"""

from __future__ import annotations

import os
import socket
import threading
from typing import TYPE_CHECKING, Any

from testprism.storage.owner import start_time
from testprism.tasks.sandbox.base import SandboxUnavailable

if TYPE_CHECKING:
    from docker import APIClient

LABEL = "testprism"  # on every image and container testprism makes
RUN_LABEL = "testprism.run"  # on run containers (fresh and reused): what sweep() removes
OWNER_LABEL = "testprism.owner"  # host:pid:start-time of the process that made it
SESSION_LABEL = "testprism.session"  # the backend instance that made it
BUILD_PREFIX = "testprism-build-"  # build containers: testprism-build-<pid>.<start-time>-<key>


def _sdk():
    try:
        import docker
    except ImportError as exc:
        raise SandboxUnavailable(
            "the docker backend needs the docker SDK: pip install 'testprism[docker]'"
        ) from exc
    return docker


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
