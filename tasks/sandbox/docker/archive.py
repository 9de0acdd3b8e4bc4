"""A run's workspace in its container.

Two ways to put a fresh workspace in a container, chosen once per backend (`copy_mode`):
`bind` (the engine runs on this host: a fresh host copy, bind-mounted; the cheapest) and
`archive` (a remote or rootless engine: a tar copied in with put_archive, the JUnit XML
fetched back with get_archive, and a generation run's outputs as a tar stream parsed without
extracting: tasks/sandbox/outputs.py). Either way every entry belongs to the run's uid.
"""

from __future__ import annotations

import contextlib
import io
import shutil
import socket
import tarfile
import tempfile
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from testprism.tasks.sandbox.base import REPORT_MAX_BYTES
from testprism.tasks.sandbox.base import RunRequest, SandboxError
from testprism.tasks.sandbox.docker.engine import _errors, api_client
from testprism.tasks.sandbox.outputs import RunOutputs, outputs_from_tar, program_unreadable
from testprism.tasks.sandbox.nofollow import UnsafeTarget
from testprism.tasks.sandbox.workspace import fill_workspace

if TYPE_CHECKING:
    from docker import APIClient

WORKSPACE = PurePosixPath("/workspace")


def copy_mode(api: APIClient, forced: str | None = None) -> str:  # noqa: D401
    """`forced` (DockerSettings' copy mode: bind | archive), else bind when the engine shares
    this host's filesystem and uids (same host name, not rootless), else archive."""
    if forced in ("bind", "archive"):
        return forced
    info = api.info()
    rootless = any("rootless" in opt for opt in info.get("SecurityOptions") or ())
    return "bind" if info.get("Name") == socket.gethostname() and not rootless else "archive"


def workspace_archive(request: RunRequest, uid: int, staging_root: Path,
                      program_at: str | None = None) -> tuple[tempfile.SpooledTemporaryFile, str]:
    """The archive-mode workspace: the one fill (tasks/sandbox/workspace.py) in a staging
    folder, as a tar of `workspace/program` and `workspace/out` to extract at `/`, every
    entry owned by `uid` and links stored as links. Returns it and how the suite's patch
    applied. `program_at`: an image run's program path, where the program goes instead
    (into the run's empty volume there, `fresh.py`), `workspace/program` then a link to it
    as bind mode's two views of one folder are."""
    buffer = tempfile.SpooledTemporaryFile(max_size=64 * 1024 * 1024)
    staging = Path(tempfile.mkdtemp(prefix="archive-", dir=staging_root))
    try:
        installed = fill_workspace(request, staging)

        def owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
            info.uid = info.gid = uid
            info.uname = info.gname = ""
            return info

        with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
            if program_at is None:
                tar.add(str(staging), arcname=str(WORKSPACE.relative_to("/")), filter=owned)
            else:
                tar.add(str(staging / "program"), arcname=program_at.lstrip("/"), filter=owned)
                tar.add(str(staging), arcname=str(WORKSPACE.relative_to("/")), recursive=False, filter=owned)
                for entry in sorted(staging.iterdir()):
                    if entry.name != "program":
                        tar.add(str(entry), arcname=f"{WORKSPACE.relative_to('/')}/{entry.name}", filter=owned)
                link = owned(tarfile.TarInfo(f"{WORKSPACE.relative_to('/')}/program"))
                link.type, link.linkname = tarfile.SYMTYPE, program_at
                tar.addfile(link)
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
        return content.read(REPORT_MAX_BYTES) if content else None


def _fetch_outputs(container: str, tree: Path, program: str = f"{WORKSPACE}/program") -> RunOutputs:
    """Archive mode: what the run left in `program/` (RunRequest.keep_outputs; `program`:
    where it is, an image run's program path), read from the engine's tar stream of it; the
    container may have stopped, not been removed. On a client of its own: a stream abandoned
    half-read would hold the run's connection."""
    errors = _errors()
    with contextlib.closing(api_client()) as api:
        try:
            stream, info = api.get_archive(container, program)
        except errors.NotFound:
            return program_unreadable("gone")
        if info.get("linkTarget"):
            return program_unreadable("a link")
        try:
            return outputs_from_tar(stream, PurePosixPath(program).name, tree)
        except tarfile.TarError as exc:
            raise SandboxError(f"docker: the archive of a run's program/ is unreadable: {exc}") from exc


def _fetch_program(container: str, target: Path, program: str = f"{WORKSPACE}/program") -> None:
    """Archive mode's `export_tree`: the run's `program/` (at `program`) from the engine's
    tar stream, extracted into the new folder `target` under tarfile's `data` filter, which
    refuses links that point outside it, absolute names and device files (UnsafeTarget)."""
    errors = _errors()
    with contextlib.closing(api_client()) as api:
        try:
            stream, info = api.get_archive(container, program)
        except errors.NotFound as exc:
            raise UnsafeTarget("the run's program/ is gone") from exc
        if info.get("linkTarget"):
            raise UnsafeTarget("the run replaced program/ by a link")
        with tempfile.TemporaryFile() as buffer:
            for chunk in stream:
                buffer.write(chunk)
            buffer.seek(0)
            staging = Path(tempfile.mkdtemp(prefix="export-", dir=target.parent))
            try:
                with tarfile.open(fileobj=buffer, mode="r") as tar:
                    tar.extractall(staging, filter="data")
                (staging / PurePosixPath(program).name).rename(target)
            except (tarfile.TarError, OSError) as exc:
                raise UnsafeTarget(f"the run's program/ cannot be copied back: {exc}") from exc
            finally:
                shutil.rmtree(staging, ignore_errors=True)
