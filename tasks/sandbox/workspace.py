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
Reports stream back through a pipe the harness holds (tasks/sandbox/report_pipe.py); workspaces are removed by tasks/sandbox/layer.py
`discard` (mounts detached first, then removal.remove_tree, which does not follow links).

A fill asked for a bounded workspace (`bounded=True`; `bound_workspace` says how) puts the
workspace on a size-limited tmpfs of its own, with the sandbox's temporary folders inside
(`scratch_folders`), so that all a run writes fits in the state's tree + `Limits.disk_mb`,
and `disk_exceeded` tells afterwards whether it filled it.

Where the harness is root and the kernel can, a fill asked for a layered program does not
copy the state's tree: `program/` is an overlay over it (by default over its read-only image)
with an upper layer of the run's own (tasks/sandbox/layer.py says how and why); everything
else here is the same either way.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import tempfile
from pathlib import Path

from testprism.tasks.sandbox import layer
from testprism.tasks.sandbox.layer import _MS_NODEV, _MS_NOSUID, _MS_PRIVATE, _MS_REMOUNT, LayerUnavailable, _mount
from testprism.tasks.sandbox.nofollow import UnsafeTarget, write_file
from testprism.tasks.model.removal import remove_tree
from testprism.tasks.sandbox.tree_image import ImageUnavailable
from testprism.tasks.sandbox.base import RunRequest, SandboxError, SuiteNotInstalled
from testprism.tasks.model.state import apply_patch

log = logging.getLogger(__name__)

#: the access and modification time of every entry of a workspace (2020-09-13), as
#: reproducible builds fix SOURCE_DATE_EPOCH: the same in every state and every run
SETTLED_MTIME = 1_600_000_000
#: `0` turns bounded workspaces off (on the work area's disk, unbounded): the tests' control
BOUNDED_SETTING = "TESTPRISM_BOUNDED_WORKSPACE"
#: the sandbox's temporary folders, inside a bounded workspace: (folder in the workspace,
#: where a sandbox shows it). Every run has them, empty, whatever its state.
SCRATCH = (("scratch/tmp", "/tmp"), ("scratch/var-tmp", "/var/tmp"), ("scratch/shm", "/dev/shm"))
#: free space under which a workspace counts as filled: a write that did not fit fills a
#: tmpfs to its last page, so a run that met ENOSPC leaves less than this
FULL_BELOW = 1024 * 1024
#: a bounded workspace's size while the harness fills it: a tmpfs cannot be limited once
#: mounted unlimited, so it is mounted at this (never reached) and sealed after the fill
_FILL_SIZE = 1 << 40


def fill_workspace(request: RunRequest, ws: Path, uid: int | None = None, layered: bool = False,
                   bounded: bool = False) -> str:
    """Fill the empty harness-made folder `ws`; everything owned by `uid` when given.
    `bounded`: on a tmpfs of its own (`bound_workspace`; already mounted is kept), with the
    SCRATCH folders, sealed at what the fill put there + `request.limits.disk_mb`.
    `layered`: the caller binds `ws` as it is and removes it with layer.discard, so its
    program may be a layer over the state's tree rather than a copy (when a uid is given and
    layer.available()). A state's build step always gets a copy: it runs once per state, its
    whole tree is exported, and `program/` itself, a mount point when layered, stays a plain
    folder it may replace (and be refused for). Returns how the suite's test patch applied
    ("" when it has none)."""
    program = ws / "program"
    sealed = bounded and bound_workspace(ws)
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
    if bounded:
        for folder, _ in SCRATCH:
            (ws / folder).mkdir(parents=True)
    _hand_over(ws, uid, layer.added_entries(ws) if layered else None)
    if sealed:
        _seal(ws, request.limits.disk_mb)
    return method


def bound_workspace(ws: Path) -> bool:
    """Make the empty host folder `ws` a workspace whose space is bounded; returns whether
    it is (False: the one warning `bounds_available` logs, and `ws` stays a folder on the
    work area's disk, bounded only by the per-file limit).

    For a backend's engineer: a tmpfs of the workspace's own is mounted at `ws` (nosuid,
    nodev, mode 0700, private propagation, so it reaches no other mount namespace), as
    large as needed while the harness fills it; `fill_workspace(..., bounded=True)` calls
    this, then seals it at what the fill put there + `Limits.disk_mb`, and makes the SCRATCH
    folders, which the backend shows the run at /tmp, /var/tmp and /dev/shm (bind them), so
    the run's temporary files share the one bound. Call it yourself only where something
    must bind `ws` before the fill (a pre-started container): call it BEFORE that bind, and
    before `layer.share_workspace` (a folder that is already a mount point is taken as
    bounded and left as it is). After the run, `disk_exceeded(ws)` says whether the run
    filled it (`ExecResult.limit = "disk_limit"`). `layer.discard(ws)` unmounts and removes
    it like any workspace. A tmpfs is memory: its pages count against the memory cgroup of
    whoever writes them (the run's, for what the run writes), so a full workspace is also
    memory a run holds, bounded by its memory limit too."""
    if os.path.ismount(ws):
        return True
    if not bounds_available():
        return False
    _mount("tmpfs", ws, "tmpfs", _MS_NOSUID | _MS_NODEV, f"size={_FILL_SIZE},mode=0700")
    _mount(None, ws, None, _MS_PRIVATE, None)
    return True


