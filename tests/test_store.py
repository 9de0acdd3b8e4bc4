"""The store: atomic parts, idempotent named parts, quarantine, schema versions."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from testprism.storage import SCHEMAS, Store, StoreError
from testprism.storage.schema import SCHEMA_VERSION

ROW = {"configuration": "c", "instance_id": "i", "suite_hash": "h", "present": True}


def table(n=1):
    return pa.Table.from_pylist([ROW] * n, schema=SCHEMAS["suites"])


def test_named_parts_are_idempotent_and_no_temp_files_remain(tmp_path):
    store = Store(tmp_path)
    assert store.append("suites", table(), part="x") is not None
    assert store.append("suites", table(2), part="x") is None
    assert store.scan("suites").collect().height == 1
    assert not list((tmp_path / "suites").glob(".tmp-*"))


def test_corrupt_part_is_quarantined_not_dropped(tmp_path, caplog):
    store = Store(tmp_path)
    store.append("suites", table(3))
    bad = tmp_path / "suites" / "part-truncated.parquet"
    bad.write_bytes(b"PAR1 this is not parquet")
    assert store.scan("suites").collect().height == 3
    assert (tmp_path / "quarantine" / "suites" / "part-truncated.parquet").exists()
    assert "part-truncated.parquet" in caplog.text


def test_wrong_columns_are_refused(tmp_path):
    with pytest.raises(StoreError, match="missing columns"):
        Store(tmp_path).append("suites", pa.table({"configuration": ["c"]}))


def test_schema_version_mismatch_names_the_manifest(tmp_path):
    Store(tmp_path)
    (tmp_path / "testprism-store.json").write_text(json.dumps({"schema_version": 99}))
    with pytest.raises(StoreError, match="testprism-store.json: field schema_version"):
        Store(tmp_path)


def test_a_part_a_killed_writer_left_is_removed_and_a_live_writers_is_kept(tmp_path):
    import socket
    import subprocess
    import sys

    from testprism.storage.owner import process_tag
    from testprism.storage.store import TMP_PREFIX

    store = Store(tmp_path / "store")
    (store.paths.root / "runs").mkdir(parents=True, exist_ok=True)
    gone = subprocess.run([sys.executable, "-c", "from testprism.storage.owner import process_tag; print(process_tag())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    host = socket.gethostname()
    runs = store.paths.root / "runs"
    dead = runs / f"{TMP_PREFIX}{host}@{gone}-abc.parquet"
    live = runs / f"{TMP_PREFIX}{host}@{process_tag()}-def.parquet"
    elsewhere = runs / f"{TMP_PREFIX}other-host.example@{gone}-0a1.parquet"  # another host's: not judged here
    legacy = runs / f"{TMP_PREFIX}0123456789abcdef.parquet"  # no writer named: nobody is writing it
    for path in (dead, live, elsewhere, legacy):
        path.write_bytes(b"partial")
    Store(tmp_path / "store")
    assert not dead.exists() and not legacy.exists()
    assert live.exists() and elsewhere.exists()


def test_processes_opening_a_new_store_at_once_all_get_it(tmp_path):
    """A batch's workers may open a store nobody has made yet at the same moment: each
    writes the manifest through a temporary file of its own, so none fails."""
    from concurrent.futures import ProcessPoolExecutor

    roots = [tmp_path / f"store-{i}" for i in range(6)]
    with ProcessPoolExecutor(4) as pool:
        for root in roots:
            list(pool.map(Store, [root] * 8))
    for root in roots:
        assert json.loads((root / "testprism-store.json").read_text())["schema_version"] == SCHEMA_VERSION
        assert not list(root.glob("*.tmp"))
