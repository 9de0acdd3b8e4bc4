"""A run's `program/` as the state's tree shared read-only under a writable layer of the run's own.

Copying a state's tree into every run's workspace costs per entry, not per byte: a built Go
module (344 files and 258 folders, mostly its build cache) took 0.13 s to copy on this
machine's disk when it was quiet and up to 0.6 s when runs were writing beside it, against
4 ms for a Python instance's dozen files. So, where the harness is root and the kernel can
(`available`), `program/` is an overlay instead of a copy:

- the lower layer is the state's tree through an **idmapped** mount (mount_setattr with
  MOUNT_ATTR_IDMAP, Linux 5.12+; overlayfs over idmapped layers, 5.19+) that shows the
  harness's files (uid 0) as the run's uid, and that is read-only and noatime. The run owns
  the tree it sees, as it owns a copy (chmod works, git's ownership check passes), and the
  state's tree cannot be written through it, not even by the harness;
- the upper layer and overlayfs's work folder are on a tmpfs of the run's own, mounted
  beside the workspace (`<workspace>.layer`), never inside what the sandbox binds: whatever
  the run writes, renames or deletes lands there, and goes with it. On a tmpfs because a
  tool that touches what it reads makes the kernel copy each such file up: Go marks every
  build-cache entry it uses (an mtime over an hour old), 335 files a run, which cost as
  much as the copy on disk (+0.3 s) and nothing in memory. The tmpfs is as large as the
  run's memory limit: what a run writes to its program is bounded (a copy on disk had no
  bound but the disk), and under docker it counts against the container's memory.

One difference from a copy is visible: `program/` itself is a mount point, so a run cannot
rename or remove that one folder (EBUSY); everything in it is the run's to change. A state's
build step, which may replace it, gets a copy (workspace.py).

The state's tree gets the settled times of every workspace once per process (`_settle`);
after that a fill touches only what it adds (the suite's files, what its test patch
changes): `added_entries` lists them from the upper layer.

**Opt-in** (`TESTPRISM_LAYERED=1`), because a shared tree shows the run metadata a copy
does not: its entries' inode numbers, birth and change times are those of the state's
materialised tree. Those tell when the state was made (states made later, candidates added
to a panel after the first replay, say, look younger than the environment), and, within
the tree, which files the state's patch wrote after the rest was copied (born last, higher
inode numbers): a run could tell the buggy program (no such file) from a patched state. A
copy gives every entry the run's own fresh metadata. So layering is for suites one trusts
(one's own, the bundled ones) or where the cost matters more than this; the hidden-panel
default stays the copy. Access times are settled once per process; a copying reader of the
same tree (a build, fast mode) moves them again under relatime.

Failure contract: `available()` probes once per process by mounting a layer over a scratch
tree; when anything is missing it says why at debug level and every fill copies as before.
`discard(ws)` is the only way a workspace goes: it detaches the mounts under it (and under
its layer) before removing files, so a removal never reaches through an overlay into the
state's tree (it could not write there anyway: the lower mount is read-only), and removes
them with removal.remove_tree, which raises RemovalError when something stays.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import logging
import os
import re
import shutil
import struct
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from testprism.tasks.model.removal import RemovalError, remove_tree

log = logging.getLogger(__name__)

#: the switch: `1` layers programs where the machine can; anything else copies (the default)
SETTING = "TESTPRISM_LAYERED"

_SYS_OPEN_TREE, _SYS_MOVE_MOUNT, _SYS_MOUNT_SETATTR = 428, 429, 442  # x86_64 and aarch64 alike
_OPEN_TREE_CLONE, _OPEN_TREE_CLOEXEC = 1, 0o2000000
_AT_FDCWD, _AT_EMPTY_PATH, _AT_RECURSIVE = -100, 0x1000, 0x8000
_MOVE_MOUNT_F_EMPTY_PATH = 0x4
_MOUNT_ATTR_RDONLY, _MOUNT_ATTR_NOSUID, _MOUNT_ATTR_NODEV, _MOUNT_ATTR_NOATIME = 0x1, 0x2, 0x4, 0x10
_MOUNT_ATTR_ATIME_MASK, _MOUNT_ATTR_IDMAP = 0x70, 0x100000
_MS_NOSUID, _MS_NODEV, _MS_BIND = 0x2, 0x4, 0x1000
_MS_PRIVATE, _MS_SHARED = 1 << 18, 1 << 20
_MNT_DETACH = 2

_libc = ctypes.CDLL(None, use_errno=True)
_settled: set[Path] = set()
_settle_lock = threading.Lock()


class LayerUnavailable(OSError):
    """A layer could not be mounted: the caller copies the tree instead."""


def _check(result: int, what: str) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise LayerUnavailable(code, f"{what}: {os.strerror(code)}")
    return result


def _mount(source: str | None, target: Path, fstype: str | None, flags: int, options: str | None) -> None:
    _check(_libc.mount(source.encode() if source else None, str(target).encode(),
                       fstype.encode() if fstype else None, ctypes.c_ulong(flags),
                       options.encode() if options else None), f"mount {target}")


def _user_namespace(uid: int) -> int:
    """An fd of a user namespace mapping uid and gid 0 to `uid` (what an idmapped mount
    takes): a short-lived `unshare --user` child holds it while the maps are written."""
    child = subprocess.Popen(["unshare", "--user", "sleep", "60"], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        ours, deadline = os.readlink("/proc/self/ns/user"), time.monotonic() + 5
        while os.readlink(f"/proc/{child.pid}/ns/user") == ours:
            if child.poll() is not None or time.monotonic() > deadline:
                raise LayerUnavailable(errno.ENOSYS, "unshare --user did not make a user namespace")
            time.sleep(0.0005)
        for name in ("uid_map", "gid_map"):
            with open(f"/proc/{child.pid}/{name}", "w") as fh:
                fh.write(f"0 {uid} 1\n")
        return os.open(f"/proc/{child.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        child.kill()
        child.wait()


def _idmapped_view(tree: Path, target: Path, uid: int) -> None:
    """Mount `tree` at `target` read-only, noatime, with uid 0 shown as `uid`."""
    userns = _user_namespace(uid)
    try:
        fd = _check(_libc.syscall(_SYS_OPEN_TREE, _AT_FDCWD, str(tree).encode(),
                                  _OPEN_TREE_CLONE | _OPEN_TREE_CLOEXEC | _AT_RECURSIVE), "open_tree")
        try:
            attr = (_MOUNT_ATTR_IDMAP | _MOUNT_ATTR_RDONLY | _MOUNT_ATTR_NOSUID | _MOUNT_ATTR_NODEV
                    | _MOUNT_ATTR_NOATIME)
            # struct mount_attr {attr_set, attr_clr, propagation, userns_fd}; an atime mode is
            # set only with the whole atime field cleared
            mount_attr = ctypes.create_string_buffer(struct.pack("QQQQ", attr, _MOUNT_ATTR_ATIME_MASK, _MS_PRIVATE,
                                                                 userns))
            _check(_libc.syscall(_SYS_MOUNT_SETATTR, fd, b"", _AT_EMPTY_PATH | _AT_RECURSIVE,
                                 mount_attr, 32), "mount_setattr (idmap)")
            _check(_libc.syscall(_SYS_MOVE_MOUNT, fd, b"", _AT_FDCWD, str(target).encode(),
                                 _MOVE_MOUNT_F_EMPTY_PATH), "move_mount")
        finally:
            os.close(fd)
    finally:
        os.close(userns)


def layer_folder(ws: Path) -> Path:
    """Where a workspace's upper layer lives: beside it, outside what a sandbox binds."""
    return ws.with_name(ws.name + ".layer")


