"""The gate in the store: the `gate` rows (one per row and gate run) and the `gate_files`
manifest stored beside them, and what the other stages read of them.

An instance's gate verdict is its newest `gate` row, looked up by instance id: collect's
panel folder keeps the ids of the benchmark it was built from, so a replay or score of the
panels meets the gate of the rows they came from. An instance no gate row names is not
gated (a store without gate rows is read as before).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import polars as pl
import pyarrow as pa

from testprism.storage import SCHEMAS, Store
from testprism.tasks.collect.label import GoldVerdict
from testprism.tasks.model.benchmark import Benchmark
from testprism.tasks.model.outcome import Reason
from testprism.tasks.gate.verdict import GateVerdict, RowVerdict

log = logging.getLogger(__name__)


def benchmark_name(root: Path) -> str:
    """How the store names a benchmark folder: its resolved path."""
    return str(root.resolve())


def record(store: Store, gate_run: str, root: Path, verdicts: Sequence[RowVerdict], files: dict[str, str],
           manifest: str, checked_at: datetime, backend: str) -> None:
    """One part of each dataset per gate run, named after it (idempotent)."""
    name = benchmark_name(root)
    store.append("gate_files", pa.Table.from_pylist(
        [{"gate_run": gate_run, "benchmark": name, "path": p, "sha256": s} for p, s in files.items()],
        schema=SCHEMAS["gate_files"]), part=gate_run)
    store.append("gate", pa.Table.from_pylist([
        {"gate_run": gate_run, "benchmark": name, "instance_id": v.instance_id, "source": v.source,
         "language": v.language, "verdict": v.verdict.value, "detail": v.detail, "manifest": manifest,
         "checked_at": checked_at, "backend": backend} for v in verdicts], schema=SCHEMAS["gate"]), part=gate_run)


def newest_run(store: Store, root: Path) -> tuple[str, dict[str, str]] | None:
    """The newest gate run of this benchmark folder and its manifest, or None."""
    runs = (store.scan("gate").filter(pl.col("benchmark") == benchmark_name(root))
            .select("gate_run", "checked_at").unique().sort("checked_at").collect())
    if runs.is_empty():
        return None
    gate_run = runs["gate_run"][-1]
    files = store.scan("gate_files").filter(pl.col("gate_run") == gate_run).select("path", "sha256").collect()
    return gate_run, dict(zip(files["path"], files["sha256"], strict=True))


def newest_verdicts(store: Store) -> pl.DataFrame:
    """The newest gate row of each instance id (every column of `gate`)."""
    return store.scan("gate").sort("checked_at").unique("instance_id", keep="last").sort("instance_id").collect()


def failed_gate(store: Store, instance_ids: Iterable[str]) -> dict[str, str]:
    """{instance id: "verdict: detail"} of those of `instance_ids` whose newest gate verdict
    is not `ok`."""
    wanted = set(instance_ids)
    rows = newest_verdicts(store).filter(pl.col("instance_id").is_in(list(wanted)) & (pl.col("verdict") != "ok"))
    return {r["instance_id"]: f"{r['verdict']}: {r['detail']}".rstrip(": ") for r in rows.iter_rows(named=True)}


def kept_by_gate(store: Store, instance_ids: Iterable[str], include_failed: bool, stage: str) -> set[str]:
    """The ids a stage keeps: all with `include_failed`, else those the gate did not fail;
    each one left out is logged with its verdict."""
    ids = set(instance_ids)
    if include_failed:
        return ids
    failed = failed_gate(store, ids)
    for iid, why in sorted(failed.items()):
        log.warning("%s: %s left out (gate: %s); --include-failed-gate keeps it", stage, iid, why)
    return ids - set(failed)


def gated_verdicts(store: Store, verdicts: Sequence[GoldVerdict], include_failed: bool) -> list[GoldVerdict]:
    """Collect's gold verdicts with each validated row the gate failed quarantined too
    (`failed_gate`): its candidates are then set aside and it gets no panel, as a row
    that fails gold validation."""
    kept = kept_by_gate(store, [v.instance_id for v in verdicts if v.validated], include_failed, "collect")
    failed = failed_gate(store, [v.instance_id for v in verdicts])
    return [GoldVerdict(v.instance_id, Reason.FAILED_GATE, failed[v.instance_id])
            if v.validated and v.instance_id not in kept else v for v in verdicts]


def gated_benchmark(store: Store, bench: Benchmark, include_failed: bool, stage: str) -> Benchmark:
    """The benchmark less the instances (and their suites) the gate failed."""
    kept = kept_by_gate(store, bench.instances, include_failed, stage)
    if len(kept) == len(bench.instances):
        return bench
    return replace(bench, instances={i: inst for i, inst in bench.instances.items() if i in kept},
                   suites={k: s for k, s in bench.suites.items() if k[1] in kept},
                   suite_errors={k: e for k, e in bench.suite_errors.items() if k[1] in kept})


def gate_table(verdicts: pl.DataFrame) -> pl.DataFrame:
    """Per source and language: rows, ok, and one column per other verdict found (counts)."""
    reasons = [v.value for v in GateVerdict if v is not GateVerdict.OK and v.value in set(verdicts["verdict"])]
    return (verdicts.group_by("source", "language")
            .agg(rows=pl.len(), ok=(pl.col("verdict") == "ok").sum(),
                 **{r: (pl.col("verdict") == r).sum() for r in reasons})
            .sort("source", "language"))
