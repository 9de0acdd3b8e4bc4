"""testprism's images on the engine (label `testprism=1`), base and environments: listed
and pruned for `testprism images` (flows/cli.py)."""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from testprism.tasks.sandbox.docker.engine import LABEL, _errors

if TYPE_CHECKING:
    from docker import APIClient

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ImageInfo:
    tag: str
    kind: str  # base | environment
    environment: str
    python: str
    packages: tuple[str, ...]
    size_mb: float
    created: str


def list_images(api: APIClient) -> list[ImageInfo]:
    """testprism's images (label `testprism=1`)."""
    out = []
    for image in api.images(filters={"label": f"{LABEL}=1"}):
        labels = image.get("Labels") or {}
        tags = [t for t in image.get("RepoTags") or () if t != "<none>:<none>"]
        out.append(ImageInfo(
            tag=tags[0] if tags else image["Id"][:19],
            kind=labels.get("testprism.kind", "base"),
            environment=labels.get("testprism.environment", ""),
            python=labels.get("testprism.python", ""),
            packages=tuple(json.loads(labels.get("testprism.packages", "[]"))),
            size_mb=round(image.get("Size", 0) / 1e6, 1),
            created=time.strftime("%Y-%m-%d %H:%M", time.gmtime(image.get("Created", 0))),
        ))
    return sorted(out, key=lambda i: (i.kind != "base", i.tag))


def prune_images(api: APIClient, keep: set[str] | None = None, include_base: bool = False) -> list[str]:
    """Remove testprism's images (label `testprism=1`) but the base, and environment
    images whose environment key (EnvironmentSpec.key) is in `keep` (none kept when `keep`
    is None); the base image too with `include_base`. Returns the removed tags."""
    errors = _errors()
    removed: list[str] = []
    failed: dict[str, str] = {}
    while True:  # children before parents: retry what failed while anything goes
        progress = False
        for info in list_images(api):
            if info.kind == "base" and not include_base:
                continue
            if info.kind == "environment" and keep is not None and info.environment in keep:
                continue
            try:
                api.remove_image(info.tag, force=True)
            except errors.APIError as exc:
                failed[info.tag] = str(exc)
                continue
            removed.append(info.tag)
            failed.pop(info.tag, None)
            progress = True
        if not progress or not failed:
            break
    for tag, why in failed.items():
        log.warning("could not remove %s: %s", tag, why)
    return removed
