"""The one workspace fill, shared by every backend, and the harness's reads of what a run left.

A workspace is `program/` (a copy of the state's tree, the suite's files under `tmp/`, the
suite's test patch applied) and an empty `out/` for reports. The harness runs as root
outside the sandbox, and the tree comes from a patch, the suite from an agent: a link they
made (`tmp -> /etc`, `out -> /root`) must never redirect the harness's own writes or reads.
So every write goes through tasks/sandbox/nofollow.py (directory descriptors opened with
O_NOFOLLOW, one component at a time), and a suite whose file would land on a link, or on a
file where a folder is needed, is not installed (`SuiteNotInstalled`: the run is
`E`/`suite_not_installed`). The
test patch is applied by `git apply` / GNU patch, which refuse to write beyond a link.
Reports are read back the same way; workspaces are removed by tasks/sandbox/layer.py
`discard` (mounts detached first, then removal.remove_tree, which does not follow links).

Where the harness is root and the kernel can, a fill asked for a layered program does not
copy the state's tree: `program/` is an overlay over it with an upper layer of the run's own
(tasks/sandbox/layer.py says how and why); everything else here is the same either way.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from pathlib import Path

from testprism.tasks.sandbox import layer
from testprism.tasks.sandbox.nofollow import UnsafeTarget, read_file, write_file
from testprism.tasks.sandbox.removal import remove_tree
from testprism.tasks.sandbox.base import RunRequest, SuiteNotInstalled
from testprism.tasks.model.state import apply_patch

log = logging.getLogger(__name__)

JUNIT_MAX_BYTES = 8 * 1024 * 1024
#: the access and modification time of every entry of a workspace (2020-09-13), as
#: reproducible builds fix SOURCE_DATE_EPOCH: the same in every state and every run
SETTLED_MTIME = 1_600_000_000


def fill_workspace(request: RunRequest, ws: Path, uid: int | None = None, layered: bool = False) -> str:
    """Fill the empty harness-made folder `ws`; everything owned by `uid` when given.
    `layered`: the caller binds `ws` as it is and removes it with layer.discard, so its
    program may be a layer over the state's tree rather than a copy (when a uid is given and
    layer.available()). A state's build step always gets a copy: it runs once per state, its
    whole tree is exported, and `program/` itself, a mount point when layered, stays a plain
    folder it may replace (and be refused for). Returns how the suite's test patch applied
    ("" when it has none)."""
    program = ws / "program"
    layered = (layered and uid is not None and request.export_tree is None and layer.available()
               and _layer(request, ws, uid))
    if not layered:
        shutil.copytree(request.tree, program, symlinks=True)
    if request.suite_folder is not None:
        for rel in request.suite_files:
            try:
                write_file(program, ("tmp", *Path(rel).parts), (request.suite_folder / rel).read_bytes())
            except UnsafeTarget as exc:
                raise SuiteNotInstalled(f"the suite's tmp/{rel} cannot be placed in this state's tree: {exc}") from exc
    method = ""
    if request.suite_patch is not None:
        applied = apply_patch(program, request.suite_patch, request.patch_fuzz)
        if not applied.applied:
            raise SuiteNotInstalled(f"the suite's test patch applies neither with git apply nor patch "
                                    f"--fuzz={request.patch_fuzz}:\n{applied.message}")
        method = applied.method
    (ws / "out").mkdir()
    _hand_over(ws, uid, layer.added_entries(ws) if layered else None)
    return method


def _layer(request: RunRequest, ws: Path, uid: int) -> bool:
    try:
        layer.mount_program(request.tree, ws, uid, SETTLED_MTIME, request.limits.memory_mb)
    except layer.LayerUnavailable as exc:
        log.warning("workspace %s: no layer (%s); copying the state's tree", ws.name, exc)
        return False
    return True


def _hand_over(ws: Path, uid: int | None, layered: list[str] | None) -> None:
    """One walk over the filled workspace: every entry gets SETTLED_MTIME (a patch left
    fresh times on what it touched, copying carried the tree's access times, which reading
    it moves, and the fill's own files are new), and, when the sandbox drops to `uid`, that
    owner. Links are changed themselves, never followed (os.walk does not descend into
    linked folders). A layered program's lower entries already look so (layer.py): only
    `layered`, the entries the fill added to its upper layer, are handed over."""
    times = (SETTLED_MTIME, SETTLED_MTIME)

    def hand(path: str) -> None:
        if uid is not None:
            os.chown(path, uid, uid, follow_symlinks=False)
        os.utime(path, times, follow_symlinks=False)

    program = os.path.join(ws, "program")
    entries = []  # the whole walk first: listing a folder moves its access time
    for dirpath, dirnames, filenames in os.walk(ws):
        if layered is not None and dirpath == str(ws):
            dirnames.remove("program")  # not walked: its lower is the state's whole tree
        entries += [os.path.join(dirpath, name) for name in dirnames + filenames]
    for path in entries:
        hand(path)
    for rel in sorted(layered or (), key=lambda r: -r.count(os.sep)):
        with contextlib.suppress(FileNotFoundError):  # a whiteout: deleted by the patch
            hand(os.path.join(program, rel))
    if layered is not None:
        hand(program)
    if uid is not None:
        os.chown(ws, uid, uid)
    os.utime(ws, times)


def export_program(ws: Path, target: Path) -> None:
    """Copy the `program/` a run left to the new host folder `target`: links are copied as
    links (copytree with symlinks=True follows none), and a `program` the run replaced by a
    link is refused, so nothing outside the workspace is ever read."""
    program = ws / "program"
    if program.is_symlink() or not program.is_dir():
        raise UnsafeTarget(f"{program} is no longer a folder")
    shutil.copytree(program, target, symlinks=True)


def read_junit(ws: Path) -> bytes | None:
    """The JUnit XML a run left at `ws/out/junit.xml`, if that is a regular file reached
    without a link (the run owns `out/` and may have swapped it, or the file, for one)."""
    return read_file(ws, ("out", "junit.xml"), JUNIT_MAX_BYTES)


def clear_workspace(ws: Path) -> None:
    """Empty a reused workspace (fast mode) without following anything the run left, however
    deep or oddly moded (removal.remove_tree; RemovalError when something stays)."""
    for child in ws.iterdir():
        remove_tree(child)
