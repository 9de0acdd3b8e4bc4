"""Replacing a folder whole: build it beside its target, then swap it in, so a reader sees the
old folder or the new one, never half of either. One procedure for every folder testprism
rewrites as a unit (a panel benchmark, a configuration's generated suites, what a generation
run left)."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path


def swap_in(staging: Path, target: Path) -> None:
    """Put the finished folder `staging` (on the same filesystem) at `target`; an existing
    `target` is renamed aside first and removed after, so the swap itself is two renames."""
    if target.exists():
        trash = target.parent / f".{target.name}.old-{uuid.uuid4().hex[:8]}"
        os.replace(target, trash)
        os.replace(staging, target)
        shutil.rmtree(trash)
    else:
        os.replace(staging, target)
