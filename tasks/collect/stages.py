"""The collect funnel: what each stage kept and set aside (TestPrism's Table 5, with the
why of every exclusion), and the rows collect leaves in the store.

One collect (collection.py) calls these in order; they are plain functions of the pool,
so the funnel is the same whichever executor ran the verifications.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

import pyarrow as pa

from testprism.storage import SCHEMAS, Store
from testprism.tasks.collect.candidate import CandidatePatch, Ingested, candidate_row, excluded
from testprism.tasks.collect.label import GoldVerdict
from testprism.tasks.collect.panel import PanelChoice, PanelMode
from testprism.tasks.collect.verification import candidate_states
from testprism.tasks.model.benchmark import Benchmark
from testprism.tasks.model.funnel import Excluded, Funnel, Stage
from testprism.tasks.model.outcome import MUTATION_REASONS, VERIFICATION_REASONS, Reason

log = logging.getLogger(__name__)

#: Why a candidate of the pool has no label: its instance was quarantined, or its checks
#: could not decide (every reason a verification can end in).
UNLABELLED = VERIFICATION_REASONS | {Reason.INSTANCE_QUARANTINED}


def ingest_stage(ingested: Ingested) -> Stage:
    return Stage("ingest", "candidate", len(ingested.candidates), tuple(
        Excluded(e.origin, e.kind, f"field {e.field}: {e.message}") for e in ingested.errors))


def exact_dedup_stage(pool: Sequence[CandidatePatch]) -> Stage:
    return Stage("exact_dedup", "candidate", sum(c.reason is None for c in pool),
                 excluded(pool, (Reason.DUPLICATE, Reason.SAME_AS_REFERENCE)))


def gold_stage(verdicts: Sequence[GoldVerdict]) -> Stage:
    return Stage("gold_validation", "instance", sum(v.validated for v in verdicts), tuple(
        Excluded(v.instance_id, v.reason, v.detail) for v in verdicts if not v.validated))


def quarantine(pool: Sequence[CandidatePatch], verdicts: Sequence[GoldVerdict]) -> list[CandidatePatch]:
    """Set aside the candidates of instances that failed gold validation."""
    quarantined = {v.instance_id for v in verdicts if not v.validated}
    return [replace(c, reason=Reason.INSTANCE_QUARANTINED) if c.reason is None and c.instance_id in quarantined
            else c for c in pool]


def verification_stage(pool: Sequence[CandidatePatch]) -> Stage:
    return Stage("verification", "candidate", sum(c.in_pool for c in pool), excluded(pool, UNLABELLED))


def mutation_stage(mutants: Sequence[CandidatePatch], notes: Sequence[Excluded]) -> Stage:
    """The mutants of thin pools: those kept as invalid candidates, the ones set aside
    (equivalent, duplicate, unlabelled), and the thin instances that got none (`notes`)."""
    aside = tuple(Excluded(f"{c.instance_id}/{c.candidate_id}", c.reason,
                           c.origin + (f"; duplicate of {c.duplicate_of}" if c.duplicate_of else ""))
                  for c in mutants if c.reason in MUTATION_REASONS)
    return Stage("mutation", "candidate", sum(c.in_pool for c in mutants), aside + tuple(notes))


def near_dedup_stage(pool: Sequence[CandidatePatch]) -> Stage:
    return Stage("near_dedup", "candidate", sum(c.in_pool for c in pool), excluded(pool, (Reason.NEAR_DUPLICATE,)))


def panel_stage(choices: Sequence[PanelChoice], mode: PanelMode) -> Stage:
    return Stage(f"panel_{mode.value}", "instance", sum(c.reason is None for c in choices), tuple(
        Excluded(c.instance_id, c.reason, c.detail) for c in choices if c.reason))


def candidate_rows(bench: Benchmark, pool: Sequence[CandidatePatch], choices: Sequence[PanelChoice],
                   flow_run: str) -> list[dict]:
    """The `candidates` rows: every candidate with its label or reason, its state's hash
    (as replay computes it) and whether a panel holds it."""
    in_panel = {(c.instance_id, cid) for c in choices for cid in c.chosen}
    rows = []
    for instance in bench.instances.values():
        mine = [c for c in pool if c.instance_id == instance.id]
        states = candidate_states(instance, {c.candidate_id: c.patch for c in mine})
        rows += [candidate_row(c, flow_run, states[c.candidate_id].hash, (c.instance_id, c.candidate_id) in in_panel)
                 for c in mine]
    return rows


def record(store: Store, bench: Benchmark, pool: Sequence[CandidatePatch], choices: Sequence[PanelChoice],
           funnel: Funnel) -> None:
    """Store a collect's `candidates` and `funnel` (the one writer of both)."""
    store.append("candidates", pa.Table.from_pylist(candidate_rows(bench, pool, choices, funnel.flow_run),
                                                    schema=SCHEMAS["candidates"]))
    store.append("funnel", pa.Table.from_pylist(funnel.rows(), schema=SCHEMAS["funnel"]))


def restored(pool: Sequence[CandidatePatch]) -> dict[str, int]:
    """How many labelled candidates changed each piece of test infrastructure (put back
    before their checks ran: tasks/execution/infrastructure.py), by file name; said in the
    log, since the count over a real panel is a finding of its own."""
    counts: dict[str, int] = {}
    touched = [c for c in pool if c.restored]
    for cand in touched:
        for rel in cand.restored:
            name = rel.rsplit("/", 1)[-1]
            counts[name] = counts.get(name, 0) + 1
    if touched:
        log.info("%d of %d candidates changed test infrastructure, put back before their checks (%s): %s",
                 len(touched), len(pool), ", ".join(f"{n} ×{k}" for n, k in sorted(counts.items())),
                 ", ".join(f"{c.instance_id}/{c.candidate_id} {c.label}" for c in touched[:10])
                 + (f" and {len(touched) - 10} more" if len(touched) > 10 else ""))
    return counts


def agreement(pool: Sequence[CandidatePatch]) -> tuple[int, int]:
    """(agreeing, compared): our labels against the sources' own, where they gave one."""
    compared = [c for c in pool if c.official_label and c.label]
    for cand in compared:
        if cand.label != cand.official_label:
            log.info("label differs from its source: %s/%s is %s, %s says %s (failed: %s)", cand.instance_id,
                     cand.candidate_id, cand.label, cand.origin, cand.official_label, ", ".join(cand.failed_checks))
    return sum(c.label == c.official_label for c in compared), len(compared)
