"""A run's `program/` as the state's tree shared read-only under a writable layer of the run's own.

Copying a state's tree into every run's workspace costs per entry, not per byte: a built Go
module (344 files and 258 folders, mostly its build cache) took 0.13 s to copy on this
machine's disk when it was quiet and up to 0.6 s when runs were writing beside it, against
4 ms for a Python instance's dozen files. So, where the harness is root and the kernel can
(`mode`), `program/` is an overlay instead of a copy:

- the lower layer is, by default (`image`), the state's tree as a read-only EROFS image
  (tasks/sandbox/tree_image.py: built once per state, mounted afresh for each run over
  the image file brought whole into the page cache) whose metadata follows the tree's
  structure alone; with `TESTPRISM_LAYERED=tree`, the state's tree itself. Either is attached through an **idmapped** mount
  (mount_setattr with MOUNT_ATTR_IDMAP, Linux 5.12+; overlayfs over idmapped layers, 5.19+)
  that shows the harness's files (uid 0) as the run's uid, and that is read-only and
  noatime. The run owns the tree it sees, as it owns a copy (chmod works, git's ownership
  check passes), and the state's tree cannot be written through it, not even by the harness;
- the upper layer and overlayfs's work folder are on a tmpfs of the run's own, mounted
  beside the workspace (`<workspace>.layer`), never inside what the sandbox binds: whatever
  the run writes, renames or deletes lands there, and goes with it. On a tmpfs because a
  tool that touches what it reads makes the kernel copy each such file up: Go marks every
  build-cache entry it uses (an mtime over an hour old, as the settled times all are), 335
  files a run, which cost as much as the copy on disk (+0.3 s) and little in memory; in a
  tree the host's Go 1.26 built (its standard library compiled in) 933 files, 57 MB, the
  most of a local Go run's ~70 ms overhead (all 1,025 touched: 0.10 s). The tmpfs is as large as the
  run's memory limit: what a run writes to its program is bounded (a copy on disk had no
  bound but the disk), and under docker it counts against the container's memory. Its
  inode numbers come from a counter of its own, so the same fill gives the same numbers;
- the overlay is mounted with `xino=on` (one device number for every entry, the overlay's,
  and inode numbers made from each layer's) and with options that name the layer's folders
  through /proc/self/fd (`_overlay`): the run's mount table shows neither the work area's
  paths nor the workspace's name.

One difference from a copy is visible: `program/` itself is a mount point, so a run cannot
rename or remove that one folder (EBUSY); everything in it is the run's to change. A state's
build step, which may replace it, gets a copy (workspace.py).

What the run sees of its state's entries, by mode (tests/test_hidden_panel.py compares them
between states):
- `image` (the default): inode numbers that follow the tree's structure, access,
  modification and change times all SETTLED_MTIME, no birth time, root's ownership idmapped:
  two states whose trees differ only in content look alike entry for entry, and nothing
  tells when a state was made. A tree that is not a finished work-area tree (build_once's
  `.ready` beside it: a test's scratch folder, a user's folder) has no image and is copied.
- `tree`: the state's materialised tree itself, whose inode numbers, birth and change times
  tell when the state was made and which files its patch wrote after the rest was copied
  (born last): a run can tell the buggy program from a patched state. For suites one
  trusts, and as the hidden-panel test's control. It gets the settled times once per process
  (`_settle`); a copying reader of the same tree (a build, fast mode) moves its access
  times again under relatime.
- `copy` (`TESTPRISM_LAYERED=0`, or the fallback): every entry the run's own fresh metadata.
After the lower, a fill touches only what it adds (the suite's files, what its test patch
changes): `added_entries` lists them from the upper layer.

Failure contract: `mode()` probes each kind once per process by mounting a layer over a
scratch tree; when anything is missing it logs one warning with why, every fill copies, and
rows' `isolation` says `+copy` (`isolation_label`). `discard(ws)` is the only way a
workspace goes: it detaches the mounts under it (and under its layer) before removing
files, so a removal never reaches through an overlay into the state's tree (it could not
write there anyway: the lower mount is read-only), and removes them with
removal.remove_tree, which raises RemovalError when something stays.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import functools
import logging
import os
import re
import resource
import shutil
import struct
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from testprism.tasks.model.removal import RemovalError, remove_tree
from testprism.tasks.sandbox import tree_image

log = logging.getLogger(__name__)

#: the switch (`mode`): unset, the image layer where the machine can; `tree`, the old layer; `0`, a copy
SETTING = "TESTPRISM_LAYERED"

_SYS_OPEN_TREE, _SYS_MOVE_MOUNT, _SYS_MOUNT_SETATTR = 428, 429, 442  # x86_64 and aarch64 alike
_OPEN_TREE_CLONE, _OPEN_TREE_CLOEXEC = 1, 0o2000000
_AT_FDCWD, _AT_EMPTY_PATH, _AT_RECURSIVE = -100, 0x1000, 0x8000
_MOVE_MOUNT_F_EMPTY_PATH = 0x4
_MOUNT_ATTR_RDONLY, _MOUNT_ATTR_NOSUID, _MOUNT_ATTR_NODEV, _MOUNT_ATTR_NOATIME = 0x1, 0x2, 0x4, 0x10
_MOUNT_ATTR_ATIME_MASK, _MOUNT_ATTR_IDMAP = 0x70, 0x100000
#: mount(2)'s flags, declared here for every module that mounts (workspace, warm states)
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REMOUNT = 0x1, 0x2, 0x4, 0x8, 0x20
_MS_BIND, _MS_REC = 0x1000, 0x4000
_MS_PRIVATE, _MS_SLAVE, _MS_SHARED = 1 << 18, 1 << 19, 1 << 20
_MNT_DETACH = 2

_libc = ctypes.CDLL(None, use_errno=True)
_settled: set[Path] = set()
_settle_lock = threading.Lock()
_overlay_lock = threading.Lock()
#: the descriptor number that names a layer's folders in the overlay's options (_overlay),
#: held by this process from its first layer on (_options_fd)
_OPTIONS_FD = 1000
_held_fd: int | None = None


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


def _idmapped_view(tree: Path | int, target: Path, uid: int) -> None:
    """Mount `tree` at `target` read-only, noatime, with uid 0 shown as `uid`. `tree` is a
    folder (cloned here) or the descriptor of a detached mount to attach (an image's:
    tree_image.lower_mount), which this closes."""
    if isinstance(tree, int):
        fd = tree
    else:
        fd = _check(_libc.syscall(_SYS_OPEN_TREE, _AT_FDCWD, str(tree).encode(),
                                  _OPEN_TREE_CLONE | _OPEN_TREE_CLOEXEC | _AT_RECURSIVE), "open_tree")
    try:
        userns = _user_namespace(uid)
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
            os.close(userns)
    finally:
        os.close(fd)


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


def mount_program(tree: Path, ws: Path, uid: int, mtime: int, size_mb: int, kind: str | None = None) -> None:
    """Make `ws/program` the overlay of `tree` (seen as owned by `uid`) under a fresh
    upper layer of at most `size_mb` MiB: of `kind` (default `mode()`), `image` over the
    tree's image (tree_image.py), `tree` over the tree itself. Raises LayerUnavailable, leaving
    nothing mounted, when it cannot (any OSError on the way is one, ImageUnavailable too)."""
    ws = Path(os.path.realpath(ws))  # as /proc/self/mountinfo spells it, so discard finds it
    layer = layer_folder(ws)
    program = ws / "program"
    lower_source: Path | int = -1  # a descriptor stays ours to close until attached
    try:
        if (kind or mode()) == "image":
            lower_source = tree_image.lower_mount(tree_image.image_of(tree, mtime))
        else:
            _settle(tree, mtime)
            lower_source = tree
        layer.mkdir()
        program.mkdir()
    except OSError as exc:
        _close(lower_source)
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
        _idmapped_view(lower_source, lower, uid)
        lower_source = -1
        _overlay(layer, program)
    except BaseException as exc:
        _close(lower_source)
        unmount_under(layer)
        unmount_under(program)
        program.rmdir()  # the caller copies the tree there instead
        shutil.rmtree(layer, ignore_errors=True)
        if isinstance(exc, OSError) and not isinstance(exc, LayerUnavailable):
            raise LayerUnavailable(exc.errno or errno.EIO, f"layer of {ws.name}: {exc}") from exc
        raise


def _close(source: Path | int) -> None:
    if isinstance(source, int) and source >= 0:
        os.close(source)


def _overlay(layer: Path, program: Path) -> None:
    """Mount the overlay of `layer`'s lower, upper and work folders at `program`.

    Its options are in the run's /proc/self/mountinfo, and the overlay keeps them as given:
    the layer's path would show the run its workspace's name (this process's run counter),
    so the folders are named through /proc/self/fd/<n>, where n is one number this process
    reserved for it (`_options_fd`), pointed at the layer under a lock while the overlay is
    mounted. Not the lowest free number: that follows how many descriptors the harness holds
    at the moment (other runs' pipes, the engine's sockets), which differed between one
    state's run and the next in a long session. `xino=on`: every entry, lower or upper,
    shows the overlay's own device number and an inode number made from its layer's, so
    neither the image's device nor the work area's disk is seen."""
    with _overlay_lock:
        named = _options_fd()
        fd = os.open(layer, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.dup2(fd, named, inheritable=False)
        finally:
            os.close(fd)
        try:
            at = f"/proc/self/fd/{named}"
            _mount("overlay", program, "overlay", _MS_NOSUID | _MS_NODEV,
                   f"lowerdir={at}/lower,upperdir={at}/upper,workdir={at}/work,xino=on")
        finally:
            _point_at_root(named)  # the layer's tmpfs is not held past its run


def _options_fd() -> int:
    """The descriptor number _overlay names layers by: reserved once per process (pointing
    at `/` between mounts), from _OPTIONS_FD up (below the process's descriptor limit), so
    it is the same number for every run, whatever else the harness opens and closes."""
    global _held_fd
    if _held_fd is None:
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        start = _OPTIONS_FD if soft == resource.RLIM_INFINITY else min(_OPTIONS_FD, soft - 1)
        root = os.open("/", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            _held_fd = fcntl.fcntl(root, fcntl.F_DUPFD_CLOEXEC, start)
        finally:
            os.close(root)
    return _held_fd


def _point_at_root(named: int) -> None:
    root = os.open("/", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.dup2(root, named, inheritable=False)
    finally:
        os.close(root)


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


def mode() -> str:
    """How runs get their program now (`$TESTPRISM_LAYERED`, read at every fill, so one
    process can measure every way): `image` (the default: a layer over the state's image,
    tree_image.py), `tree` (`=tree`: a layer over the state's tree itself, which shows its
    inode numbers and birth times: for suites one trusts, and the hidden-panel test's
    control) or `copy` (`=0`, or where the machine cannot layer: the fallback, said once
    per process with why)."""
    asked = os.environ.get(SETTING, "image")
    if asked == "0":
        return "copy"
    kind = "tree" if asked == "tree" else "image"
    return kind if _probe(kind) else "copy"


def available() -> bool:
    """Whether programs are layered now (`mode`)."""
    return mode() != "copy"


def isolation_label() -> str:
    """What a row's `isolation` adds for how its program was given: nothing for the image
    (the default), `+copy`, `+tree-layer`."""
    return {"image": "", "copy": "+copy", "tree": "+tree-layer"}[mode()]


@functools.cache
def _probe(kind: str) -> bool:
    """Root, and a probe layer of `kind` over a scratch tree mounted, seen as the run's,
    with the settled times, written, and its lower left unchanged: once per process and
    kind. A failure is the fallback to copying, logged once with why."""
    if os.geteuid() != 0:
        log.warning("programs are copied into every workspace (the fallback to %s layers): not root", kind)
        return False
    scratch = Path(tempfile.mkdtemp(prefix="testprism-layer-probe-"))
    try:
        tree, ws = scratch / "state" / "tree", scratch / "ws"
        tree.mkdir(parents=True)
        (tree / "f").write_text("lower\n")
        (scratch / "state" / ".ready").touch()  # a finished tree, as build_once leaves one
        ws.mkdir()
        mount_program(tree, ws, 200_001, 1_600_000_000, 16, kind)
        seen = (ws / "program" / "f").stat()
        (ws / "program" / "f").write_text("upper\n")
        if (seen.st_uid, seen.st_mtime) != (200_001, 1_600_000_000) or (tree / "f").read_text() != "lower\n":
            raise LayerUnavailable(errno.EINVAL, "the probe layer did not behave as a copy")
        return True
    except OSError as exc:
        log.warning("programs are copied into every workspace (the fallback to %s layers): %s", kind, exc)
        return False
    finally:
        discard(scratch / "ws")
        shutil.rmtree(scratch, ignore_errors=True)
