"""A state's tree as a read-only EROFS image whose metadata says nothing but its content.

A layered program (tasks/sandbox/layer.py) used to show the run its state's materialised
tree through a bind: the inode numbers, birth and change times of the work area's disk,
which tell when the state was made and which files its patch wrote (born last). The image
shows instead, for every entry, metadata that follows the tree's *structure* alone:

- **times**: every inode is a compact one (`-E force-inode-compact`), which has no time of
  its own: atime, mtime and ctime are all the superblock's build time, fixed at
  `mtime` (SETTLED_MTIME, as a copy's entries get); there is no birth time (statx reports
  none, as for any EROFS);
- **owner**: root (`--all-root`), shown as the run's uid through an idmapped mount;
- **inode numbers** (EROFS "nids": an inode's offset in the metadata area / 32): with no
  data inlined after an inode (`-E noinline_data`: file tails, directories and link targets
  go to data blocks) every inode is 32 bytes, so a nid depends on how many entries come
  before it in mkfs's walk (sorted by name, folder after folder), not on any size: two trees
  differing only in a file's content get the same nids (measured: a 6-byte file grown to
  5000 bytes, a link target from 1 to 89 bytes, an empty file filled);
- **link counts and listing order**: the tree's (a folder's entries sorted by name);
- no xattrs (`-x-1`), a fixed filesystem UUID.

Why EROFS and not squashfs, which gives the same metadata guarantees (`-all-time`,
`-all-root`, inode numbers from a counter in scan order): squashfs mounts only from a block
device, so every state would hold a loop device, whose number (visible to a container in
/sys/block, with the image's path in `loop/backing_file`) grows with each state mounted,
and loop devices are a machine-wide pool. EROFS mounts straight from a file (Linux 6.12+,
CONFIG_EROFS_FS_BACKED_BY_FILE): no loop device, nothing in /sys/block. Building costs about
the same (1,501 entries, 54 MB: mkfs.erofs 1.9 s, mksquashfs uncompressed 1.5 s, `cp -a`
0.9 s, on this machine under load), once per state instead of once per run.

Each image is built once beside its tree (`<tree>.erofs`, under the build's lock, synced and
renamed into place when whole), only for a tree that build_once finished (`.ready` beside
it): such a tree is content-keyed and never changes afterwards, so its image never goes
stale. Each run gets a mount of its own, detached (fsmount: attached nowhere until the run's
layer attaches it, gone with the run's mounts, nothing left mounted after a crash), and so
a superblock of its own: what one run of a state read is not in the next one's caches
(mincore through its overlay finds none of it). Every mount of an image reads through the
image file's pages in the host's page cache, which all runs of the state share: before each
mount they are all brought in (`_warm`), so that none tells which blocks an earlier run read
(its state ran before: a confirmation replay, issue 26's channel; or a message). The cost:
the image stays in memory while its state runs, and a run's first read of a file copies it
from there (a kept, shared mount had it already).
Through the run's overlay (`xino=on`) every entry shows the overlay's own device number,
so neither the image's anonymous device nor its mount order is visible.
"""

from __future__ import annotations

import ctypes
import logging
import mmap
import os
import shutil
import subprocess
import threading
from pathlib import Path

from testprism.tasks.model.workdir import locked

log = logging.getLogger(__name__)

#: an image is built beside its tree under this suffix
SUFFIX = ".erofs"
#: a fixed UUID: mkfs.erofs draws one per image otherwise
_UUID = "6c1d5c2e-0000-4000-8000-000000000000"
#: a state's image build is bounded (a tree is at most what a patch and a build step made)
BUILD_TIMEOUT_S = 600

_SYS_FSOPEN, _SYS_FSCONFIG, _SYS_FSMOUNT = 430, 431, 432  # x86_64 and aarch64 alike
_FSOPEN_CLOEXEC, _FSMOUNT_CLOEXEC = 0x1, 0x1
_FSCONFIG_SET_STRING, _FSCONFIG_CMD_CREATE = 1, 6
_MOUNT_ATTR_RDONLY, _MOUNT_ATTR_NOSUID, _MOUNT_ATTR_NODEV, _MOUNT_ATTR_NOATIME = 0x1, 0x2, 0x4, 0x10
_MADV_POPULATE_READ = 22  # Linux 5.14+; Python 3.11's mmap module does not name it

