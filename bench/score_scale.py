"""Scoring time and peak memory on a million-run store (bench/synthetic_store.py).

Each phase runs in a fresh process so its peak RSS is its own: (1) metrics — runs →
per-instance indicators → leaderboard, the work of `testprism score` before statistics;
(2) the full statistics of P4 (every CI, comparisons, rank stability, per-source intervals and
leaders, distinguishability: one resample of 10,000 replicates);
(3) the panel-size curves (tasks/score/curves.py: 20 random seeds and hardest-first; the
synthetic store keeps no patches nor failed checks, so diversity is null and the
diversity-first schedule is not computed); (3b) the failure taxonomy of every S_i = 0 with
its shares, on synthetic coverage, candidate overlaps and candidate-state coverage (the
store has none of them); (4) the
score step together: runs, indicators, curves, taxonomy, per-source tables and every
interval; side by side in the same run, (5) a naive baseline: the same per-instance indicators by a
Python loop over the rows, the way a harness script would do it.

Run: `python bench/score_scale.py [STORE]` (generates the store when missing).
Targets on the 2-core machine: metrics < 2 s, statistics < 2 s, taxonomy < 2 s, curves +
taxonomy + per-source intervals (score_step) < 5 s, peak memory < 2 GiB.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

log = logging.getLogger("bench.score_scale")

SYNTHETIC = """
# the taxonomy's inputs the synthetic store lacks, made before the clock starts: what the
# coverage passes and the benchmark's diffs would give. ΔC and 0-3 missed lines per suite,
# 1-3 overlapped reference lines per candidate, and for every accepted invalid candidate its
# own state's coverage (1-3 differing lines, 0-2 of them never executed)
rng = np.random.default_rng(7)
line = lambda n: [f"pkg/m.py:{k}" for k in rng.choice(10, n, replace=False)]
pairs = store.scan("suites").select("configuration", "instance_id").unique().collect()
coverage = pairs.with_columns(
    delta_c=pl.Series(rng.choice([0.0, 0.5, 1.0], pairs.height)),
    missed_lines=pl.Series([line(n) for n in rng.integers(0, 4, pairs.height)], dtype=pl.List(pl.String)))
candidates = store.scan("panels").filter(pl.col("state") == "candidate").select("instance_id", "candidate_id").collect()
overlaps = candidates.with_columns(
    overlap=pl.Series([line(n) for n in rng.integers(1, 4, candidates.height)], dtype=pl.List(pl.String)))
accepted = (store.scan("runs").filter((pl.col("label") == "invalid") & (pl.col("outcome") == "P"))
            .select("configuration", "instance_id", "candidate_id").unique().collect())
missed = [line(n) for n in rng.integers(0, 3, accepted.height)]
own = accepted.with_columns(
    changed_lines=pl.Series([len(m) + 1 for m in missed], dtype=pl.Int32),
    executed_lines=pl.Series([line(1) for _ in missed], dtype=pl.List(pl.String)),
    missed_lines=pl.Series(missed, dtype=pl.List(pl.String)), reason=pl.lit(None, dtype=pl.String),
    coverage_key=pl.lit("k"))
"""

PHASES = {
    "metrics": """
from testprism.storage import Store
from testprism.tasks.score.metrics import instance_scores
from testprism.tasks.score.statistics import leaderboard_from_instance_scores
start = time.perf_counter()  # imports excluded, as for every phase
scores = instance_scores(Store(STORE))
board = leaderboard_from_instance_scores(scores)
rows = scores.height
""",
    "statistics": """
from testprism.storage import Store
from testprism.tasks.score.metrics import instance_scores
from testprism.tasks.score.statistics import bootstrap_statistics
scores = instance_scores(Store(STORE))
start = time.perf_counter()  # time the statistics alone
stats = bootstrap_statistics(scores, replicates=10_000)
rows = stats.intervals.height
""",
    "curves": """
from testprism.storage import Store
from testprism.tasks.score.curves import panel_curves
from testprism.storage.readers import latest_runs
from testprism.tasks.score.metrics import instance_scores
store = Store(STORE)
runs = latest_runs(store)
scores = instance_scores(store, runs)
start = time.perf_counter()  # the curves alone, on the runs and indicators the score step already has
curves = panel_curves(store, scores, runs)  # 20 random seeds + hardest-first; no patches: no diversity
rows = curves.height
""",
    "score_step": """
