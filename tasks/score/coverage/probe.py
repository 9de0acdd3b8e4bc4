"""The coverage pass: one measurement per configuration × instance on the reference,
run by the one executor (tasks/execution/batch.py), stored in `scores/coverage`. How a
run is instrumented and its report read depends on the instance's language
(tasks/score/coverage/toolchains.py); a language without a toolchain is `not_measured`.

Runs that could not measure (timeout, sandbox error, a failed patch or environment) leave
ΔC and EC null with a `reason`; a configuration without a suite for the instance executed
nothing: 0. Rows are keyed by content (suite, reference state, environment, limits, this
module's helper files), so `measure_coverage` skips what `scores/coverage` already holds.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import polars as pl
import pyarrow as pa

from testprism.storage import SCHEMAS, Store
from testprism.tasks.model.benchmark import Benchmark, Instance, Suite, load_benchmark
from testprism.tasks.model.hashing import digest
from testprism.tasks.sandbox.base import (
    ExecResult,
    Limits,
    RunRequest,
    SandboxBackend,
    SandboxError,
    SuiteNotInstalled,
    backend_class,
)
from testprism.tasks.execution.batch import Environments, ExecutionOptions, Job, execute
from testprism.tasks.execution.build import state_tree
from testprism.tasks.execution.verdict import MESSAGE_TAIL, Attempts
from testprism.tasks.model.outcome import Reason, Verdict
from testprism.tasks.model.state import State, materialise, states_of
from testprism.tasks.model.workdir import WorkPaths, default_work_root

from testprism.tasks.score.coverage.changes import ChangedFile, CoverageCounts, score_changes
from testprism.tasks.score.coverage.instrument import COMMAND
from testprism.tasks.score.coverage.toolchains import Toolchain, toolchain_for

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CoverageSpec:
    """One planned measurement: a configuration's suite (or why there is none) on an
    instance's reference."""

    coverage_key: str
    configuration: str
    instance: Instance
    reference: State
    suite: Suite | None
    unrunnable: Reason | None  # missing_suite | invalid_suite


def plan_coverage(benchmark: Benchmark, limits: Limits) -> list[CoverageSpec]:
    """One measurement per configuration × instance, keyed by content: the same suite on
    the same reference in the same environment is measured once, whatever the
    configuration's name."""
    specs = []
    for instance in benchmark.instances.values():
        reference = next(s for s in states_of(instance) if s.kind == "reference")
        toolchain = toolchain_for(instance.spec.language)
        if toolchain is None:
            environment, helpers = instance.spec.environment.key, digest("not-measured", instance.spec.language)
        else:
            environment, helpers = toolchain.environment(instance.spec.environment).key, toolchain.helpers_hash
        for configuration in benchmark.configurations:
            suite, unrunnable = benchmark.suite_of(configuration, instance.id)
            suite_part = suite.hash if suite else digest(unrunnable or "", configuration)
            key = digest("coverage", instance.id, suite_part, reference.hash, environment, limits.key, helpers)
            specs.append(CoverageSpec(key, configuration, instance, reference, suite, unrunnable))
    return specs


@dataclass(frozen=True)
class Measured:
    """What one measurement left: the counts, or why there are none, and the run if any."""

    counts: CoverageCounts | None
    reason: Reason | None = None
    result: ExecResult | None = None


def _row(spec: CoverageSpec, measured: Measured) -> dict:
    """One `coverage` row (storage/schema.py COVERAGE)."""
    counts, result = measured.counts, measured.result
    return {
        "configuration": spec.configuration,
        "instance_id": spec.instance.id,
        "source": spec.instance.source,
        "delta_c": counts.delta_c if counts else None,
        "ec": counts.ec if counts else None,
        "changed_lines": counts.changed_lines if counts else None,
        "covered_lines": counts.covered_lines if counts else None,
        "changed_functions": counts.changed_functions if counts else None,
        "entered_functions": counts.entered_functions if counts else None,
        "missed_lines": counts.missed_lines if counts else [],
        "missed_functions": counts.missed_functions if counts else [],
        "reason": measured.reason.value if measured.reason else None,
        "exit_code": result.exit_code if result else None,
        "duration_s": round(result.duration_s, 4) if result else None,
        "coverage_key": spec.coverage_key,
    }


def measure_one(spec: CoverageSpec, changes: tuple[ChangedFile, ...], environments: Environments,
                options: ExecutionOptions, toolchain: Toolchain) -> Measured:
    """Measure one suite on its instance's reference, instrumented by `toolchain`."""
    if spec.unrunnable is not None:
        return Measured(score_changes(changes, {}), spec.unrunnable)
    assert spec.suite is not None
    tree = state_tree(spec.instance, spec.reference, environments, options.work, options.limits)
    if isinstance(tree, Verdict):
        return Measured(None, tree.reason)
    coverage_spec = toolchain.environment(spec.instance.spec.environment)
    environment = environments.ready(coverage_spec)
    if isinstance(environment, Verdict):
        log.error("%s: coverage environment: %s", spec.instance.id, environment.output_tail)
        return Measured(None, Reason.ENVIRONMENT_FAILED)
    folder, files = toolchain.suite(spec.suite, changes, tree.tree, options.work)
    request = RunRequest(
        tree=tree.tree, suite_folder=folder, suite_files=files, command=COMMAND, environment=environment,
        limits=options.limits, suite_patch=spec.suite.patch,
    )
    try:
        result = Attempts(lambda: environments.run(coverage_spec, request), options.policy.infra_retries)()
    except SuiteNotInstalled as exc:
        log.error("%s/%s: coverage run: %s", spec.configuration, spec.instance.id, exc)
        return Measured(None, Reason.SUITE_NOT_INSTALLED)
    except SandboxError as exc:
        log.error("%s/%s: coverage run: %s", spec.configuration, spec.instance.id, exc)
        return Measured(None, Reason.SANDBOX_ERROR)
    if result.timed_out or result.output_exceeded:
        return Measured(None, Reason.TIMEOUT if result.timed_out else Reason.OUTPUT_LIMIT, result)
    try:
        measured = toolchain.parse(result.junit_xml or b"", tree.tree, changes)
    except ValueError as exc:
        log.error("%s/%s: no coverage report (%s); output tail:\n%s", spec.configuration, spec.instance.id, exc,
                  result.output_tail[-MESSAGE_TAIL:])
        return Measured(None, Reason.COVERAGE_FAILED, result)
    return Measured(score_changes(changes, measured), None, result)


