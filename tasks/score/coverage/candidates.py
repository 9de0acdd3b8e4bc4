"""Coverage on an accepted invalid candidate's own state, for the failure taxonomy.

A suite that accepts (P) an invalid candidate fails the instance jointly (S_i = 0). Whether
that is a coverage gap or a faulty check depends on whether the suite executed the lines
where *that candidate* differs from the reference (docs/report.md, "Failure taxonomy"), so
those lines are measured on the candidate's state, for exactly those runs:

- which runs: the scored runs (`latest_runs`, as the leaderboard and the taxonomy) of an
  invalid candidate with outcome P; every one of them has S_i = 0, so no other cell needs it;
- which lines: the diff from the reference's tree to the candidate's (both materialised,
  read without following a link by tasks/sandbox/outputs.py, so a link a candidate patch
  created is never read), its target side read by the one diff reader's coverage rule
  (tasks/model/patches.py, "following") in the candidate's numbering, then to statements
  by the toolchain's `analyse` on the candidate's tree, exactly as the reference pass reads
  the reference's changed lines;
- how: the reference pass's own machinery (tasks/score/coverage/probe.py: `CoverageSpec`
  on the candidate's state, `measure_one`, the one executor through `run_pass`), into
  `scores/candidate_coverage`, keyed by suite, reference, candidate, environment, limits
  and helper files; a re-score reads the table and runs nothing.
"""

from __future__ import annotations

import logging
from datetime import datetime
from pathlib import Path
from typing import Unpack

import polars as pl

from testprism.storage import Store
from testprism.tasks.model.benchmark import Benchmark
from testprism.tasks.model.hashing import digest
from testprism.tasks.model.state import materialise, states_of
from testprism.tasks.model.workdir import WorkPaths
from testprism.tasks.sandbox.base import Limits, SandboxBackend
from testprism.tasks.sandbox.outputs import outputs_from_folder
from testprism.tasks.model.changes import ChangedFile
from testprism.tasks.score.coverage.probe import (
    CoverageJob,
    CoverageSpec,
    Measured,
    PassOptions,
    instrumentation_key,
    measurement_columns,
    open_pass,
    pass_todo,
    run_pass,
)
from testprism.tasks.score.coverage.toolchains import Toolchain
from testprism.storage.readers import latest_runs

log = logging.getLogger(__name__)


def accepted_invalid(store: Store) -> pl.DataFrame:
    """`configuration, instance_id, candidate_id` of every scored run that accepted an
    invalid candidate (an accepted invalid candidate makes R_i < 1, hence S_i = 0)."""
    return (
        latest_runs(store)
        .filter((pl.col("label") == "invalid") & (pl.col("outcome") == "P"))
        .select("configuration", "instance_id", "candidate_id")
        .sort("configuration", "instance_id", "candidate_id")
    )


def plan_candidate_coverage(benchmark: Benchmark, accepted: pl.DataFrame, limits: Limits) -> list[CoverageSpec]:
    """One measurement per accepted invalid candidate whose instance, candidate and suite
    the benchmark still holds (a run of something the benchmark no longer has cannot be
    measured; the taxonomy then keeps the approximation for it)."""
    specs = []
    for configuration, instance_id, candidate_id in accepted.iter_rows():
        if configuration not in benchmark.configurations:
            continue  # a configuration left out of this pass (`configurations`)
        instance = benchmark.instances.get(instance_id)
        suite, _ = benchmark.suite_of(configuration, instance_id)
        states = states_of(instance) if instance else []
        candidate = next((s for s in states if s.kind == "candidate" and s.candidate_id == candidate_id), None)
        if instance is None or suite is None or candidate is None:
            log.warning("candidate coverage: %s/%s/%s is not in the benchmark: not measured", configuration,
                        instance_id, candidate_id)
            continue
        reference = next(s for s in states if s.kind == "reference")
        environment, helpers = instrumentation_key(instance)
        key = digest("candidate-coverage", instance_id, suite.hash, reference.hash, candidate.hash,
                     environment, limits.key, helpers)
        specs.append(CoverageSpec(key, configuration, instance, candidate, suite, None))
    return specs


def candidate_changes(spec: CoverageSpec, toolchain: Toolchain, work: WorkPaths) -> tuple[ChangedFile, ...] | None:
    """The lines where the candidate's tree differs from the reference's, in the
    candidate's numbering and statements; None when either patch does not apply."""
    reference = materialise(spec.instance, next(s for s in states_of(spec.instance) if s.kind == "reference"), work)
    candidate = materialise(spec.instance, spec.state, work)
    if not (reference.patch.applied and candidate.patch.applied):
        return None
    difference = outputs_from_folder(candidate.tree, reference.tree)
    if difference.skipped:  # links, binaries, .git paths, oversized files: no line of theirs counts
        log.info("%s/%s: %d paths not compared with the reference, e.g. %s", spec.instance.id,
                 spec.state.candidate_id, len(difference.skipped), "; ".join(difference.skipped[:3]))
    return toolchain.analyse(candidate.tree, difference.program_diff)


def _row(spec: CoverageSpec, measured: Measured) -> dict:
    """One `candidate_coverage` row (storage/schema.py CANDIDATE_COVERAGE)."""
    counts = measured.counts
    return {
        **measurement_columns(spec, measured),
        "candidate_id": spec.state.candidate_id,
        "changed_lines": counts.changed_lines if counts else None,
        "covered_lines": counts.covered_lines if counts else None,
        "executed_lines": counts.executed_lines if counts else [],
        "missed_lines": counts.missed_lines if counts else [],
    }


class CandidateCoverageJob(CoverageJob):
    """The coverage pass on accepted invalid candidates: `scores/candidate_coverage`."""

    dataset = "candidate_coverage"

    def row(self, unit: CoverageSpec, result: Measured, started: datetime, backend: SandboxBackend) -> dict:
        return _row(unit, result)

    def labelled(self, row: dict, spec: CoverageSpec) -> dict:
        return {**row, "configuration": spec.configuration, "candidate_id": spec.state.candidate_id}


def candidate_coverage_pass(benchmark_root: Path | str, store_root: Path | str, work_root: Path | str | None = None,
                            backend: str = "local", **options: Unpack[PassOptions]
                            ) -> tuple[CandidateCoverageJob, Store, list[CoverageSpec]]:
    """The pass over the invalid candidates each suite was scored as accepting (it reads the
    store's runs: run it after the replay): its job, store and what is left to measure."""
    benchmark, store, execution = open_pass(benchmark_root, store_root, work_root, backend, options)
    specs = plan_candidate_coverage(benchmark, accepted_invalid(store), execution.limits)
    job = CandidateCoverageJob(execution, specs, {}, {})
    return job, store, pass_todo(job, store, specs,
                                 lambda spec, toolchain: candidate_changes(spec, toolchain, execution.work))


def measure_candidate_coverage(benchmark_root: Path | str, store_root: Path | str, work_root: Path | str | None = None,
                               backend: str = "local", **options: Unpack[PassOptions]) -> pl.DataFrame:
    """Each suite under coverage on every invalid candidate it was scored as accepting;
    writes and returns `scores/candidate_coverage` (kept rows, resumption and options as
    probe.measure_coverage). Reads the store's runs: run it after the replay."""
    return run_pass(*candidate_coverage_pass(benchmark_root, store_root, work_root, backend, **options))