def _seal(ws: Path, disk_mb: int) -> None:
    """Shrink the bounded workspace to what the fill used + `disk_mb` (tmpfs allows it:
    the new size is never below what is in use)."""
    info = os.statvfs(ws)
    used = (info.f_blocks - info.f_bfree) * info.f_frsize
    _mount(None, ws, None, _MS_REMOUNT | _MS_NOSUID | _MS_NODEV, f"size={used + disk_mb * 1024 * 1024}")


def scratch_folders(ws: Path) -> list[tuple[Path, str]]:
    """The host folders of a bounded fill's SCRATCH, each with the path a sandbox shows it at."""
    return [(ws / folder, inside) for folder, inside in SCRATCH]


def disk_exceeded(ws: Path) -> bool:
    """Whether the run filled its workspace (or, layered, its program's upper layer): less
    than FULL_BELOW free, or no inode left. A run that filled it and freed it again before
    ending is judged on how it ended."""
    for fs in (ws, layer.layer_folder(ws)):
        try:
            info = os.statvfs(fs)
        except FileNotFoundError:
            continue
        if info.f_bavail * info.f_frsize < FULL_BELOW or (info.f_files and not info.f_favail):
            return True
    return False


def bounds_available() -> bool:
    """Whether workspaces can be bounded: not turned off (`$TESTPRISM_BOUNDED_WORKSPACE=0`,
    read at every call) and a tmpfs mountable here (root: probed once per process)."""
    return os.environ.get(BOUNDED_SETTING, "1") != "0" and _tmpfs_mountable()


@functools.cache
def _tmpfs_mountable() -> bool:
    probe = Path(tempfile.mkdtemp(prefix="testprism-bound-probe-"))
    try:
        _mount("tmpfs", probe, "tmpfs", _MS_NOSUID | _MS_NODEV, "size=1m,mode=0700")
        layer.unmount_under(probe)
        return True
    except LayerUnavailable as exc:
        log.warning("workspaces are not bounded (%s): a run's disk use is bounded per file only", exc)
        return False
    finally:
        shutil.rmtree(probe, ignore_errors=True)


def _layer(request: RunRequest, ws: Path, uid: int) -> bool:
    try:
        layer.mount_program(request.tree, ws, uid, SETTLED_MTIME, request.limits.disk_mb)
    except layer.LayerUnavailable as exc:
        # a tree with no image (not a finished work-area tree; a failed build said so once)
        # is not a fallback of the machine's: said at debug level
        quiet = isinstance(exc.__cause__, ImageUnavailable)
        log.log(logging.DEBUG if quiet else logging.WARNING, "workspace %s: no layer (%s); copying the state's tree",
                ws.name, exc)
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


def remove_workspace(ws: Path, *beside: Path) -> None:
    """Remove a run's workspace (its mounts first: layer.discard) and the harness's own
    folders `beside` it, or raise SandboxError: whatever the run left there (a tree
    thousands of folders deep, modes that deny the owner, more entries than removal's
    bound) is that run's error, never the batch's. Checked afterwards, so a removal that
    gave up quietly is an error too."""
    try:
        layer.discard(ws)
        for folder in beside:
            shutil.rmtree(folder, ignore_errors=True)  # the harness's own: a FIFO and a script at most
    except Exception as exc:  # noqa: BLE001 - RecursionError, OSError, ...: the run's, reported as such
        raise SandboxError(f"could not remove the workspace {ws.name}: {exc!r}") from exc
    left = [p.name for p in (ws, layer.layer_folder(ws), *beside) if os.path.lexists(p)]
    if left:
        raise SandboxError(f"the workspace could not be removed: {', '.join(left)} left in {ws.parent}")


def clear_workspace(ws: Path) -> None:
    """Empty a reused workspace (fast mode) without following anything the run left, however
    deep or oddly moded (removal.remove_tree; RemovalError when something stays)."""
    for child in ws.iterdir():
        remove_tree(child)
