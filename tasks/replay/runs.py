"""Replay: plan every (configuration, instance, state) run, and execute batches of them.

Plain functions, no Prefect: the flow wires them (flows/replay.py). A run's key is content:
configuration, suite hash, state hash, environment hash and execution policy, so a rerun
skips what the store holds, and the buggy and reference runs of a suite are planned once
whatever the number of candidates.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pyarrow as pa

from testprism.storage import SCHEMAS, Store
from testprism.tasks.model.benchmark import Benchmark, EnvironmentSpec, Instance, Suite
from testprism.tasks.sandbox.environment import EnvironmentBuildError
from testprism.tasks.model.hashing import digest
from testprism.tasks.model.outcome import RETRYABLE, Outcome, Reason, Verdict
from testprism.tasks.sandbox.base import Limits, RunRequest, SandboxBackend, SandboxError, backend_class
from testprism.tasks.model.state import State, materialise, states_of
from testprism.tasks.execution.verdict import Policy, judge
from testprism.tasks.model.workdir import WorkPaths

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunSpec:
    """One planned run: a suite (or the reason there is none) on one state."""

    run_key: str
    content_key: str  # the same work under another configuration shares this
    configuration: str
    instance: Instance
    state: State
    suite: Suite | None
    unrunnable: Reason | None  # missing_suite | invalid_suite: recorded without running

    @property
    def runs_in_sandbox(self) -> bool:
        return self.unrunnable is None


@dataclass(frozen=True)
class ExecutionOptions:
    """Everything a batch needs to run anywhere (a Dask worker included): picklable."""

    backend: str
    work_root: Path
    store_root: Path
    limits: Limits = Limits()
    policy: Policy = Policy()
    concurrency: int = 1
    trusted: bool = False
    unsafe: bool = False
    flush_every: int = 64
    #: When the replay began. A batch skips runs stored since then: when a Dask worker dies
    #: mid-batch, the scheduler gives the batch to another worker, which then redoes only
    #: what the dead one had not stored (rows carry their start time; workers of one
    #: cluster are assumed to keep their clocks in step).
    replay_started: datetime | None = None

    @property
    def policy_hash(self) -> str:
        return digest("policy", self.limits.key, self.policy.key)


def plan(benchmark: Benchmark, options: ExecutionOptions) -> list[RunSpec]:
    """Every run of the benchmark: configurations × instances × states."""
    specs: list[RunSpec] = []
    for instance in benchmark.instances.values():
        states = states_of(instance)
        env_hash = instance.spec.environment.key
        for configuration in benchmark.configurations:
            suite = benchmark.suites.get((configuration, instance.id))
            unrunnable = None
            if suite is None:
                invalid = (configuration, instance.id) in benchmark.suite_errors
                unrunnable = Reason.INVALID_SUITE if invalid else Reason.MISSING_SUITE
            suite_hash = suite.hash if suite else digest(str(unrunnable), configuration, instance.id)
            for state in states:
                content = digest("run", suite_hash, state.hash, env_hash, options.policy_hash)
                specs.append(RunSpec(digest(configuration, instance.id, content), content, configuration, instance, state, suite, unrunnable))
    return specs


class Batch:
    """Runs executed together as one coarse task.

    A plain class on purpose: Prefect walks dataclasses and collections in task parameters
    (looking for futures) and rebuilds them on the way to a Dask worker; an opaque object
    travels as one pickle."""

    __slots__ = ("specs",)

    def __init__(self, specs: list[RunSpec]) -> None:
        self.specs = specs

    def __len__(self) -> int:
        return len(self.specs)


def batches(specs: list[RunSpec], target_runs: int) -> list[Batch]:
    """Cut the plan into batches of about `target_runs`, in plan order, so the runs of one
    instance (which share state trees and an environment) mostly land in the same batch."""
    size = max(1, target_runs)
    return [Batch(specs[i : i + size]) for i in range(0, len(specs), size)]


def suite_hash_of(spec: RunSpec) -> str:
    return spec.suite.hash if spec.suite else digest(str(spec.unrunnable), spec.configuration, spec.instance.id)


def row(spec: RunSpec, verdict: Verdict, options: ExecutionOptions, backend: str, isolation: str, started: datetime,
        patch_method: str | None = None) -> dict:
    """One `runs` row (storage/schema.py RUNS)."""
    return {
        "run_key": spec.run_key,
        "instance_id": spec.instance.id,
        "source": spec.instance.source,
        "configuration": spec.configuration,
        "state": spec.state.kind,
        "candidate_id": spec.state.candidate_id,
        "label": spec.state.label,
        "outcome": verdict.outcome.value,
        "reason": verdict.reason.value if verdict.reason else None,
        "exit_code": verdict.exit_code,
        "duration_s": round(verdict.duration_s, 4),
        "attempts": verdict.attempts,
        "stdout_tail": verdict.output_tail,
        "started_at": started,
        "suite_hash": suite_hash_of(spec),
        "state_hash": spec.state.hash,
        "environment_hash": spec.instance.spec.environment.key,
        "policy_hash": options.policy_hash,
        "backend": backend,
        "isolation": isolation,
        "tests": [{"name": t.name, "outcome": t.outcome, "message": t.message} for t in verdict.tests],
        "patch_method": patch_method,
        "suite_patch_method": verdict.suite_patch_method or None,
    }


def unrunnable_rows(specs: Iterable[RunSpec], options: ExecutionOptions) -> list[dict]:
    """Rows for runs that cannot start (no suite, or a rejected one): `E` without a sandbox."""
    now = datetime.now(UTC)
    return [
        row(s, Verdict(Outcome.ERROR, s.unrunnable, None, 0.0, 0, ""), options, "none", "none", now)
        for s in specs if s.unrunnable is not None
    ]


class Environments:
    """The environments a batch prepared, failures included: an environment that cannot be
    built makes every run of it `E`/environment_failed with the build's message, once, and
    the batch goes on with the others (a build is not attempted again for each run). One
    lock per environment: runs of a ready environment never wait for another's build."""

    def __init__(self, backend: SandboxBackend) -> None:
        self.backend = backend
        self._done: dict[str, Path | EnvironmentBuildError] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    def prepare(self, spec: EnvironmentSpec) -> Path | EnvironmentBuildError:
        """The environment's handle, or why it cannot be built. SandboxError (the sandbox
        broke while building) is raised: infrastructure, tried again by the next run."""
        with self._lock:
            key_lock = self._locks.setdefault(spec.key, threading.Lock())
        with key_lock:
            if spec.key not in self._done:
                try:
                    self._done[spec.key] = self.backend.prepare(spec)
                except EnvironmentBuildError as exc:
                    log.error("environment %s cannot be built; its runs are E/environment_failed: %s", spec.key, exc)
                    self._done[spec.key] = exc
            return self._done[spec.key]