def _reference_changes(spec: CoverageSpec, toolchain: Toolchain, work: WorkPaths) -> tuple[ChangedFile, ...] | None:
    """What the instance's reference changes, or None when its patch does not apply."""
    tree = materialise(spec.instance, spec.reference, work)
    if not tree.patch.applied:
        return None
    return toolchain.analyse(tree.tree, spec.instance.reference)


def _table(rows: Iterable[dict]) -> pl.DataFrame:
    arrow = pa.Table.from_pylist(list(rows), schema=SCHEMAS["coverage"])
    return pl.from_arrow(arrow).sort("configuration", "instance_id")


class CoverageJob(Job[CoverageSpec, Measured]):
    """The coverage pass as a job of the one executor (tasks/execution/batch.py).

    `scores/coverage` is a score table, rewritten whole (not appended): each write holds
    every measurement so far, the stored ones included, so a killed pass resumes."""

    dataset = "coverage"

    def __init__(self, options: ExecutionOptions, specs: Sequence[CoverageSpec], done: dict[str, dict],
                 changes: dict[str, tuple[ChangedFile, ...] | None]) -> None:
        super().__init__(options)
        self._specs = specs
        self.done = done
        self._changes = changes

    def content_key(self, unit: CoverageSpec) -> str:
        return unit.coverage_key

    def attempt(self, unit: CoverageSpec, environments: Environments, options: ExecutionOptions) -> Measured:
        toolchain = toolchain_for(unit.instance.spec.language)
        if toolchain is None:
            return Measured(None, Reason.NOT_MEASURED)
        found = self._changes[unit.instance.id]
        if found is None:
            return Measured(None, Reason.PATCH_FAILED)
        if not found:
            return Measured(None, toolchain.no_change)
        return measure_one(unit, found, environments, options, toolchain)

    def row(self, unit: CoverageSpec, result: Measured, started: datetime, backend: SandboxBackend) -> dict:
        return _row(unit, result)

    def table(self) -> pl.DataFrame:
        """Every planned measurement done so far, each under its own configuration."""
        return _table(
            {**self.done[spec.coverage_key], "configuration": spec.configuration}
            for spec in self._specs if spec.coverage_key in self.done
        )

    def write(self, store: Store, rows: list[dict]) -> None:
        self.done.update((row["coverage_key"], row) for row in rows)
        store.write_table("coverage", self.table().to_arrow())


def measure_coverage(
    benchmark_root: Path | str,
    store_root: Path | str,
    work_root: Path | str | None = None,
    backend: str = "local",
    *,
    configurations: tuple[str, ...] = (),
    limits: Limits = Limits(),
    concurrency: int | None = None,
    trusted: bool = False,
    unsafe: bool = False,
    checkpoint_every: int = 32,
) -> pl.DataFrame:
    """ΔC and EC of every suite of the benchmark; writes and returns `scores/coverage`.

    Rows already in the store's `scores/coverage` with a current key are kept and not
    measured again; rows of suites or references that changed since are dropped. The
    table is rewritten every `checkpoint_every` measurements, so a killed pass resumes.
    `trusted`/`unsafe` mean what they mean for the replay (the backend's isolation).
    """
    benchmark = load_benchmark(Path(benchmark_root), configurations)
    store = Store(store_root)
    options = ExecutionOptions(
        backend=backend, work_root=Path(work_root) if work_root else default_work_root(), store_root=store.paths.root,
        limits=limits, concurrency=concurrency or backend_class(backend).default_concurrency(), trusted=trusted,
        unsafe=unsafe, flush_every=checkpoint_every,
    )
    specs = plan_coverage(benchmark, limits)
    done: dict[str, dict] = {}
    if store.paths.score_table("coverage").is_file():
        wanted = {s.coverage_key for s in specs}
        done = {row["coverage_key"]: row for row in store.read_table("coverage").iter_rows(named=True)
                if row["coverage_key"] in wanted}
    todo = [spec for spec in specs if spec.coverage_key not in done]
    log.info("coverage: %d measurements planned, %d stored, %d to run", len(specs), len(done),
             len({s.coverage_key for s in todo}))
    changes: dict[str, tuple[ChangedFile, ...] | None] = {}
    for spec in todo:
        toolchain = toolchain_for(spec.instance.spec.language)
        if toolchain is not None and spec.instance.id not in changes:
            changes[spec.instance.id] = _reference_changes(spec, toolchain, options.work)
    job = CoverageJob(options, specs, done, changes)
    execute(job, todo, options)
    job.write(store, [])  # the stored rows of plans that changed are dropped even when nothing ran
    return job.table()