def _settle(tree: Path, mtime: int) -> None:
    """Give the state's tree the settled times once per process (a copy used to get them
    from the fill's walk); the tree is the harness's own, and links are never followed."""
    with _settle_lock:
        if tree in _settled:
            return
        times = (mtime, mtime)
        for dirpath, dirnames, filenames in os.walk(tree, topdown=False):
            for name in dirnames + filenames:
                os.utime(os.path.join(dirpath, name), times, follow_symlinks=False)
        os.utime(tree, times)
        _settled.add(tree)


def mount_program(tree: Path, ws: Path, uid: int, mtime: int, size_mb: int) -> None:
    """Make `ws/program` the overlay of `tree` (seen as owned by `uid`) under a fresh
    upper layer of at most `size_mb` MiB. Raises LayerUnavailable, leaving nothing mounted,
    when it cannot (any OSError on the way is one)."""
    ws = Path(os.path.realpath(ws))  # as /proc/self/mountinfo spells it, so discard finds it
    layer = layer_folder(ws)
    if any(c in str(layer) for c in ",:\\"):  # overlayfs's option syntax (only the layer's paths are in it)
        raise LayerUnavailable(errno.EINVAL, f"{layer}: a layer's path may not hold , : or \\")
    program = ws / "program"
    try:
        _settle(tree, mtime)
        layer.mkdir()
        program.mkdir()
    except OSError as exc:
        shutil.rmtree(layer, ignore_errors=True)
        raise LayerUnavailable(exc.errno or errno.EIO, f"layer of {ws.name}: {exc}") from exc
    try:
        _mount("tmpfs", layer, "tmpfs", _MS_NOSUID | _MS_NODEV, f"size={max(1, size_mb)}m,mode=0700")
        _mount(None, layer, None, _MS_PRIVATE, None)  # never propagated to a peer of the host's mounts
        lower, upper, work = layer / "lower", layer / "upper", layer / "work"
        for folder in (lower, upper, work):
            folder.mkdir()
        os.chown(upper, uid, uid)
        os.utime(upper, (mtime, mtime))  # the merged root's times are the upper's
        _idmapped_view(tree, lower, uid)
        _mount("overlay", program, "overlay", _MS_NOSUID | _MS_NODEV,
               f"lowerdir={lower},upperdir={upper},workdir={work}")
    except BaseException as exc:
        unmount_under(layer)
        unmount_under(program)
        program.rmdir()  # the caller copies the tree there instead
        shutil.rmtree(layer, ignore_errors=True)
        if isinstance(exc, OSError) and not isinstance(exc, LayerUnavailable):
            raise LayerUnavailable(exc.errno or errno.EIO, f"layer of {ws.name}: {exc}") from exc
        raise


