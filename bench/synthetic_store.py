"""Generate a store at SWEPatchTest's scale: 619 instances in 3 sources (342/167/110),
about 45 valid and 89 invalid candidates each, 12 configurations: about a million runs.

The rows follow the `runs`, `panels` and `suites` schemas exactly (written through
`Store.append`, so the same atomic parts a replay writes), with outcomes drawn from a
per-configuration skill and per-instance difficulty so the leaderboard is not degenerate.

Run: `python bench/synthetic_store.py OUT` (with testprism importable).
"""

from __future__ import annotations

import logging
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa

from testprism.storage import SCHEMAS, Store

log = logging.getLogger("bench.synthetic_store")

SOURCES = {"swe-bench-pro": 342, "swe-bench-multilingual": 167, "deepswe": 110}
CONFIGURATIONS = 12
MEAN_VALID, MEAN_INVALID = 45, 89
SEED = 42


def generate(root: Path, seed: int = SEED) -> int:
    """Write the store; returns the number of runs."""
    rng = np.random.default_rng(seed)
    store = Store(root)
    instance_ids, sources = [], []
    for source, n in SOURCES.items():
        instance_ids += [f"{source}__{i:04d}" for i in range(n)]
        sources += [source] * n
    n_valid = rng.poisson(MEAN_VALID, len(instance_ids))
    n_invalid = rng.poisson(MEAN_INVALID, len(instance_ids))
    # panels: buggy, reference, then candidates
    p_inst, p_src, p_state, p_cid, p_label = [], [], [], [], []
    for iid, src, nv, ni in zip(instance_ids, sources, n_valid, n_invalid, strict=True):
        k = 2 + nv + ni
        p_inst += [iid] * k
        p_src += [src] * k
        p_state += ["buggy", "reference"] + ["candidate"] * (nv + ni)
        p_cid += [None, None] + [f"v{j}" for j in range(nv)] + [f"x{j}" for j in range(ni)]
        p_label += [None, None] + ["valid"] * nv + ["invalid"] * ni
    panels = pa.table({"instance_id": p_inst, "source": p_src, "state": p_state, "candidate_id": p_cid,
                       "label": p_label, "state_hash": [f"h{i}" for i in range(len(p_inst))]})
    store.append("panels", panels)
    configs = [f"config-{c:02d}" for c in range(CONFIGURATIONS)]
    store.append("suites", pa.table({
        "configuration": np.repeat(configs, len(instance_ids)).tolist(),
        "instance_id": instance_ids * CONFIGURATIONS, "suite_hash": ["s"] * (len(instance_ids) * CONFIGURATIONS),
        "present": [True] * (len(instance_ids) * CONFIGURATIONS)}))
    n_states = len(p_inst)
    labels = np.array(p_label, dtype=object)
    states = np.array(p_state, dtype=object)
    started = datetime(2026, 11, 1, tzinfo=UTC)
    total = 0
    for c, conf in enumerate(configs):
        skill = 0.55 + 0.035 * c
        u = rng.random(n_states)
        # a valid candidate / the reference is accepted with p=skill, an invalid rejected with p=skill
        outcome = np.where(states == "buggy", np.where(u < skill, "F", "P"),
                           np.where((states == "reference") | (labels == "valid"), np.where(u < skill, "P", "F"),
                                    np.where(u < skill, "F", "P")))
        outcome = np.where(rng.random(n_states) < 0.01, "E", outcome)
        table = pa.table({
            "run_key": [f"{conf}-{i}" for i in range(n_states)], "instance_id": p_inst, "source": p_src,
            "configuration": [conf] * n_states, "state": p_state, "candidate_id": p_cid, "label": p_label,
            "outcome": outcome.tolist(), "reason": np.where(outcome == "E", "timeout", None).tolist(),
            "exit_code": pa.nulls(n_states, pa.int32()), "duration_s": rng.exponential(20, n_states),
            "attempts": np.ones(n_states, dtype=np.int16), "stdout_tail": [""] * n_states,
            "started_at": pa.array([started] * n_states, pa.timestamp("us", tz="UTC")),
            "suite_hash": ["s"] * n_states, "state_hash": ["h"] * n_states, "environment_hash": ["e"] * n_states,
            "policy_hash": ["p"] * n_states, "backend": ["docker"] * n_states, "isolation": ["container"] * n_states,
            "tests": pa.nulls(n_states, SCHEMAS["runs"].field("tests").type),
            "patch_method": ["git apply"] * n_states, "suite_patch_method": pa.nulls(n_states, pa.string()),
        })
        store.append("runs", table)
        total += n_states
    return total


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "/var/tmp/testprism-scale-store")
    start = time.perf_counter()
    runs = generate(out)
    log.info("wrote %d runs to %s in %.1f s", runs, out, time.perf_counter() - start)


if __name__ == "__main__":
    main()
