"""Atomic, idempotent Parquet parts and the readers over them.

Why parts: a replay is killed, resumed, and sometimes run by two processes at once. Each
writer adds immutable files written under a temporary name and renamed into place, so a
reader sees a whole part or none, and every row carries its key so duplicates from a
concurrent writer are harmless (readers deduplicate by key).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import socket
import uuid
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from testprism.storage.errors import StoreError
from testprism.storage.paths import StorePaths
from testprism.storage.schema import ADDED_COLUMNS, SCHEMA_VERSION, SCHEMAS
from testprism.storage.owner import alive, process_tag

log = logging.getLogger(__name__)


#: a part being written: `.tmp-<host>@<writer's process tag>-<random>.parquet`, beside its target
TMP_PREFIX = ".tmp-"


def _writer() -> str:
    return f"{socket.gethostname()}@{process_tag()}"


def _orphaned(name: str) -> bool:
    """Whether the temporary part `name` was left by a writer that is gone. A part written
    from another host (a cluster sharing the store's file system) is never judged here."""
    host, at, tag = name.removeprefix(TMP_PREFIX).rpartition("-")[0].rpartition("@")
    if at and host != socket.gethostname():
        return False
    return not alive(tag)


def _atomic_write(table: pa.Table, target: Path) -> None:
    """Write to a temporary sibling, fsync, rename: readers never see a partial file. The
    temporary file is named after its writer (host and process), so that one a killed writer
    left behind is removed by the next store opened there (`Store.__init__`), and a live
    writer's is not."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f"{TMP_PREFIX}{_writer()}-{uuid.uuid4().hex}.parquet"
    try:
        pq.write_table(table, tmp, compression="zstd", write_statistics=True)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


class Store:
    """A store rooted at a local folder (docs/architecture.md, "The store")."""

    def __init__(self, root: Path | str) -> None:
        self.paths = StorePaths(Path(root))
        self._check_manifest()
        self._remove_orphaned_parts()

    def _remove_orphaned_parts(self) -> None:
        """Temporary parts whose writer is gone (killed mid-write): never readable, only litter."""
        for tmp in self.paths.root.glob(f"*/{TMP_PREFIX}*"):
            if _orphaned(tmp.name):
                tmp.unlink(missing_ok=True)

    @classmethod
    def existing(cls, root: Path | str) -> Store:
        """A store that must be there already: a reader (score, report) given a mistyped path
        must say so, not create an empty store there and report that it holds nothing."""
        paths = StorePaths(Path(root))
        if not paths.manifest.is_file():
            raise StoreError(f"{paths.root}: field (folder): no store here (no {paths.manifest.name}); "
                             "`testprism replay` creates one")
        return cls(root)

    def _check_manifest(self) -> None:
        manifest = self.paths.manifest
        if manifest.exists():
            try:
                found = json.loads(manifest.read_text())["schema_version"]
            except (ValueError, KeyError) as exc:
                raise StoreError(f"{manifest}: field schema_version: unreadable ({exc})") from exc
            if isinstance(found, int) and found < SCHEMA_VERSION and all(
                    v in ADDED_COLUMNS for v in range(found + 1, SCHEMA_VERSION + 1)):
                log.info("%s: schema %d → %d (added columns only; older rows read with defaults)",
                         manifest, found, SCHEMA_VERSION)
                self._write_manifest()
                return
            if found != SCHEMA_VERSION:
                raise StoreError(
                    f"{manifest}: field schema_version: store has {found}, this testprism writes "
                    f"{SCHEMA_VERSION}; use a new store or a matching testprism version"
                )
            return
        self.paths.root.mkdir(parents=True, exist_ok=True)
        self._write_manifest()

    def _write_manifest(self) -> None:
        """Atomically, through a temporary file of this writer's own: processes opening a
        new store at once (a batch's workers) each replace the manifest whole, never
        another's half-written one or its temporary file."""
        manifest = self.paths.manifest
        fd, tmp = tempfile.mkstemp(dir=manifest.parent, prefix=f".{manifest.name}.", suffix=".tmp")
        try:
            os.fchmod(fd, 0o644)
            with os.fdopen(fd, "w") as fh:
                fh.write(json.dumps({"schema_version": SCHEMA_VERSION}) + "\n")
            os.replace(tmp, manifest)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    # -- writing ---------------------------------------------------------------------------

    def conform(self, schema_name: str, table: pa.Table) -> pa.Table:
        """Cast a table to the named schema, failing with the column that does not fit."""
        schema = SCHEMAS[schema_name]
        missing = [f.name for f in schema if f.name not in table.column_names]
        if missing:
            raise StoreError(f"{schema_name}: missing columns {missing}")
        try:
            return table.select(schema.names).cast(schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise StoreError(f"{schema_name}: rows do not fit the schema: {exc}") from exc

    def append(self, dataset: str, table: pa.Table, part: str | None = None) -> Path | None:
        """Add one immutable part. With `part` given the write is idempotent: a part of that
        name already present is kept and nothing is written (returns None)."""
        table = self.conform(dataset, table)
        name = part or uuid.uuid4().hex
        target = self.paths.dataset(dataset) / f"part-{name}.parquet"
        if part is not None and target.exists():
            return None
        _atomic_write(table, target)
        return target

    def write_table(self, name: str, table: pa.Table) -> Path:
        """Replace a whole score table atomically (same content gives the same bytes)."""
        target = self.paths.score_table(name)
        _atomic_write(self.conform(name, table), target)
        return target

    # -- reading ---------------------------------------------------------------------------

    def parts(self, dataset: str) -> list[Path]:
        """Readable parts of a dataset; an unreadable one is moved to quarantine, not dropped."""
        folder = self.paths.dataset(dataset)
        if not folder.is_dir():
            return []
        good: list[Path] = []
        for path in sorted(folder.glob("part-*.parquet")):
            try:
                pq.read_metadata(path)
            except (OSError, pa.ArrowException) as exc:
                self._quarantine(dataset, path, exc)
                continue
            good.append(path)
        return good

    def _quarantine(self, dataset: str, path: Path, exc: Exception) -> None:
        target = self.paths.quarantine / dataset / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)
        log.error("%s: unreadable Parquet part moved to %s (%s)", path, target, exc)

    def scan(self, dataset: str) -> pl.LazyFrame:
        """A lazy frame over every readable part (empty, with the schema, when none)."""
        parts = self.parts(dataset)
        empty = pl.from_arrow(SCHEMAS[dataset].empty_table())
        if not parts:
            return pl.LazyFrame(empty)
        added = {column: default for changes in ADDED_COLUMNS.values()
                 for column, default in changes.get(dataset, {}).items()}
        if not added:
            return pl.scan_parquet(parts)
        # parts written before a column was added lack it: read as its default
        frame = pl.scan_parquet(parts, schema=empty.schema, missing_columns="insert")
        return frame.with_columns(pl.col(c).fill_null(d) for c, d in added.items() if d is not None)

    def read_table(self, name: str) -> pl.DataFrame:
        return pl.read_parquet(self.paths.score_table(name))
