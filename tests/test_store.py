"""The store: atomic parts, idempotent named parts, quarantine, schema versions."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from testprism.storage import SCHEMAS, Store, StoreError

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
