"""What every run container gets, fresh (fresh.py) or reused in fast mode (reused.py):
the limits and labels, the variables and the command line, a uid of its own and a host
folder for a bind-mounted workspace; and how one is removed.

`_RunContainers` is the base of the two ways of running, mixins of DockerBackend
(backend.py), whose `__init__` sets the attributes declared here."""

from __future__ import annotations

import logging
import secrets
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from testprism.tasks.model.workdir import WorkPaths, workspace_prefix
from testprism.tasks.sandbox.base import RunRequest
from testprism.tasks.sandbox.docker.archive import WORKSPACE
from testprism.tasks.sandbox.docker.engine import LABEL, OWNER_LABEL, RUN_LABEL, SESSION_LABEL, _errors, _sdk
from testprism.tasks.sandbox.hosts import loopback_hosts
from testprism.tasks.sandbox.model_access import SANDBOX_SOCKET, channel_env

if TYPE_CHECKING:
    from docker import APIClient

log = logging.getLogger(__name__)

#: where a bind-mode container's launcher finds its FIFO and its run's script (fresh.py):
#: outside the workspace, so that the run's /workspace is exactly what the fill left
LAUNCH = PurePosixPath("/run/testprism/launch")
UID_BASE = 200_000  # same range as the local backend: no passwd entry, no host files
STOP_GRACE_S = 10  # how long a killed container may take to report its exit
#: where the host's sysfs names what every mount of a state image made, by host-wide counters
#: that grow with each (`/sys/fs/erofs/<device>`, the backing devices `erofs-<n>`): an empty
#: folder in every container, or a run could tell how many runs of its worker came before it
HOST_COUNTERS_SYSFS = ("/sys/fs/erofs", "/sys/class/bdi", "/sys/devices/virtual/bdi")


def _run_env(request: RunRequest) -> dict[str, str]:
    """The same variables as the local backend."""
    return {
        "PATH": f"{request.environment / 'bin'}:/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1",
        "TESTPRISM_JUNIT": f"{WORKSPACE}/out/junit.xml", **request.env, **channel_env(request),
    }


def _own_container(request: RunRequest) -> bool:
    """Whether a run needs a container made for it, neither pre-started nor reused: a
    generation run's (the channel's socket is bound when the container is created; its
    outputs are read before the container goes), and a state's build step (its tree is
    copied back). One per instance or state, often minutes long: what a pre-start saves
    does not matter there."""
    return (request.channel is not None or request.keep_outputs or request.export_tree is not None
            or bool(request.mounts))  # made into the container: one of its own (an official check's)


def _merged(command: str) -> list[str]:
    """`bash -c command` with stderr on stdout, one ordered stream as in the local
    backend (the engine would otherwise carry two, interleaved in no fixed order)."""
    return ["bash", "-c", 'exec bash -c "$1" 2>&1', "bash", command]


def _run_uid() -> int:
    return UID_BASE + secrets.randbelow(60_000)