def added_entries(ws: Path) -> list[str]:
    """The entries (relative to `program/`) the fill put in the upper layer: all the fill
    has to hand over. Whiteouts (what a patch deleted) are not entries of the tree."""
    upper = layer_folder(ws) / "upper"
    found = []
    for dirpath, dirnames, filenames in os.walk(upper):
        for name in dirnames + filenames:
            found.append(os.path.relpath(os.path.join(dirpath, name), upper))
    return found


def share_workspace(ws: Path) -> None:
    """Make the (empty) workspace a mount of its own with shared propagation, so that a
    program layer mounted after a pre-started container bound it (`rslave`) appears inside:
    private first, so that it is a peer group of its own even where the host's `/` is
    shared (systemd's default), and its layers reach no other namespace. A workspace that
    is a mount already (a bounded one: workspace.bound_workspace) is shared as it is: a bind
    stacked on it would leave the engine judging propagation by the mount below (docker
    refuses `rslave` on "a mount that is not shared or slave")."""
    ws = Path(os.path.realpath(ws))
    try:
        if not os.path.ismount(ws):
            _mount(str(ws), ws, None, _MS_BIND, None)
        _mount(None, ws, None, _MS_PRIVATE, None)
        _mount(None, ws, None, _MS_SHARED, None)
    except LayerUnavailable:
        unmount_under(ws)
        raise


def _mounts_under(path: Path) -> list[bytes]:
    """Mount points at or below `path` (its real path: mountinfo spells every point so),
    as bytes with mountinfo's octal escapes (space, tab, newline, backslash) undone."""
    prefix = os.fsencode(os.path.realpath(path))
    found = []
    with open("/proc/self/mountinfo", "rb") as fh:
        for line in fh:
            point = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m.group(1), 8)]), line.split()[4])
            if point == prefix or point.startswith(prefix + b"/"):
                found.append(point)
    return sorted(found, key=lambda p: p.count(b"/"), reverse=True)


def unmount_under(path: Path) -> None:
    """Detach every mount at or below `path`, deepest first."""
    for point in _mounts_under(path):
        if _libc.umount2(point, _MNT_DETACH) < 0:
            code = ctypes.get_errno()
            if code not in (errno.EINVAL, errno.ENOENT):
                log.warning("could not unmount %s: %s", os.fsdecode(point), os.strerror(code))


def discard(ws: Path) -> None:
    """Remove a workspace and its layer, mounts first. Removal is removal.remove_tree's
    (iterative, never through a link, whatever depth or modes the run left): both are
    tried, and the first failure is raised as RemovalError for the backend to make that
    run's sandbox_error, rather than swallowed with the workspace left on disk."""
    ws = Path(os.path.realpath(ws))
    layer = layer_folder(ws)
    if os.geteuid() == 0:
        unmount_under(ws)
        unmount_under(layer)
    failures = []
    for path in (ws, layer):
        try:
            remove_tree(path)
        except RemovalError as exc:
            failures.append(exc)
    if failures:
        raise failures[0]


def available() -> bool:
    """Whether programs are layered: asked for (`$TESTPRISM_LAYERED=1`, read at every fill,
    so one process can measure both ways) and the machine able to (`_probe`)."""
    return os.environ.get(SETTING, "0") == "1" and _probe()


@functools.cache
def _probe() -> bool:
    """Root, and a probe layer over a scratch tree mounted, seen as the run's, written, and
    its lower left unchanged: once per process."""
    if os.geteuid() != 0:
        log.debug("layered workspaces: not root; every run copies its state's tree")
        return False
    scratch = Path(tempfile.mkdtemp(prefix="testprism-layer-probe-"))
    try:
        tree, ws = scratch / "tree", scratch / "ws"
        tree.mkdir()
        (tree / "f").write_text("lower\n")
        ws.mkdir()
        mount_program(tree, ws, 200_001, 1_600_000_000, 16)
        seen = (ws / "program" / "f").stat().st_uid
        (ws / "program" / "f").write_text("upper\n")
        ok = seen == 200_001 and (tree / "f").read_text() == "lower\n"
        if not ok:
            log.debug("layered workspaces: the probe layer did not behave as a copy")
        return ok
    except OSError as exc:
        log.debug("layered workspaces unavailable: %s; every run copies its state's tree", exc)
        return False
    finally:
        discard(scratch / "ws")
        shutil.rmtree(scratch, ignore_errors=True)
