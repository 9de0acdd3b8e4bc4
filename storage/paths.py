"""Every path of a store, held in one typed object so no other module joins path strings."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

#: Datasets a store may hold; each is a folder of immutable Parquet parts.
DATASETS = ("instances", "panels", "suites", "runs", "candidates", "verifications", "funnel", "audits", "generations",
            "searches", "reviews", "gate", "gate_files", "stage_runs")


@dataclass(frozen=True)
class StorePaths:
    """The layout of one store root.

    ``<root>/<dataset>/part-*.parquet`` for appended datasets, ``<root>/scores/<table>.parquet``
    for tables that are recomputed whole, ``<root>/quarantine/`` for parts that failed to read.
    """

    root: Path

    def dataset(self, name: str) -> Path:
        if name not in DATASETS:
            raise ValueError(f"unknown dataset {name!r}; known: {', '.join(DATASETS)}")
        return self.root / name

    @property
    def scores(self) -> Path:
        return self.root / "scores"

    def score_table(self, name: str) -> Path:
        return self.scores / f"{name}.parquet"

    @property
    def generated(self) -> Path:
        """What generation runs left, a folder per generation key: `suite/`, `repair.diff`,
        `log.gz` (tasks/generate/outputs.py)."""
        return self.root / "generated"

    @property
    def quarantine(self) -> Path:
        return self.root / "quarantine"

    @property
    def manifest(self) -> Path:
        """Records the schema version the store was written with."""
        return self.root / "testprism-store.json"
