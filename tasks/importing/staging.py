"""Folders built whole or not at all: an imported instance or suite is written in a staging
folder and renamed into place only when complete, so that a reader (the loader, a replay
running meanwhile) never sees a half-written one and a failed row leaves nothing behind.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

STAGING = ".staging"


@contextmanager
def staged(root: Path, final: Path, *, overwrite: bool) -> Iterator[Path]:
    """A fresh folder to build `final` in. Renamed into place when the block ends normally,
    removed when it raises, so a reader never sees a half-written folder. The staging area
    lies beside instances/ and suites/ (same file system, so the rename is atomic), where
    the loader never looks; in it, `final` keeps its path under `root`, so that what the
    folder names beside itself (an instance's `../../environments/<name>/Dockerfile`) can
    be written and checked there too."""
    area = root / STAGING
    area.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=area))
    target = scratch / final.relative_to(root)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        yield target
        final.parent.mkdir(parents=True, exist_ok=True)
        if final.exists():
            if not overwrite:
                raise FileExistsError(final)
            old = scratch / ".old"
            final.rename(old)
        target.rename(final)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        try:
            area.rmdir()
        except OSError:
            pass  # another import is using it
