"""The bundled benchmark: its shape, and the demo's leaderboard ordering as designed."""

from __future__ import annotations

from collections import Counter

import polars as pl
import pytest
from typer.testing import CliRunner

from testprism.flows.cli import BUNDLED, app
from testprism.tasks.model.benchmark import load_benchmark


def test_bundled_benchmark_has_the_testprism_panel_shape():
    bench = load_benchmark(BUNDLED)
    assert len(bench.instances) >= 12
    assert len(Counter(i.source for i in bench.instances.values())) >= 3
    for inst in bench.instances.values():
        labels = Counter(c.label for c in inst.candidates)
        assert labels == {"valid": 4, "invalid": 5}, inst.id
        assert all(c.note for c in inst.candidates), inst.id
    assert set(bench.configurations) == {"strong", "biased", "weak", "broken"}
    assert len(bench.suites) == 4 * len(bench.instances) and not bench.suite_errors


@pytest.mark.slow
@pytest.mark.requires("sandbox")  # the demo's runs must be isolated by bubblewrap, not merely trusted
@pytest.mark.timeout(1800)  # 528 sandbox runs, their confirmations, coverage and the report
def test_demo_orders_configurations_as_designed(tmp_path, work_root):
    out = tmp_path / "demo"
    result = CliRunner().invoke(app, ["demo", "--out", str(out), "--work", str(work_root)])
    assert result.exit_code == 0, result.output
    board = pl.read_parquet(out / "scores" / "leaderboard.parquet")
    best = {m: board.sort(m, descending=True)["configuration"][0] for m in ("jvr",)}
    worst = {m: board.sort(m)["configuration"][0] for m in ("car", "wdr", "grr")}
    assert best["jvr"] == "strong"
    assert worst == {"car": "biased", "wdr": "weak", "grr": "broken"}
    runs = pl.read_parquet(out / "runs" / "*.parquet")
    assert runs.height == 4 * 12 * 11 and (runs["isolation"] == "bubblewrap").all()
    assert "leaderboard" in result.output
