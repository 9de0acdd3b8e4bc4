"""Benchmark parts carried with a batch (tasks/execution/parcel.py): a worker's copies are
the benchmark's content, each unpacked once, and a part that would write outside its
folder is refused."""

from __future__ import annotations

import io
import os
import tarfile

import pytest

from testprism.tasks.execution.batch import ExecutionOptions
from testprism.tasks.execution.parcel import Parcel, ParcelError, pack, unpack
from testprism.tasks.model.bundled import BUNDLED
from testprism.tasks.model.benchmark import load_benchmark
from testprism.tasks.model.hashing import tree_digest
from testprism.tasks.model.workdir import WorkPaths
from testprism.tasks.replay.runs import plan
from tests.benchfixture import CHECKS, WEAK, make_benchmark


@pytest.fixture()
def specs(tmp_path):
    bench = make_benchmark(tmp_path / "bench", {"strong": {"test_m.py": CHECKS}, "weak": {"test_m.py": WEAK}})
    return plan(load_benchmark(bench), ExecutionOptions(backend="local", work_root=None, store_root=None))


def test_a_workers_copies_are_the_benchmarks_content(specs, tmp_path):
    parcel = pack(specs)
    assert len(parcel.parts) == 3  # one program, two suites: each once for the batch's 8 runs
    work = WorkPaths(tmp_path / "worker")
    moved = unpack(specs, parcel, work)
    assert [m.run_key for m in moved] == [s.run_key for s in specs]
    for before, after in zip(specs, moved):
        assert after.instance.folder.is_relative_to(work.root / "parts")
        assert after.suite.folder.is_relative_to(work.root / "parts")
        assert tree_digest(after.instance.program) == before.instance.program_hash == after.instance.program_hash
        assert [(after.suite.folder / f).read_bytes() for f in after.suite.files] == \
            [(before.suite.folder / f).read_bytes() for f in before.suite.files]
        assert after.suite.hash == before.suite.hash
    # a second batch bringing the same parts finds them unpacked: nothing is extracted again
    marker = moved[0].instance.program / "marker"
    marker.write_text("kept")
    unpack(specs, parcel, work)
    assert marker.read_text() == "kept"


def _tar(*members: tuple[tarfile.TarInfo, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for info, data in members:
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data else None)
    return buffer.getvalue()


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, link, 0o4755
    return info


@pytest.mark.parametrize("member", [
    _member("../escape"), _member("/etc/escape"), _member("dev", tarfile.CHRTYPE),
    _member("hard", tarfile.LNKTYPE, "../../etc/passwd"), _member("soft", tarfile.SYMTYPE, "/etc"),
], ids=["dotdot", "absolute", "device", "hardlink-out", "absolute-link"])
def test_a_part_that_would_write_outside_its_folder_is_refused(specs, tmp_path, member):
    key = next(iter(pack(specs).parts))
    bad = Parcel({key: _tar((member, b"x" if member.isreg() else b""))})
    with pytest.raises(ParcelError, match="part member"):
        unpack(specs, bad, WorkPaths(tmp_path / "worker"))
    assert not (tmp_path / "escape").exists()


def test_nothing_is_written_through_a_link_the_part_made(specs, tmp_path):
    """A link out of the part and a file named through it: files are placed before links,
    so the link cannot redirect the file, and the part is refused."""
    key = next(iter(pack(specs).parts))
    outside = tmp_path / "outside"
    outside.mkdir()
    target = WorkPaths(tmp_path / "worker").part(key)
    link = _member("program", tarfile.SYMTYPE, os.path.relpath(outside, target))
    parcel = Parcel({key: _tar((link, b""), (_member("program/file.py"), b"ok"))})
    with pytest.raises((OSError, tarfile.TarError)):
        unpack(specs, parcel, WorkPaths(tmp_path / "worker"))
    assert list(outside.iterdir()) == []


def test_set_id_bits_are_dropped(specs, tmp_path):
    parts = dict(pack(specs).parts)
    key = next(iter(parts))
    parts[key] = _tar((_member("tool"), b"#!/bin/sh\n"))  # mode 4755 in the tar
    work = WorkPaths(tmp_path / "worker")
    unpack(specs, Parcel(parts), work)
    assert (work.part(key) / "tool").stat().st_mode & 0o7777 == 0o755


def test_a_dockerfile_folder_travels_with_its_instance(tmp_path):
    """The docker backend builds an environment from its Dockerfile's folder: a worker's
    copy of it, under the same environment key (so the same image tag and run keys)."""
    bench = load_benchmark(BUNDLED)
    specs = [s for s in plan(bench, ExecutionOptions(backend="local", work_root=None, store_root=None))
             if s.instance.id == "urlkit__query-repeated-keys"]
    before = specs[0].instance.spec.environment
    assert before.context is not None
    moved = unpack(specs, pack(specs), WorkPaths(tmp_path / "worker"))[0].instance.spec.environment
    assert moved.context.is_relative_to(tmp_path / "worker" / "parts")
    assert moved.key == before.key
    assert tree_digest(moved.context) == tree_digest(before.context)