class _RunContainers:
    """The containers of DockerBackend's runs: made alike, removed alike."""

    work: WorkPaths
    cpus: float  # the CPU quota of every run container (a run's own `Limits.cpus` may lower it)
    runtime: str | None  # the engine's OCI runtime for run containers (None: its default, runc)
    pids_version: str | None  # pids.watchable(): the engine's cgroup version, None if unwatched
    copy: str  # copy_mode() (archive.py): bind | archive
    owner: str  # _owner() (engine.py): labelled on every run container, for sweep()
    session: str  # this backend instance: labelled on every run container
    _lock: threading.Lock  # guards the backend's shared state, the pools of containers among it
    _closing: bool  # close() has begun: no container is kept for a next run any more
    _filler: ThreadPoolExecutor  # what is done off the runs' path (pre-starts, fast mode's resets)

    if TYPE_CHECKING:

        def _api(self) -> APIClient:  # one client per thread (backend.py)
            ...

    def _host_config(self, api: APIClient, request: RunRequest, ws: Path | None, shared: bool = False,
                     control: Path | None = None, program_at: str | None = None,
                     parent: str | None = None, program_volume: str | None = None) -> dict:
        """`shared`: `ws` is a shared mount (layer.share_workspace), bound `rslave` so that
        the program layer mounted there after the container started is seen inside.
        `control`: the launcher's host folder (fresh.py), bound at LAUNCH. `program_at`: an
        image run's program path, where the workspace's (filled) program is bound too.
        `parent`: the container's parent cgroup (pids.py), which tells its peak of processes.
        `program_volume`: archive mode's image run: an empty volume of the container's own
        there (never filled from the image: `no_copy`), removed with it.

        The image's root is read-only and every place a run may write besides its workspace
        (/tmp, /var/tmp, /dev/shm) is a tmpfs of `Limits.disk_mb`: the container's writable
        layer lives on the host's disk, outside the memory cgroup, so a run could otherwise
        fill the disk through any folder the image left writable; tmpfs pages count against
        the memory limit, so memory and tmpfs together stay under `Limits.memory_mb`."""
        docker = _sdk()
        limits = request.limits
        memory = limits.memory_mb * 1024 * 1024
        fsize = limits.file_size_mb * 1024 * 1024
        binds = {}
        if ws is not None:
            binds[str(ws)] = {"bind": str(WORKSPACE), "mode": "rw", **({"propagation": "rslave"} if shared else {})}
        if ws is not None:  # the engine is on this host: the loopback names it would have mounted
            binds[str(loopback_hosts(self.work))] = {"bind": "/etc/hosts", "mode": "ro"}
        if ws is not None and program_at is not None:
            binds[str(ws / "program")] = {"bind": program_at, "mode": "rw"}
        if control is not None:
            binds[str(control)] = {"bind": str(LAUNCH), "mode": "rw"}
        if request.channel is not None:
            binds[str(request.channel)] = {"bind": str(SANDBOX_SOCKET), "mode": "ro"}
        binds |= {str(m.host): {"bind": m.inside, "mode": "ro"} for m in request.mounts if m.host is not None}
        # exec: docker makes a tmpfs noexec unless told, and toolchains run what they build
        # in /tmp (go test links its test binary there)
        scratch = f"rw,exec,nosuid,nodev,size={limits.disk_mb}m,mode=1777"
        extra = {m.inside: scratch for m in request.mounts if m.host is None}
        if self.runtime is None:
            # the host's sysfs lists every mounted EROFS (the harness's state images,
            # tasks/sandbox/tree_image.py) by a counter: an empty folder instead, in every run
            extra |= dict.fromkeys(HOST_COUNTERS_SYSFS, "ro,nosuid,nodev,noexec,size=4k,mode=0555")
        # archive mode copies the workspace into the image's root before the start (a
        # tmpfs is not there yet): its root stays writable, bounded per file only
        return api.create_host_config(
            network_mode="none", mem_limit=memory, memswap_limit=memory, pids_limit=limits.processes,
            nano_cpus=int(min(self.cpus, limits.cpus or self.cpus) * 1e9), init=True, cap_drop=["ALL"], security_opt=["no-new-privileges"],
            ulimits=[docker.types.Ulimit(name="fsize", soft=fsize, hard=fsize),
                     docker.types.Ulimit(name="core", soft=0, hard=0),
                     docker.types.Ulimit(name="nofile", soft=1024, hard=1024)],
            log_config=docker.types.LogConfig(type="none"),
            read_only=self.copy == "bind", tmpfs={"/tmp": scratch, "/var/tmp": scratch, **extra}, shm_size=f"{limits.disk_mb}m",
            binds=binds or None, runtime=self.runtime, cgroup_parent=f"/{parent}" if parent else None,
            mounts=[docker.types.Mount(program_volume, None, type="volume", no_copy=True)] if program_volume else None,
        )

    def _oom_since(self, api: APIClient, container: str, since: float) -> bool:
        """Whether the container's memory cgroup OOM-killed any of its processes since
        `since` (a time.time()): the engine's `oom` events, which it logs for every kill
        whichever process died. `State.OOMKilled` is not enough: it is set only when the
        kill was seen before the container's exit, and a container killed whole by its
        cgroup (tmpfs pages left charged) often reports the exit first."""
        events = api.events(since=f"{since:.6f}", until=f"{time.time():.6f}", decode=True,
                            filters={"container": container, "event": "oom"})
        try:
            return any(True for _ in events)
        finally:
            events.close()

    def _labels(self, **extra: str) -> dict[str, str]:
        return {LABEL: "1", RUN_LABEL: "1", OWNER_LABEL: self.owner, SESSION_LABEL: self.session, **extra}

    def _host_workspace(self) -> Path:
        """A new host folder for a bind-mounted workspace, named after this process so that
        sweep() knows whose it is."""
        return Path(tempfile.mkdtemp(prefix=workspace_prefix("docker"), dir=self.work.workspaces))

    def _remove(self, api: APIClient, container: str) -> None:
        errors = _errors()
        try:
            api.remove_container(container, force=True, v=True)
        except errors.NotFound:
            pass
        except errors.APIError as exc:
            log.warning("docker: could not remove container %s (sweep will): %s", container[:12], exc)

    def _warm_key(self, request: RunRequest, tag: str) -> tuple[str, str]:
        """What a pre-started or reused container is kept for: its image and limits."""
        return tag, request.limits.key