def _run_one(spec: RunSpec, environments: Environments, options: ExecutionOptions) -> tuple[Verdict, str]:
    """The verdict of one run, and how the state's patch applied."""
    tree = materialise(spec.instance, spec.state, WorkPaths(options.work_root), options.policy.patch_fuzz)
    if not tree.patch.applied:
        return Verdict(Outcome.ERROR, Reason.PATCH_FAILED, None, 0.0, 1, tree.patch.message), tree.patch.method
    try:
        environment = environments.prepare(spec.instance.spec.environment)
    except SandboxError as exc:  # infrastructure: recorded as such, redone by the next replay
        return Verdict(Outcome.ERROR, Reason.SANDBOX_ERROR, None, 0.0, 1, str(exc)[-2000:]), tree.patch.method
    if isinstance(environment, EnvironmentBuildError):
        return Verdict(Outcome.ERROR, Reason.ENVIRONMENT_FAILED, None, 0.0, 0, str(environment)[-2000:]), tree.patch.method
    assert spec.suite is not None
    request = RunRequest(
        tree=tree.tree, suite_folder=spec.suite.folder, suite_files=spec.suite.files, command=spec.suite.entry,
        environment=environment, limits=options.limits, suite_patch=spec.suite.patch,
        patch_fuzz=options.policy.patch_fuzz,
    )
    return judge(lambda: environments.backend.run(request), options.policy, spec.suite.tests), tree.patch.method


@dataclass
class BatchSummary:
    executed: int = 0
    reused: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)


