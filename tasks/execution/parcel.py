"""What a batch reads from the benchmark, carried with it by content: for workers that share
no disk with the flow.

A run reads three things of the benchmark's from disk: the instance's program tree (copied
into the state's tree), the suite's files (copied into the run's workspace) and, on docker,
the environment's Dockerfile folder (its build context). On one host, or a cluster with a
shared filesystem, the worker reads them where the flow loaded them. A Kubernetes pod or a
cloud VM has no such path, so the flow packs them into the batch (`pack`), each once
however many runs read it, and the worker unpacks each into its own work area under its
content key (`unpack`), once per worker whatever the number of batches that bring it, and
runs the batch on those copies. Patches are bytes in the specs already.

A part is unpacked checked (`_checked`): nothing outside its folder, no device files, and
no member written through a link the part itself made.
"""

from __future__ import annotations

import io
import os
import tarfile
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Protocol, TypeVar

from testprism.tasks.model.benchmark import Instance, Suite
from testprism.tasks.model.hashing import digest
from testprism.tasks.model.workdir import WorkPaths, build_once


class Reads(Protocol):
    """A unit that reads an instance and maybe a suite (a replay's RunSpec): a frozen
    dataclass, so that its copy can read the worker's parts."""

    @property
    def instance(self) -> Instance: ...

    @property
    def suite(self) -> Suite | None: ...


U = TypeVar("U", bound=Reads)


def _archive(root: Path, members: list[tuple[Path, str]]) -> bytes:
    """A tar of `members` (path on this host, name in the tar), links kept as links."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path, name in members:
            tar.add(path, arcname=name, recursive=True)
    return buffer.getvalue()


class ParcelError(ValueError):
    """A part that would write outside its folder, or something other than files and links."""


def _inside(name: str) -> bool:
    path = PurePosixPath(name)
    return not path.is_absolute() and ".." not in path.parts


def _checked(tar: tarfile.TarFile) -> list[tarfile.TarInfo]:
    """The members to extract, in an order that never writes through a link the part made
    (folders and files, then hard links, then symbolic links last), each owned by this
    process and stripped of set-id bits; a member named outside the folder, a hard link to
    one, an absolute symbolic link or a device refuses the part. (tarfile's `data` filter
    does this from Python 3.11.4; Debian 12 has 3.11.2.)"""
    members = []
    for member in tar.getmembers():
        if not _inside(member.name) or not (member.isreg() or member.isdir() or member.issym() or member.islnk()):
            raise ParcelError(f"part member {member.name!r}: not a file, folder or link inside the part")
        if member.islnk() and not _inside(member.linkname):
            raise ParcelError(f"part member {member.name!r}: a hard link to {member.linkname!r}, outside the part")
        if member.issym() and PurePosixPath(member.linkname).is_absolute():
            raise ParcelError(f"part member {member.name!r}: a link to an absolute path")
        member.mode &= 0o755
        member.uid, member.gid, member.uname, member.gname = os.getuid(), os.getgid(), "", ""
        members.append(member)
    return sorted(members, key=lambda m: 2 if m.issym() else 1 if m.islnk() else 0)


def _extract(archive: bytes, target: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(archive), errorlevel=2) as tar:  # no member skipped quietly
        tar.extractall(target, members=_checked(tar), numeric_owner=True)


@dataclass(frozen=True)
class Parcel:
    """The benchmark parts of one batch: tar archives by content key. Picklable, so it
    travels inside the batch to any worker."""

    parts: dict[str, bytes]

    @property
    def size(self) -> int:
        return sum(len(archive) for archive in self.parts.values())


def program_key(instance: Instance) -> str:
    return digest("part", "program", instance.program_hash, instance.spec.program.path)


def context_key(instance: Instance) -> str | None:
    environment = instance.spec.environment
    return digest("part", "context", environment.key) if environment.context is not None else None


def suite_key(suite: Suite) -> str:
    return digest("part", "suite", suite.hash)


def pack(specs: list[U]) -> Parcel:
    """Every part the runs of `specs` read: each instance's program (at its place under the
    instance folder), its Dockerfile folder, each suite's files."""
    parts: dict[str, bytes] = {}
    for spec in specs:
        instance = spec.instance
        key = program_key(instance)
        if key not in parts:
            parts[key] = _archive(instance.folder, [(instance.program, instance.spec.program.path)])
        context = instance.spec.environment.context
        key = context_key(instance)
        if key is not None and key not in parts:
            parts[key] = _archive(context, [(context, "context")])  # beside, not among, build_once's marker
        if spec.suite is not None and (key := suite_key(spec.suite)) not in parts:
            parts[key] = _archive(spec.suite.folder, [(spec.suite.folder / f, f) for f in spec.suite.files])
    return Parcel(parts)


def unpack(specs: list[U], parcel: Parcel, work: WorkPaths) -> list[U]:
    """`specs` reading this worker's copies of their parts (unpacked once per work area)."""

    def place(key: str) -> Path:
        return build_once(work.part(key), lambda target: _extract(parcel.parts[key], target))

    instances: dict[int, Instance] = {}
    suites: dict[int, Suite] = {}
    out: list[U] = []
    for spec in specs:
        instance = instances.get(id(spec.instance))
        if instance is None:
            context = context_key(spec.instance)
            instance = spec.instance.relocated(place(program_key(spec.instance)),
                                               place(context) / "context" if context is not None else None)
            instances[id(spec.instance)] = instance
        suite = spec.suite
        if suite is not None:
            suite = suites.get(id(spec.suite)) or suites.setdefault(id(spec.suite),
                                                                    suite.relocated(place(suite_key(suite))))
        out.append(replace(spec, instance=instance, suite=suite))
    return out