_libc = ctypes.CDLL(None, use_errno=True)
_failed: dict[Path, str] = {}


class ImageUnavailable(OSError):
    """No image for this tree (not a finished work-area tree, or mkfs.erofs failed on it)."""


def _check(result: int, what: str) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")
    return result


def image_of(tree: Path, mtime: int) -> Path:
    """The image of `tree`, built once beside it with every time `mtime`. Raises
    ImageUnavailable for a tree that build_once did not finish (a test's scratch tree, a
    user's folder: it may still change) or that mkfs.erofs refuses (said once per tree)."""
    tree = Path(os.path.realpath(tree))
    image = tree.with_name(tree.name + SUFFIX)
    if image.exists():
        return image
    if not (tree.parent / ".ready").exists():
        raise ImageUnavailable(f"{tree} is not a finished work-area tree")
    if tree in _failed:
        raise ImageUnavailable(_failed[tree])
    with locked(tree.with_name(tree.name + SUFFIX + ".lock")):
        if not image.exists():
            _build(tree, image, mtime)
    return image


def _build(tree: Path, image: Path, mtime: int) -> None:
    partial = image.with_name(f".{image.name}.{os.getpid()}.{threading.get_ident()}")
    argv = [shutil.which("mkfs.erofs") or "mkfs.erofs", "--quiet", f"-T{mtime}", "--all-root", "-x-1",
            "-Enoinline_data,force-inode-compact", "-U", _UUID, str(partial), str(tree)]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=BUILD_TIMEOUT_S, stdin=subprocess.DEVNULL)
        failure = None if done.returncode == 0 else (done.stderr or done.stdout).decode(errors="replace").strip()[-300:]
    except (OSError, subprocess.TimeoutExpired) as exc:
        failure = str(exc)
    if failure is not None:
        partial.unlink(missing_ok=True)
        _failed[tree] = f"mkfs.erofs could not image {tree}: {failure}"
        log.warning("%s; its runs copy the tree", _failed[tree])
        raise ImageUnavailable(_failed[tree])
    partial.chmod(0o600)  # the harness's own: no run reads it as a file
    fd = os.open(partial, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)  # on the disk whole before its name says it is: a crash leaves no torn image
    finally:
        os.close(fd)
    os.rename(partial, image)


def lower_mount(image: Path) -> int:
    """A descriptor of a fresh detached mount of `image` (read-only, nosuid, nodev,
    noatime), for the caller to idmap and attach (then close): a superblock of the run's
    own, whose caches go with its mount, over an image file held whole in the host's page
    cache (`_warm`), so a run finds nothing of what an earlier run of its state read."""
    _warm(image)
    return _mount_image(image)


def _warm(image: Path) -> None:
    """Bring every page of the image file into the host's page cache (MADV_POPULATE_READ:
    synchronous, a millisecond or so when they are there already). Every mount of the
    image reads its metadata and data through these pages: were only some cached, a run
    could time which, and so tell that its own state ran before (a confirmation replay) or
    read what an earlier run of it marked by reading. Whole, they say nothing, and a run
    cannot drop them (it has no descriptor of the image; they are charged to the harness's
    memory, not to the run's cgroup)."""
    fd = os.open(image, os.O_RDONLY | os.O_CLOEXEC)
    try:
        with mmap.mmap(fd, 0, prot=mmap.PROT_READ) as mapped:
            mapped.madvise(_MADV_POPULATE_READ)
    finally:
        os.close(fd)


def _mount_image(image: Path) -> int:
    context = _check(_libc.syscall(_SYS_FSOPEN, b"erofs", _FSOPEN_CLOEXEC), "fsopen erofs")
    try:
        _check(_libc.syscall(_SYS_FSCONFIG, context, _FSCONFIG_SET_STRING, b"source", os.fsencode(image), 0),
               f"erofs source {image.name}")
        _check(_libc.syscall(_SYS_FSCONFIG, context, _FSCONFIG_CMD_CREATE, None, None, 0),
               f"mount {image.name} (a file-backed EROFS needs Linux 6.12+)")
        attrs = _MOUNT_ATTR_RDONLY | _MOUNT_ATTR_NOSUID | _MOUNT_ATTR_NODEV | _MOUNT_ATTR_NOATIME
        return _check(_libc.syscall(_SYS_FSMOUNT, context, _FSMOUNT_CLOEXEC, attrs), "fsmount")
    finally:
        os.close(context)
