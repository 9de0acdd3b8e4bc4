"""An image's root filesystem on the host, for the `local` backend: exported once per image
id (`docker export` of a created container: the image's layers merged), extracted without
device files or FIFOs (skipped), with setuid/setgid/sticky bits and group/other write
dropped (never honoured), every entry owned by the harness (root), symbolic links kept as
the image has them (they resolve inside the sandbox's root; nothing on the host follows
them). Beside it, `image.json`: the image's configuration, so a run needs no engine.

What the local backend binds (bubblewrap), so that a run sees the image as `docker` does:
`--ro-bind ROOT /` (read-only; the image's own copy of the program stays under the
workspace bound over it), `--proc /proc`, `--dev /dev`, `--tmpfs /tmp` (and `/var/tmp`,
`/dev/shm`), the run's workspace `--bind WORKSPACE <program_in_image>`, `--chdir` the
image's `workdir` (else program_in_image), its `env` under the harness's own variables, and
its `user` as the uid the sandbox's unprivileged uid is mapped to in the run's user
namespace (local.py `_image_user`: no capability, so no privilege with it).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from testprism.tasks.model.workdir import WorkPaths, build_once
from testprism.tasks.sandbox.base import SandboxError
from testprism.tasks.sandbox.docker.engine import _errors
from testprism.tasks.sandbox.environment import EnvironmentBuildError
from testprism.tasks.sandbox.image.program import created_container, images_root
from testprism.tasks.sandbox.image.resolve import ImageConfig
from testprism.tasks.sandbox.image.untar import UnsafeArchive, extract_stream

if TYPE_CHECKING:
    from docker import APIClient

log = logging.getLogger(__name__)

#: bound on an exported root filesystem's tar stream
ROOTFS_MAX_BYTES = 64 * 1024**3


def _folder(image_id: str, work: WorkPaths) -> Path:
    return images_root(work) / "roots" / image_id.removeprefix("sha256:")


def exported_root(api: APIClient, image: ImageConfig, work: WorkPaths) -> Path:
    """The host folder holding `image`'s root filesystem, exported once by id (safe across
    processes: build_once). Raises EnvironmentBuildError when the export holds an entry the
    extraction refuses (a name out of the tree), SandboxError when the engine breaks."""

    def export(folder: Path) -> None:
        errors = _errors()
        root = folder / "rootfs"
        root.mkdir(mode=0o755)
        with created_container(api, image.id) as container:
            try:
                done = extract_stream(api.export(container), root, limit=ROOTFS_MAX_BYTES, special="skip",
                                      any_symlink=True)
            except UnsafeArchive as exc:
                raise EnvironmentBuildError(f"environment.image: the root filesystem of {image.name} "
                                            f"({image.id}): {exc}") from exc
            except errors.APIError as exc:
                raise SandboxError(f"docker: cannot export image {image.name}: {exc}") from exc
        root.chmod(0o755)
        (folder / "image.json").write_text(json.dumps({"name": image.name, "id": image.id, "workdir": image.workdir,
                                                       "user": image.user, "env": image.env}))
        log.info("exported the root filesystem of image %s (%s): %d entries, %.0f MB; %d device files or FIFOs "
                 "left out, %d setuid/setgid/sticky modes dropped", image.name, image.id[:19], done.entries,
                 done.bytes / 1e6, done.skipped_special, done.stripped_modes)

    return build_once(_folder(image.id, work), export) / "rootfs"


def exported_config(image_id: str, work: WorkPaths) -> ImageConfig:
    """The configuration saved beside an exported root (no engine needed)."""
    data = json.loads((_folder(image_id, work) / "image.json").read_text())
    return ImageConfig(name=data["name"], id=data["id"], workdir=data["workdir"], user=data["user"],
                       env=tuple((k, v) for k, v in data["env"]))
