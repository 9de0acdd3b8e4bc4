"""The base image every environment image is built on. No registry is assumed: the
default base image (`testprism-base:bookworm`) is bootstrapped from a Debian root
filesystem when missing (`ensure_base_image`, same as `.ci/base-image`).
`TESTPRISM_DOCKER_BASE` names another."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from testprism.tasks.model.workdir import locked
from testprism.tasks.sandbox.base import SandboxError, SandboxUnavailable
from testprism.tasks.sandbox.docker.engine import LABEL, _errors

if TYPE_CHECKING:
    from docker import APIClient

log = logging.getLogger(__name__)

DEFAULT_BASE = "testprism-base:bookworm"
BASE_PACKAGES = ("python3", "python3-venv", "git", "patch", "ca-certificates")
DEBIAN_MIRROR = "http://deb.debian.org/debian"


def base_image_name(explicit: str | None = None) -> str:
    """The base image: the argument, else DockerSettings' (`$TESTPRISM_DOCKER_BASE`), else the default."""
    from testprism.tasks.sandbox.docker.settings import DockerSettings

    return explicit or DockerSettings().base or DEFAULT_BASE


def cache_dir() -> Path:
    """Where the base root filesystem tarball is cached (`$TESTPRISM_CACHE`)."""
    return Path(os.environ.get("TESTPRISM_CACHE") or "/var/cache/testprism")


def base_tarball() -> Path:
    return cache_dir() / "base" / "rootfs-bookworm.tar.gz"


def ensure_base_image(api: APIClient, name: str) -> dict:
    """Make the base image exist and return its inspection; the same steps as
    `.ci/base-image`: nothing when it exists; else import the cached root filesystem;
    else debootstrap one (root, debootstrap and deb.debian.org needed; minutes), cache it
    and import it. Only the default base is bootstrapped: another name must exist."""
    errors = _errors()
    try:
        return api.inspect_image(name)
    except errors.ImageNotFound:
        pass
    except errors.APIError as exc:
        raise SandboxError(f"docker: cannot inspect base image {name}: {exc}") from exc
    if name != DEFAULT_BASE:
        raise SandboxUnavailable(
            f"base image {name} (TESTPRISM_DOCKER_BASE) is missing: build or load it first, or unset "
            f"TESTPRISM_DOCKER_BASE to use {DEFAULT_BASE}"
        )
    tarball = base_tarball()
    with locked(tarball.with_suffix(".lock")):
        if not tarball.is_file():
            bootstrap_rootfs(tarball)
        try:  # another process may have imported it while we waited for the lock
            return api.inspect_image(name)
        except errors.ImageNotFound:
            pass
        repository, tag = name.rsplit(":", 1)
        log.info("importing %s as %s", tarball, name)
        api.import_image_from_file(
            str(tarball), repository=repository, tag=tag,
            changes=[f"LABEL {LABEL}=1", "ENV LANG=C.UTF-8", 'CMD ["bash"]'],
        )
        return api.inspect_image(name)


def bootstrap_rootfs(tarball: Path) -> None:
    """debootstrap Debian bookworm (minbase + BASE_PACKAGES) into a gzipped tarball."""
    if not shutil.which("debootstrap") or os.geteuid() != 0:
        raise SandboxUnavailable(
            f"the base image {DEFAULT_BASE} is missing and cannot be bootstrapped here (needs root and "
            "debootstrap): run .ci/base-image as root, or set TESTPRISM_DOCKER_BASE to an image you have"
        )
    mirror = os.environ.get("TESTPRISM_DEBIAN_MIRROR") or DEBIAN_MIRROR
    tarball.parent.mkdir(parents=True, exist_ok=True)
    rootfs = Path(tempfile.mkdtemp(prefix="testprism-rootfs.", dir="/var/tmp"))
    part = tarball.with_name(tarball.name + ".part")
    log.warning("bootstrapping the base image's root filesystem with debootstrap (a few minutes, once)")
    try:
        done = subprocess.run(
            ["debootstrap", "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}", "bookworm", str(rootfs), mirror],
            capture_output=True, text=True, timeout=3600,
        )
        if done.returncode != 0:
            raise SandboxUnavailable(f"debootstrap failed:\n{(done.stdout + done.stderr)[-3000:]}")
        for pattern in ("var/cache/apt/archives/*.deb", "var/lib/apt/lists/*", "tmp/*", "var/tmp/*"):
            for path in rootfs.glob(pattern):
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                else:
                    path.unlink()
        with open(part, "wb") as fh:
            tar = subprocess.Popen(["tar", "--numeric-owner", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
            gz = subprocess.run(["gzip", "-1"], stdin=tar.stdout, stdout=fh)
            tar.wait()
        if tar.returncode or gz.returncode:
            raise SandboxUnavailable(f"could not write {tarball}")
        part.rename(tarball)
    finally:
        shutil.rmtree(rootfs, ignore_errors=True)
        part.unlink(missing_ok=True)
