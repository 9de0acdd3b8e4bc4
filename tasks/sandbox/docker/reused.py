"""Fast mode (`TESTPRISM_DOCKER_REUSE=1` or `reuse=True`): one container kept per
environment and thread, its workspace reset between runs: cheaper, weaker isolation
(docs/docker.md)."""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from testprism.tasks.sandbox.base import ExecResult, RunRequest, SandboxError
from testprism.tasks.sandbox.docker.archive import WORKSPACE, _fetch_junit, workspace_archive
from testprism.tasks.sandbox.docker.containers import STOP_GRACE_S, _merged, _run_env, _run_uid, _RunContainers
from testprism.tasks.sandbox.docker.engine import api_client
from testprism.tasks.sandbox.docker.pump import _Pump
from testprism.tasks.sandbox.report_pipe import ReportPipe
from testprism.tasks.sandbox.workspace import (
    bound_workspace,
    clear_workspace,
    disk_exceeded,
    fill_workspace,
    remove_workspace,
)

if TYPE_CHECKING:
    from docker import APIClient

log = logging.getLogger(__name__)

#: the directories an unprivileged uid can write to in the base image, wiped between
#: runs in fast mode (the workspace is recreated)
SCRATCH = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")


@dataclass
class _Reusable:
    """A long-lived container of fast mode, and its host workspace in bind mode."""

    id: str
    key: tuple[str, str]  # image tag, limits key
    ws: Path | None


class _ReusedRuns(_RunContainers):
    """DockerBackend's runs in fast mode and its pool of reused containers."""

    _idle: dict[tuple[str, str], list[_Reusable]]  # reset and waiting for a run, by image and limits
    _all_reused: list[_Reusable]  # every reused container this backend holds, idle or not

    def _checkout(self, api: APIClient, request: RunRequest, tag: str) -> _Reusable:
        """An idle container of this image and these limits, or a new one."""
        key = self._warm_key(request, tag)
        with self._lock:
            idle = self._idle.setdefault(key, [])
            if idle:
                return idle.pop()
        ws = self._host_workspace() if self.copy == "bind" else None
        if ws is not None:
            bound_workspace(ws)  # before the bind: each run's fill seals it (workspace.py)
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
        report: ReportPipe | None = None
        try:
            uid = _run_uid()
            if reusable.ws is not None:
                clear_workspace(reusable.ws)
                installed = fill_workspace(request, reusable.ws, uid, bounded=True)
                report = ReportPipe(reusable.ws)  # the report streamed out (tasks/sandbox/report_pipe.py)
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
                start, started_at = time.monotonic(), time.time()
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
            # the engine's `oom` events (containers.py): the container's own count cannot be read
            # once its memory is full of the run's tmpfs pages (a reader is killed too)
            limit = None
            if not pump.exceeded and self._oom_since(api, container, started_at):
                limit = "memory_limit"
            elif reusable.ws is not None and disk_exceeded(reusable.ws):
                limit = "disk_limit"
            junit = None
            if not (timed_out or pump.exceeded):
                junit = report.collected() if report is not None else _fetch_junit(api, container)
            healthy = True
            return ExecResult(
                exit_code=exit_code, duration_s=duration, output_tail=pump.output,
                timed_out=timed_out, output_exceeded=pump.exceeded, junit_xml=junit,
                suite_patch_method=installed, limit=limit,
            )
        finally:
            if report is not None:
                report.close()
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
            try:
                remove_workspace(reusable.ws)
            except SandboxError as exc:  # the run was over; sweep() takes it once this process is gone
                log.warning("%s", exc)