def execute_batch(
    specs: list[RunSpec],
    options: ExecutionOptions,
    on_done: Callable[[RunSpec, Verdict], None] | None = None,
) -> BatchSummary:
    """Run a batch on a bounded pool and write its rows to the store as it goes.

    Rows are flushed every `flush_every` runs, so a killed batch loses at most that many
    runs, which a resumed replay redoes. Work shared by several configurations (the same
    content key) runs once.
    """
    store = Store(options.store_root)
    if options.replay_started is not None:
        done = stored_since(store, options.replay_started)
        todo = [s for s in specs if s.run_key not in done]
        if len(todo) < len(specs):
            log.info("batch: %d of its %d runs already stored by this replay (a retried batch)",
                     len(specs) - len(todo), len(specs))
        specs = todo
    backend = backend_class(options.backend)(WorkPaths(options.work_root), trusted=options.trusted, unsafe=options.unsafe)
    summary = BatchSummary()
    pending: list[dict] = []

    def flush() -> None:
        if pending:
            store.append("runs", pa.Table.from_pylist(pending, schema=SCHEMAS["runs"]))
            pending.clear()

    environments = Environments(backend)

    def work(spec: RunSpec) -> tuple[RunSpec, tuple[Verdict, str], datetime]:
        started = datetime.now(UTC)
        return spec, _run_one(spec, environments, options), started

    twins: dict[str, list[RunSpec]] = {}
    for spec in specs:
        twins.setdefault(spec.content_key, []).append(spec)
    try:
        with ThreadPoolExecutor(max_workers=max(1, options.concurrency)) as pool:
            for spec, (verdict, patch_method), started in pool.map(work, [group[0] for group in twins.values()]):
                summary.executed += 1
                for twin in twins[spec.content_key]:
                    summary.reused += twin is not spec
                    summary.outcomes[verdict.outcome.value] = summary.outcomes.get(verdict.outcome.value, 0) + 1
                    pending.append(row(twin, verdict, options, backend.name, backend.isolation, started, patch_method))
                    if on_done:
                        on_done(twin, verdict)
                if len(pending) >= options.flush_every:
                    flush()
    finally:
        flush()
        backend.close()
    return summary


#: unresolved outcomes that replaying cannot change: never retried
DETERMINISTIC = frozenset({Reason.PATCH_FAILED, Reason.MISSING_SUITE, Reason.INVALID_SUITE, Reason.SUITE_NOT_INSTALLED})


def finished_keys(store: Store, retry_errors: bool = False) -> set[str]:
    """Keys whose newest stored row settles the run. Infrastructure errors (RETRYABLE) never
    do, so a resumed replay redoes them; with `retry_errors` every `E` whose reason is not
    deterministic (timeouts, unstable runs, output overflow) is redone as well."""
    retry = {r.value for r in (set(Reason) - DETERMINISTIC if retry_errors else RETRYABLE)}
    newest = (
        store.scan("runs").select("run_key", "reason", "started_at")
        .sort("started_at", descending=True).unique("run_key", keep="first").collect()
    )
    return {k for k, reason in zip(newest["run_key"], newest["reason"]) if reason not in retry}


def stored_since(store: Store, since: datetime) -> set[str]:
    """Keys of the runs stored with a start at or after `since`."""
    rows = store.scan("runs").filter(pl.col("started_at") >= since).select("run_key").collect()
    return set(rows["run_key"])


def pending_runs(specs: list[RunSpec], finished: set[str]) -> list[RunSpec]:
    """Runs whose key is not settled in the store yet."""
    return [s for s in specs if s.run_key not in finished]


def panel_rows(benchmark: Benchmark) -> list[dict]:
    """The `panels` dataset: every state of every instance (the released pools)."""
    return [
        {"instance_id": i.id, "source": i.source, "state": s.kind, "candidate_id": s.candidate_id, "label": s.label,
         "state_hash": s.hash}
        for i in benchmark.instances.values() for s in states_of(i)
    ]


def suite_rows(benchmark: Benchmark) -> list[dict]:
    """The `suites` dataset: which configuration has a suite for which instance."""
    out = []
    for configuration in benchmark.configurations:
        for instance_id in benchmark.instances:
            suite = benchmark.suites.get((configuration, instance_id))
            out.append({"configuration": configuration, "instance_id": instance_id,
                        "suite_hash": suite.hash if suite else "", "present": suite is not None})
    return out


def record_plan(benchmark: Benchmark, store: Store) -> None:
    """Write `panels` and `suites` idempotently (part names are content hashes)."""
    for name, rows in (("panels", panel_rows(benchmark)), ("suites", suite_rows(benchmark))):
        table = pa.Table.from_pylist(rows, schema=SCHEMAS[name])
        store.append(name, table, part=digest(name, *(str(sorted(r.items())) for r in rows)))
