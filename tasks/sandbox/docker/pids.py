"""Whether a container reached its process limit (`pids_limit`): a run that did is
`E`/`process_limit` (`ExecResult.limit`), as under the local backend, whose run cgroup
counts refused forks (tasks/sandbox/cgroup.py `limit_hit`).

The container's own pids cgroup counts them too (`pids.events`), but it cannot be read
after the run: runc removes it when the container exits, before the engine reports the
exit (`wait` returns when it is gone); cgroup v1 does not notify that file (an inotify
watch on it saw nothing while its count rose), and the engine's stats carry the current
count, not a peak. So a watched container is created under a parent cgroup of its own
(`cgroup_parent`, which runc makes in every hierarchy), one that outlives it: the
parent's `pids.peak` is the most tasks the container held at once, and one that held
`pids_limit` of them was at its limit (the kernel refuses the next fork). Local counts
refused forks, this the limit reached: a run that held exactly its limit and forked no
more reads as having hit it. The parent goes with the container (`remove`); `sweep`
removes those of harness processes that are gone (named as workspaces are).

Only where the parent can be read: an engine on this host with the cgroupfs driver (the
systemd driver takes a slice it makes itself), its cgroup version's mounts seen here from
their root; elsewhere (`watchable` None, one warning) a run at its limit stays as its
exit says. Parents at the root make containers peers of the local backend's run cgroups
(each its own CPU share), where under the engine's `/docker` they shared one.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import secrets
from pathlib import Path

from testprism.storage.owner import alive
from testprism.tasks.model.workdir import workspace_prefix
from testprism.tasks.sandbox.cgroup import _cgroup_mounts

log = logging.getLogger(__name__)

KIND = "docker"  # the parents' names: `docker-<pid>.<start>-<token>`, swept as workspaces are


def watchable(info: dict) -> str | None:
    """The cgroup version ("1", "2") of the engine described by `info` (its `/info`) when
    its containers can be watched from here, else None."""
    if info.get("CgroupDriver") != "cgroupfs":
        log.warning("docker: the engine's cgroup driver is %s, not cgroupfs: a run at its process limit is "
                    "not reported as process_limit", info.get("CgroupDriver"))
        return None
    version = str(info.get("CgroupVersion", "1"))
    if _folders(version) is None:
        log.warning("docker: the engine's cgroup hierarchy is not seen from its root here: a run at its "
                    "process limit is not reported as process_limit")
        return None
    return version


def new_parent() -> str:
    """A name for a container's parent cgroup (runc makes it): `cgroup_parent` is `/` + it."""
    return workspace_prefix(KIND) + secrets.token_hex(6)


def reached(version: str, parent: str, limit: int) -> bool:
    """Whether the container under `parent` held `limit` tasks at once (False when the
    kernel keeps no peak: before Linux 6.x)."""
    folders = _folders(version)
    assert folders is not None
    return _peak(folders[0] / parent) >= limit


def remove(version: str, parent: str) -> None:
    """Remove a container's parent in every hierarchy (the container removed first): what
    will not go is left to `sweep`."""
    for root in _folders(version) or ():
        try:
            (root / parent).rmdir()
        except FileNotFoundError:
            pass
        except OSError as exc:
            log.debug("docker: parent cgroup %s stays for the sweep: %s", root / parent, exc)


def sweep() -> int:
    """Remove the parents of harness processes that are gone; returns how many went."""
    roots = _folders("1") or _folders("2") or ()
    names: set[str] = set()
    for root in roots:
        with contextlib.suppress(OSError):
            names |= {p.name for p in root.iterdir() if p.is_dir() and p.name.startswith(f"{KIND}-")}
    gone = sorted(n for n in names if not alive(n.removeprefix(f"{KIND}-").partition("-")[0]))
    for name in gone:
        for root in roots:
            with contextlib.suppress(OSError):
                (root / name).rmdir()
    return len(gone)


def _peak(folder: Path) -> int:
    try:
        return int((folder / "pids.peak").read_text())
    except (OSError, ValueError):
        return 0


@functools.cache
def _folders(version: str) -> tuple[Path, ...] | None:
    """Where runc makes a container's parent: the root folder of every cgroup hierarchy
    mounted here (v1's and, on a hybrid host, v2's too), the pids one of `version` ("1",
    "2") first (where the peak is read); None when that one is not mounted or shows less
    than its hierarchy's root (this process in a cgroup namespace)."""
    mounts = [(kind, point, root, options) for kind, point, root, options in _cgroup_mounts()]
    pids = [point for kind, point, root, options in mounts
            if root == "/" and (kind == "cgroup2" if version == "2" else kind == "cgroup" and "pids" in options)]
    if not pids or not os.path.isdir(pids[0]):
        return None
    return (pids[0], *(point for _, point, root, _ in mounts if point != pids[0] and root == "/"))
