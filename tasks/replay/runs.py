"""Replay: plan every (configuration, instance, state) run, and execute batches of them.

Plain functions, no Prefect: the flow wires them (flows/replay.py). A run's key is content:
configuration, suite hash, state hash, environment hash and execution policy, so a rerun
skips what the store holds, and the buggy and reference runs of a suite are planned once
whatever the number of candidates.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import polars as pl
import pyarrow as pa

from testprism.storage import SCHEMAS, Store
from testprism.tasks.execution.batch import BatchSummary, Environments, ExecutionOptions, Job, execute, secret_order
from testprism.tasks.execution.build import state_tree
from testprism.tasks.execution.parcel import Parcel, unpack
from testprism.tasks.execution.verdict import RunResult, failed
from testprism.tasks.model.benchmark import Benchmark, Instance, Suite, run_limits
from testprism.tasks.model.hashing import digest
from testprism.tasks.model.outcome import DETERMINISTIC, RETRYABLE, RUN_REASONS, Outcome, Reason, Verdict
from testprism.tasks.model.state import State, states_of
from testprism.tasks.sandbox.base import RunRequest, SandboxBackend

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


def run_spec(configuration: str, instance: Instance, state: State, suite: Suite | None, unrunnable: Reason | None,
             options: ExecutionOptions, keys: tuple[str, str] | None = None) -> RunSpec:
    """The one way a run is keyed: by what it runs (suite, state, environment, policy), so
    the same work under another configuration, batch or flow (crossval's) is the same run.
    `keys`: the instance's environment key and policy hash (`instance_keys`), when the caller
    keys many runs of one instance (each is a digest: computing them once per run cost plans ~8%)."""
    suite_hash = suite.hash if suite else digest(str(unrunnable), configuration, instance.id)
    environment_key, policy_hash = keys or instance_keys(instance, options)
    content = digest("run", suite_hash, state.hash, environment_key, policy_hash)
    return RunSpec(digest(configuration, instance.id, content), content, configuration, instance, state, suite,
                   unrunnable)


def instance_keys(instance: Instance, options: ExecutionOptions) -> tuple[str, str]:
    """The instance's environment key and the policy hash its runs are keyed by: with the
    instance's own `[limits]`, which its runs get (`run_limits`), in it; without any, the
    policy hash as it is, so the keys of other instances' runs are unchanged."""
    if instance.spec.limits is None:
        return instance.spec.environment.key, options.policy_hash
    return instance.spec.environment.key, digest(options.policy_hash, run_limits(instance, options.limits).key)


def plan(benchmark: Benchmark, options: ExecutionOptions) -> list[RunSpec]:
    """Every run of the benchmark: configurations × instances × states."""
    specs: list[RunSpec] = []
    for instance in benchmark.instances.values():
        states = states_of(instance)
        keys = instance_keys(instance, options)
        for configuration in benchmark.configurations:
            suite, unrunnable = benchmark.suite_of(configuration, instance.id)
            specs += [run_spec(configuration, instance, state, suite, unrunnable, options, keys) for state in states]
    return specs


def run_order(specs: list[RunSpec], secret: bytes) -> list[RunSpec]:
    """The runs in an order drawn from `secret`, to be cut into batches: the instances in a
    drawn order, each one's runs kept together (they share state trees and an environment,
    so batches stay local), and inside an instance its suites and each suite's states in a
    drawn order (a suite's runs stay together: early stop's `group_of`). Wherever a batch's
    end cuts an instance, which states fall on either side is drawn, not instance.toml's
    order (buggy, reference, then valid before invalid in the bundled instances); the
    batch then runs its units in an order of its own (tasks/execution/batch.py `execute`)."""
    instances: dict[str, dict[tuple[str, str], list[RunSpec]]] = {}
    for spec in specs:
        instances.setdefault(spec.instance.id, {}).setdefault(group_of(spec), []).append(spec)
    ordered: list[RunSpec] = []
    for instance_id in secret_order(instances, secret, lambda i: f"instance {i}"):
        groups = instances[instance_id]
        for group in secret_order(groups, secret, lambda g: f"suite {g[0]} {g[1]}"):
            ordered += secret_order(groups[group], secret, lambda s: f"run {s.run_key}")
    return ordered


def suite_hash_of(spec: RunSpec) -> str:
    return spec.suite.hash if spec.suite else digest(str(spec.unrunnable), spec.configuration, spec.instance.id)


def row(spec: RunSpec, result: RunResult, options: ExecutionOptions, backend: str, isolation: str,
        started: datetime) -> dict:
    """One `runs` row (storage/schema.py RUNS)."""
    verdict = result.verdict
    return {
        **row_identity(spec, instance_keys(spec.instance, options)[1], started),
        "outcome": verdict.outcome.value,
        "reason": verdict.reason.value if verdict.reason else None,
        "exit_code": verdict.exit_code,
        "duration_s": round(verdict.duration_s, 4),
        "attempts": verdict.attempts,
        "stdout_tail": verdict.output_tail,
        "backend": backend,
        "isolation": isolation,
        "tests": [{"name": t.name, "outcome": t.outcome, "message": t.message} for t in verdict.tests],
        "patch_method": result.patch_method,
        "suite_patch_method": verdict.suite_patch_method or None,
        "replayed": verdict.replayed,
        "confirmation": options.policy.confirmation,
        "reused_from": None,
    }


def unrunnable_rows(specs: Iterable[RunSpec], options: ExecutionOptions) -> list[dict]:
    """Rows for runs that cannot start (no suite, or a rejected one): `E` without a sandbox."""
    now = datetime.now(UTC)
    return [
        row(s, RunResult(Verdict(Outcome.ERROR, s.unrunnable, None, 0.0, 0, "")), options, "none", "none", now)
        for s in specs if s.unrunnable is not None
    ]


def record_unrunnable(specs: Iterable[RunSpec], options: ExecutionOptions) -> int:
    """Store the rows of the runs that cannot start; how many there were."""
    rows = unrunnable_rows(specs, options)
    if rows:
        ReplayJob(options).write(Store(options.store_root), rows)  # the one writer of `runs`
    return len(rows)


def record_reused(pending: list[RunSpec], options: ExecutionOptions,
                  retry_errors: bool = False) -> tuple[list[RunSpec], dict[str, int]]:
    """Store the rows of the pending runs whose work the store already settled
    (`reuse_settled`); the runs left to execute and the reused ones' outcome counts."""
    store = Store(options.store_root)
    todo, rows = reuse_settled(pending, store, retry_errors)
    counts: dict[str, int] = {}
    if rows:
        ReplayJob(options).write(store, rows)  # the one writer of `runs`
        for r in rows:
            counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    return todo, counts


#: the verdict of a run early stop left out: an error, never `P` or `F`
EARLY_STOPPED = Verdict(Outcome.ERROR, Reason.EARLY_STOPPED, None, 0.0, 0, "")
#: stored reasons of an infrastructure error, which decides nothing (`decides`)
_RETRYABLE_REASONS = frozenset(r.value for r in RETRYABLE)


def group_of(spec: RunSpec) -> tuple[str, str]:
    """What early stop decides over: a configuration's suite on one instance."""
    return spec.configuration, spec.instance.id


def decides(state: str, label: str | None, outcome: str, reason: str | None) -> bool:
    """Whether one run's verdict settles its suite's joint success on the instance (S = 0,
    docs/replay.md, "Early stop"): a buggy run that is not `F`, a reference or valid candidate's that is not
    `P`, an invalid candidate's that is not `F`. An infrastructure error decides nothing: a
    later replay redoes it."""
    if reason in _RETRYABLE_REASONS:
        return False
    wanted = "F" if state == "buggy" or label == "invalid" else "P"
    return outcome != wanted


def stopped(spec: RunSpec, options: ExecutionOptions, started: datetime) -> dict:
    """The row of a run early stop did not run."""
    return row(spec, RunResult(EARLY_STOPPED, "none"), options, "none", "none", started)


class ReplayJob(Job[RunSpec, RunResult]):
    """A suite on a state: the state's tree, its environment, the suite's entry, judged;
    with `early_stop`, not run once its suite's joint success on the instance is decided."""

    dataset = "runs"

    def __init__(self, options: ExecutionOptions) -> None:
        super().__init__(options)
        #: this batch's decided pairs; those the store decided before it were stopped by the
        #: flow (`record_early_stopped`)
        self.decided: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def skip(self, twins: list[RunSpec]) -> RunResult | None:
        if not self.options.early_stop:
            return None
        # A replay's batch holds no twins (the flow takes them out: first_of_each_work), so
        # `twins` is one run there; for a job that batches twins of several configurations,
        # the work runs unless every one of them is decided.
        with self._lock:
            if all(group_of(t) in self.decided for t in twins):
                return RunResult(EARLY_STOPPED, "none")
        return None

    def observe(self, twins: list[RunSpec], result: RunResult) -> None:
        verdict = result.verdict
        if not self.options.early_stop or verdict.reason is Reason.EARLY_STOPPED:
            return
        reason = verdict.reason.value if verdict.reason else None
        if decides(twins[0].state.kind, twins[0].state.label, verdict.outcome.value, reason):
            with self._lock:
                self.decided |= {group_of(t) for t in twins}

    def units_here(self, units: Sequence[RunSpec], parcel: Parcel | None) -> Sequence[RunSpec]:
        """With a `parcel` the runs read the benchmark parts it brought, unpacked into this
        worker's work area, instead of the flow's paths; runs this replay stored since it
        began are dropped (a batch Dask gave again after its worker died redoes only what
        the dead one had not stored)."""
        if parcel is not None:
            units = unpack(list(units), parcel, self.options.work)
        if self.options.replay_started is not None and self.options.store_root is not None:
            done = stored_since(Store(self.options.store_root), self.options.replay_started)
            todo = [s for s in units if s.run_key not in done]
            if len(todo) < len(units):
                log.info("batch: %d of its %d runs already stored by this replay (a retried batch)",
                         len(units) - len(todo), len(units))
            units = todo
        return units

    def content_key(self, unit: RunSpec) -> str:
        return unit.content_key

    def attempt(self, unit: RunSpec, environments: Environments, options: ExecutionOptions) -> RunResult:
        tree = state_tree(unit.instance, unit.state, environments, options.work, options.limits,
                          options.policy.patch_fuzz)
        if isinstance(tree, Verdict):
            return RunResult(tree, "none")
        if not tree.patch.applied:
            return RunResult(failed(Reason.PATCH_FAILED, tree.patch.message), tree.patch.method)
        suite = unit.suite
        assert suite is not None
        verdict = environments.judged(unit.instance.spec.environment, options, suite.tests, lambda environment: RunRequest(
            tree=tree.tree, suite_folder=suite.folder, suite_files=suite.files, command=suite.entry,
            environment=environment, limits=run_limits(unit.instance, options.limits), suite_patch=suite.patch,
            patch_fuzz=options.policy.patch_fuzz, warm=warm_route(options),
        ), confirm=options.policy.confirms(unit.state.kind, unit.content_key))
        return RunResult(verdict, tree.patch.method)

    def row(self, unit: RunSpec, result: RunResult, started: datetime, backend: SandboxBackend) -> dict:
        return row(unit, result, self.options, backend.name, backend.isolation, started)

    def outcome(self, result: RunResult) -> str:
        return result.verdict.outcome.value


def warm_route(options: ExecutionOptions) -> bool:
    """Whether a replay's runs may be cloned from their states' warm processes: asked for,
    on any benchmark, every state alike (warming only some would tell a run which kind of
    state it is on). A warm process has run its program's import-time code, an agent's patch
    among them, so it is frozen before its first run and never runs again: each run is a
    clone the harness makes and sets up by injected system calls (tasks/sandbox/warm.py,
    SECURITY.md "Warm states", tests/test_warm.py)."""
    return options.warm


def execute_batch(specs: list[RunSpec], options: ExecutionOptions, parcel: Parcel | None = None) -> BatchSummary:
    """Run a batch of runs (tasks/execution/batch.py), rows written to `runs` as they go
    (`ReplayJob.units_here` says which of them run on this worker).

    Rows are flushed every `flush_every` runs, so a killed batch loses at most that many
    runs, which a resumed replay redoes. Work shared by several configurations (the same
    content key) runs once. Without a store (`options.store_root` None) the rows come back
    with the summary.
    """
    return execute(ReplayJob(options), specs, options, parcel)


def first_of_each_work(specs: list[RunSpec]) -> tuple[list[RunSpec], list[RunSpec]]:
    """The first run of each content key, and the rest (its twins: the same suite, state,
    environment and policy under another configuration), which then take its row instead
    of running, whatever batch it ran in (`reuse_settled`)."""
    seen: set[str] = set()
    firsts, twins = [], []
    for spec in specs:
        (twins if spec.content_key in seen else firsts).append(spec)
        seen.add(spec.content_key)
    return firsts, twins


def unsettled_reasons(retry_errors: bool = False, early_stop: bool = False) -> set[str]:
    """Reasons whose row does not settle its run: infrastructure errors (RETRYABLE), with
    `retry_errors` every `E` whose reason is not deterministic, and runs early stop left
    out, unless this replay stops early too."""
    reasons = RUN_REASONS - DETERMINISTIC if retry_errors else set(RETRYABLE)
    reasons = (reasons - {Reason.EARLY_STOPPED}) if early_stop else (reasons | {Reason.EARLY_STOPPED})
    return {r.value for r in reasons}


def finished_keys(store: Store, retry_errors: bool = False, early_stop: bool = False) -> set[str]:
    """Keys whose newest stored row settles the run. Infrastructure errors (RETRYABLE) never
    do, so a resumed replay redoes them; with `retry_errors` every `E` whose reason is not
    deterministic (timeouts, unstable runs, output overflow) is redone as well; a run early
    stop left out is run by a replay that does not stop early."""
    retry = unsettled_reasons(retry_errors, early_stop)
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


#: what a reused row takes from the row that ran: everything the run decided
_VERDICT_COLUMNS = ("outcome", "reason", "exit_code", "duration_s", "attempts", "stdout_tail", "backend",
                    "isolation", "tests", "patch_method", "suite_patch_method", "replayed", "confirmation")


def reuse_settled(pending: list[RunSpec], store: Store, retry_errors: bool = False) -> tuple[list[RunSpec], list[dict]]:
    """The work never done twice: a pending run whose content (suite, state, environment,
    policy: its content key) the store already settled, under another configuration, in an
    earlier replay or by crossval, takes that row's verdict instead of running; its row
    says whose (`reused_from`). Only settled rows count, as `finished_keys` reads them (an
    infrastructure error, or with `retry_errors` a non-deterministic `E`, is redone). Inside
    one batch the executor shares work the same way (tasks/execution/batch.py). Returns the
    runs still to execute and the rows of the reused ones."""
    wanted = [s for s in pending if s.runs_in_sandbox]
    if not wanted:
        return pending, []
    retry = unsettled_reasons(retry_errors)  # an early-stopped row is no verdict to take
    suites = {suite_hash_of(s) for s in wanted}
    states = {s.state.hash for s in wanted}
    stored = (
        store.scan("runs")
        .filter(pl.col("suite_hash").is_in(list(suites)) & pl.col("state_hash").is_in(list(states)))
        .select("run_key", "started_at", "suite_hash", "state_hash", "environment_hash", "policy_hash",
                *_VERDICT_COLUMNS)
        .sort("started_at", descending=True).unique("run_key", keep="first").collect()
    )
    settled: dict[str, dict] = {}
    for r in stored.iter_rows(named=True):
        if r["reason"] in retry:
            continue
        content = digest("run", r["suite_hash"], r["state_hash"], r["environment_hash"], r["policy_hash"])
        if content not in settled or r["started_at"] > settled[content]["started_at"]:
            settled[content] = r
    todo, rows, now = [], [], datetime.now(UTC)
    for spec in pending:
        found = settled.get(spec.content_key) if spec.runs_in_sandbox else None
        if found is None:
            todo.append(spec)
            continue
        rows.append({**row_identity(spec, found["policy_hash"], now), **{c: found[c] for c in _VERDICT_COLUMNS},
                     "reused_from": found["run_key"]})
    return todo, rows


def decided_groups(store: Store, planned: list[RunSpec]) -> set[tuple[str, str]]:
    """(configuration, instance) pairs whose joint success the store's newest rows of the
    `planned` runs already decided (`decides`): early stop's memory across batches and
    replays."""
    keys = [s.run_key for s in planned]
    if not keys:
        return set()
    rows = (
        store.scan("runs").filter(pl.col("run_key").is_in(keys))
        .select("run_key", "configuration", "instance_id", "state", "label", "outcome", "reason", "started_at")
        .sort("started_at", descending=True).unique("run_key", keep="first").collect()
    )
    return {(r["configuration"], r["instance_id"]) for r in rows.iter_rows(named=True)
            if r["reason"] != Reason.EARLY_STOPPED.value and decides(r["state"], r["label"], r["outcome"], r["reason"])}


def record_early_stopped(pending: list[RunSpec], planned: list[RunSpec],
                         options: ExecutionOptions) -> tuple[list[RunSpec], int]:
    """With early stop, store the rows of the pending runs whose suite the store's rows of
    the `planned` runs already decided on their instance; the runs left, and how many were
    stopped."""
    if not options.early_stop:
        return pending, 0
    store = Store(options.store_root)
    decided = decided_groups(store, planned)
    now = datetime.now(UTC)
    stop = [s for s in pending if s.runs_in_sandbox and group_of(s) in decided]
    if stop:
        ReplayJob(options).write(store, [stopped(s, options, now) for s in stop])  # the one writer of `runs`
    return [s for s in pending if not (s.runs_in_sandbox and group_of(s) in decided)], len(stop)


def row_identity(spec: RunSpec, policy_hash: str, started: datetime) -> dict:
    """The columns of a `runs` row that say which run it is (row() adds the verdict's)."""
    return {
        "run_key": spec.run_key, "instance_id": spec.instance.id, "source": spec.instance.source,
        "configuration": spec.configuration, "state": spec.state.kind, "candidate_id": spec.state.candidate_id,
        "label": spec.state.label, "started_at": started, "suite_hash": suite_hash_of(spec),
        "state_hash": spec.state.hash, "environment_hash": spec.instance.spec.environment.key,
        "policy_hash": policy_hash,
    }


def panel_rows(benchmark: Benchmark) -> list[dict]:
    """The `panels` dataset: every state of every instance (the released pools), each
    candidate with its provenance (agent | mutant)."""
    rows = []
    for instance in benchmark.instances.values():
        provenance = {c.id: c.provenance for c in instance.candidates}
        rows += [{"instance_id": instance.id, "source": instance.source, "state": s.kind,
                  "candidate_id": s.candidate_id, "label": s.label, "state_hash": s.hash,
                  "provenance": provenance.get(s.candidate_id or "")} for s in states_of(instance)]
    return rows


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
