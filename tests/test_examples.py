"""The bundled benchmark: its shape, and the demo's leaderboard ordering as designed."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from testprism.flows.cli import app
from testprism.tasks.model.bundled import BUNDLED
from testprism.tasks.model.benchmark import load_benchmark
from tests.test_report import Chromium, problems


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


#: The part of the bundled benchmark the demo test runs (CI's half-hour: the whole demo is
#: `make demo`, timed in docs/performance.md): two instances of each Python source and one
#: JavaScript; no Go instance (each of its 66 runs builds and links a test binary; Go's
#: builds and replays are tests/test_languages.py's). algokit's toposort is the instance
#: where the broken suite accepts the valid candidates, so that biased, not broken, has the
#: lowest CAR, as on the whole benchmark (checked on a full demo's store).
#: five instances (seven until CI's time ran short: the demo test took 137 s): each
#: configuration's designed failure shows on every one of them (the ten-language demo's
#: per-instance scores, docs/demo.md), so the order the test asserts is theirs, not an average's
DEMO_PART = ("algokit__toposort-leaf-deps", "calkit__merge-touching", "textkit__snake-case-acronyms",
             "textkit__wrap-exact-width", "urlkit__query-repeated-keys")


def bundled_part(target: Path, instances: tuple[str, ...]) -> Path:
    """A copy of the bundled benchmark with only `instances` (and their suites)."""
    def keep(folder: str, names: list[str]) -> list[str]:
        here = Path(folder)
        per_instance = here == BUNDLED / "instances" or here.parent == BUNDLED / "suites"
        return [n for n in names if per_instance and n not in instances]
    shutil.copytree(BUNDLED, target, ignore=keep)
    return target


def drawn_curves(page: Path, chromium_path: str, scratch: Path) -> list[list]:
    """The report's panel-size curve figures as Chromium draws them: (schedule, charts),
    sorted; the page must load without a console error or a request."""
    browser = Chromium(chromium_path, scratch / "chromium-profile")
    try:
        session, events = browser.load(page.as_uri())
        assert problems(events, page) == []
        return sorted(browser.evaluate(session, "[...document.querySelectorAll('figure.curve')]"
                                                ".map(f => [f.dataset.schedule, f.querySelectorAll('svg').length])"))
    finally:
        browser.close()


@pytest.mark.slow
@pytest.mark.requires("sandbox")  # the demo's runs must be isolated by bubblewrap, not merely trusted
@pytest.mark.timeout(1800)  # 16 generation runs, 528 sandbox runs, their confirmations, coverage, report
def test_demo_orders_configurations_as_designed(tmp_path, work_root, chromium_path):
    out = tmp_path / "demo"
    part = bundled_part(tmp_path / "bench", DEMO_PART)
    assert sorted(load_benchmark(part).instances) == sorted(DEMO_PART)
    result = CliRunner().invoke(app, ["demo", "--out", str(out), "--work", str(work_root), "--benchmark", str(part)])
    assert result.exit_code == 0, result.output
    board = pl.read_parquet(out / "scores" / "leaderboard.parquet")
    written = board.filter(pl.col("configuration").is_in(["strong", "weak", "biased", "broken"]))
    best = {m: written.sort(m, descending=True)["configuration"][0] for m in ("jvr",)}
    worst = {m: written.sort(m)["configuration"][0] for m in ("car", "wdr", "grr")}
    assert best["jvr"] == "strong"
    assert worst == {"car": "biased", "wdr": "weak", "grr": "broken"}
    # the generated ones, as their generators make them: biased (reproduces, rejects correct
    # fixes written differently) and weak (accepts correct fixes, and wrong ones too)
    generated = {r["configuration"]: r for r in board.iter_rows(named=True) if r["configuration"].startswith("from-")}
    assert generated["from-reference"]["grr"] > 0.9 and generated["from-reference"]["car"] < 0.1
    assert generated["from-instruction"]["car"] == 1.0 and generated["from-instruction"]["wdr"] < 0.1
    runs = pl.read_parquet(out / "runs" / "*.parquet")
    assert runs.height == 6 * len(DEMO_PART) * 11 and (runs["isolation"] == "bubblewrap").all()
    assert "leaderboard" in result.output
    # why each configuration failed: printed, and the biased suites' failures are all faulty checks
    assert "failure taxonomy" in result.output
    shares = pl.read_parquet(out / "scores" / "failure_taxonomy_shares.parquet")
    biased = {r["kind"]: r["share"] for r in shares.filter(pl.col("configuration") == "biased").iter_rows(named=True)}
    assert biased["faulty_check"] == 1.0
    # the three panel-size curves, drawn in the report: diversity-first needs every pool's
    # distances (valid: the patches; invalid: the failed checks the bundled benchmark records)
    curves = pl.read_parquet(out / "scores" / "panel_curves.parquet")
    assert set(curves["schedule"]) == {"random", "diversity", "hardest"}
    assert drawn_curves(out / "report.html", chromium_path, tmp_path) == [
        ["diversity", 2], ["hardest", 2], ["random", 2]]  # each: JVR against k, and the panel's diversity