import numpy as np
import polars as pl
from testprism.storage import Store
from testprism.tasks.score.curves import panel_curves
from testprism.storage.readers import latest_runs
from testprism.tasks.score.metrics import instance_scores
from testprism.tasks.score.statistics import bootstrap_statistics
from testprism.tasks.score.taxonomy import failure_taxonomy, taxonomy_shares
store = Store(STORE)
""" + SYNTHETIC + """
start = time.perf_counter()  # runs → indicators → curves → taxonomy → per-source tables and every interval, in one process
runs = latest_runs(store)
scores = instance_scores(store, runs)
curves = panel_curves(store, scores, runs)
taxonomy = failure_taxonomy(store, scores, coverage, overlaps, own, runs)
shares = taxonomy_shares(taxonomy)
stats = bootstrap_statistics(scores, replicates=10_000)  # per-source intervals and leaders from the same resample
rows = curves.height + taxonomy.height + stats.per_source.height + stats.intervals.height
""",
    "taxonomy": """
import numpy as np
import polars as pl
from testprism.storage import Store
from testprism.storage.readers import latest_runs
from testprism.tasks.score.metrics import instance_scores
from testprism.tasks.score.taxonomy import failure_taxonomy, taxonomy_shares
store = Store(STORE)
runs = latest_runs(store)
scores = instance_scores(store, runs)
""" + SYNTHETIC + """
start = time.perf_counter()  # time the taxonomy alone, as the statistics (on the runs the score step has)
taxonomy = failure_taxonomy(store, scores, coverage, overlaps, own, runs)
shares = taxonomy_shares(taxonomy)
rows = taxonomy.height
""",
    "naive_loop": """
import pyarrow.dataset as ds
from collections import defaultdict
start = time.perf_counter()
runs = ds.dataset(f"{STORE}/runs").to_table(columns=["configuration", "instance_id", "state", "label", "outcome"]).to_pylist()
cell = defaultdict(lambda: {"f_b": 0, "f_r": 0, "a": [], "r": []})
for row in runs:
    c = cell[(row["configuration"], row["instance_id"])]
    if row["state"] == "buggy": c["f_b"] = row["outcome"] == "F"
    elif row["state"] == "reference": c["f_r"] = row["outcome"] == "P"
    elif row["label"] == "valid": c["a"].append(row["outcome"] == "P")
    else: c["r"].append(row["outcome"] == "F")
rows = len(cell)
""",
}

TEMPLATE = """
import json, resource, sys, time
STORE = sys.argv[1]
start = time.perf_counter()
{body}
elapsed = time.perf_counter() - start
print(json.dumps({{"seconds": elapsed, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "rows": rows}}))
"""


def run_phase(name: str, store: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", TEMPLATE.format(body=PHASES[name]), str(store)],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    store = Path(sys.argv[1] if len(sys.argv) > 1 else "/var/tmp/testprism-scale-store")
    if not (store / "runs").is_dir():
        subprocess.run([sys.executable, str(Path(__file__).with_name("synthetic_store.py")), str(store)], check=True)
    results = {name: run_phase(name, store) for name in PHASES}
    for name, r in results.items():
        log.info("%-11s %7.2f s   peak %6.0f MiB   (%d rows out)", name, r["seconds"], r["peak_mib"], r["rows"])
    log.info("metrics vs naive loop over rows: %.1fx faster", results["naive_loop"]["seconds"] / results["metrics"]["seconds"])
    log.info("targets: metrics < 2 s (%s), statistics < 2 s (%s), taxonomy < 2 s (%s), score step < 5 s (%s), "
             "peak < 2048 MiB (%s)",
             *("met" if ok else "MISSED" for ok in (
                 results["metrics"]["seconds"] < 2, results["statistics"]["seconds"] < 2,
                 results["taxonomy"]["seconds"] < 2, results["score_step"]["seconds"] < 5,
                 max(r["peak_mib"] for r in results.values() if r is not results["naive_loop"]) < 2048)))


if __name__ == "__main__":
    main()
