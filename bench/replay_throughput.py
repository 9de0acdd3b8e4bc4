"""Benchmark: replay throughput on 1 vs 2 Dask workers, and the share of a replay's wall time
that orchestration (Prefect + Dask) takes.

Why: a replay is thousands of sandbox runs cut into coarse Prefect tasks (flows/replay.py);
both the scaling across worker processes and the price of the wiring around the runs must be
measured on real runs, not assumed. Everything runs `testprism.flows.replay.replay_flow`
with the `local` backend (bubblewrap), on a synthetic benchmark generated into a scratch
folder: N instances of tests/benchfixture.py's `median` program (buggy, reference, a valid
and an invalid candidate) × the `strong` and `weak` pytest suites of that fixture, each
program stamped with its instance number so that no two runs share a content key (the
replay would run such twins once). A run is a real pytest suite in the sandbox, ≈ 0.3–0.4 s;
a failing run is replayed once to confirm it (the outcome rule), so 8 planned runs of an
instance cost 11 sandbox executions. Throughputs count planned runs; the executions are
reported beside them.

(a) Scaling: the same planned runs (`--scaling-runs`, the first instances of the benchmark)
    replayed on a `distributed` LocalCluster of 1 worker process, then of 2 (1 thread each),
    each time into a fresh store. The per-worker run concurrency is held at 1 in both
    (`concurrency=1`; by default a lone worker gets the host's 2 cores), so the ratio
    measures scaling across worker processes, not threads inside one. The clusters are
    started here and reached with `dask_address` (their workers told the flow's Prefect API,
    as the flow's own LocalCluster is); their start (≈ 1–4 s)
    is outside the timed flow. `workers=N` is still passed, so batches are sized as the flow
    sizes them for N workers. Arms alternate 1,2 | (b) | 2,1 (`--rounds`) so that load drift
    on a shared machine hits both alike; the ratio is pooled (Σ runs / Σ wall per arm) and
    also shown per round. Target: 2 workers ≥ 1.7× one.

(b) Orchestration share at ≥ 2,000 runs (`--runs`): the flow exactly as a user runs it
    (`backend="local", workers=2`: its own LocalCluster of 2 processes, per-worker
    concurrency 2 // 2 = 1), wall time from the call to its return, next to the same planned
    runs cut into the same batches (flows.runner.batch_target) executed directly by
    `tasks.replay.runs.execute_batch` in a plain pool of 2 processes (spawned and warmed before
    the clock starts), concurrency 1, no Prefect and no Dask. Both write a fresh store.

        orchestration share = (flow wall − direct wall) / flow wall

    What the difference holds: the Prefect flow and task runs, Dask's cluster start and stop,
    scheduling and result transfer, loading and planning the benchmark (the direct side
    plans before its clock starts), and the CPU all of it takes from the runs on a 2-core
    host.
    What the difference does not hold: Prefect's temporary server start in this process
    (once per process, 5–30 s: a warm-up flow pays it, and it is reported apart), the
    environment build and state materialisation (cached in the work area and warmed once,
    for every arm). The two sides run back to back, so load drift between them is noise in
    the difference; `--orch-rounds 2` repeats them in the other order. A breakdown from the
    stored rows (first run start, last part written) shows where the flow's extra time
    lands: before the first run, while runs execute, or after the last; the part before and
    after is free of load drift, and the mean sandbox time of a run on each side shows how
    much the load moved between them. On this shared machine the load moves the runs by
    ±10% between two sides of one round, more than the share to be measured, so the figure
    the target is held to is the drift-free one: the time before the first run and after
    the last write; the CPU that every process of the replay outside the sandboxes took
    while the runs ran (HarnessCpu), flow side less direct side, spread over the cores the
    runs fill; and the worker-slot time in no batch while the runs ran (a batch waiting to
    be handed out or picked up: the flow's from Prefect's task-run times, the direct
    side's as the pool's processes timed their calls), flow side less direct side. The
    three add up to the raw share when the load holds still. Target ≤ 5%.

Run: `python bench/replay_throughput.py [--runs 2000 --scaling-runs 240 --rounds 2
--orch-rounds 1] [--work DIR]` as root (the sandbox drops to an unprivileged uid) with
bubblewrap. The sandbox environment (pytest) is built once with pip as a replay builds it;
an offline machine points PIP_INDEX_URL at a local index. Development: `--runs 200`.
Scratch (benchmark, stores, work area) lives under /var/tmp and is removed at the end.
"""

from __future__ import annotations

import argparse
import bisect
import logging
import math
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.logging import RichHandler
from rich.table import Table

from testprism.storage import Store
from testprism.tasks.replay.settings import ReplaySettings
from testprism.tasks.model.benchmark import load_benchmark
from testprism.tasks.replay.runs import execute_batch, plan
from testprism.tasks.execution.batch import BatchSummary, ExecutionOptions, batches
from testprism.tasks.sandbox.base import Limits
from testprism.tasks.sandbox.local import LocalBackend, bubblewrap_works
from testprism.tasks.model.state import materialise, states_of
from testprism.tasks.model.workdir import WorkPaths
from testprism.tasks.execution.run_settings import RunSettings

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # tests/ is not installed: the generator's pieces live there
    sys.path.insert(0, str(ROOT))

from tests.benchfixture import BUGGY, CHECKS, INVALID, REFERENCE, RUN, VALID, WEAK, diff, write  # noqa: E402

log = logging.getLogger("bench.replay_throughput")
console = Console(width=max(150, Console().width))

SCALING_TARGET = 1.7
ORCHESTRATION_TARGET = 0.05
RUNS_PER_INSTANCE = 8  # (buggy, reference, valid, invalid) × (strong, weak)
TIMEOUT_S = 300.0


# -- the synthetic benchmark ---------------------------------------------------------------------


def generate(root: Path, runs: int) -> int:
    """Write ceil(runs / 8) instances of the fixture's `median` program; returns the number of
    planned runs (a multiple of 8). Each program and its patches carry the instance number:
    identical instances would share content keys, and the replay runs such twins once."""
    count = max(1, math.ceil(runs / RUNS_PER_INSTANCE))
    for n in range(count):
        iid = f"synth__median-{n:05d}"
        stamp = f"# synthetic instance {n}\n"
        inst = root / "instances" / iid
        write(inst / "program" / "stats.py", stamp + BUGGY)
        write(inst / "instruction.md", "median() returns the upper middle element for even-length input.\n")
        write(inst / "reference.diff", diff("stats.py", stamp + BUGGY, stamp + REFERENCE))
        write(inst / "checks.diff", diff("tests/test_official.py", "", CHECKS))
        toml = (f'id = "{iid}"\nsource = "synth{n % 3}"\n[checks]\n'
                'command = "python -m pytest -q -p no:cacheprovider tests/test_official.py --junitxml=$TESTPRISM_JUNIT"\n'
                'fail_to_pass = ["tests/test_official.py::test_even_length"]\n')
        for cid, label, text in (("stdlib", "valid", VALID), ("sorts-in-place", "invalid", INVALID)):
            write(inst / "candidates" / f"{cid}.diff", diff("stats.py", stamp + BUGGY, stamp + text))
            toml += f'\n[[candidates]]\nid = "{cid}"\nlabel = "{label}"\npatch = "candidates/{cid}.diff"\n'
        write(inst / "instance.toml", toml)
        for configuration, test in (("strong", CHECKS), ("weak", WEAK)):
            write(root / "suites" / configuration / iid / "test_median.py", test)
            write(root / "suites" / configuration / iid / "run_tests.sh", RUN)
    return count * RUNS_PER_INSTANCE


def subset(source: Path, target: Path, runs: int) -> int:
    """The first ceil(runs / 8) instances of `source` (same files, same states) as a
    benchmark of its own; returns its planned runs."""
    names = sorted(p.name for p in (source / "instances").iterdir())[: max(1, math.ceil(runs / RUNS_PER_INSTANCE))]
    for name in names:
        shutil.copytree(source / "instances" / name, target / "instances" / name)
        for suite in (source / "suites").iterdir():
            shutil.copytree(suite / name, target / "suites" / suite.name / name)
    return len(names) * RUNS_PER_INSTANCE


def warm(bench_root: Path, work: WorkPaths) -> float:
    """Build the environment and every state tree once, so that no measured replay pays for
    them (the work area is a cache shared by every arm)."""
    start = time.perf_counter()
    bench = load_benchmark(bench_root)
    backend = LocalBackend(work)
    try:
        for instance in bench.instances.values():
            backend.prepare(instance.spec.environment)
            for state in states_of(instance):
                materialise(instance, state, work)
    finally:
        backend.close()
    return time.perf_counter() - start


# -- measuring -----------------------------------------------------------------------------------


@dataclass
class Measure:
    """One replay (flow or direct) of a benchmark into a fresh store."""

    label: str
    wall_s: float
    planned: int
    executions: int  # sandbox executions: planned runs + confirming replays
    outcomes: dict[str, int]
    batches: int
    startup_s: float  # call → first run started (from the stored rows)
    tail_s: float  # last rows written → call returned
    mean_run_s: float  # mean sandbox time of a run's last attempt (duration_s): the load's mark
    cpu_s: dict[str, float]  # the harness's CPU by role while the runs ran (HarnessCpu)
    busy_s: float  # Σ over batches of the time a worker held it: the Prefect task run's, or the pool call's
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def runs_per_s(self) -> float:
        return self.planned / self.wall_s

    def idle_s(self, slots: int) -> float:
        """Worker-slot seconds, from the first run's start to the last rows written, in no
        batch: a batch waiting to be handed out or picked up, the last batches' imbalance."""
        return slots * (self.wall_s - self.startup_s - self.tail_s) - self.busy_s


def read_back(label: str, store: Path, t0: float, t1: float, planned: int, n_batches: int,
              cpu: HarnessCpu, busy_s: float) -> Measure:
    """Counts, the startup/tail breakdown and the harness's CPU while the runs ran, from
    what the replay stored."""
    rows = Store(store).scan("runs").select("started_at", "attempts", "outcome", "duration_s").collect()
    if rows.height != planned:
        raise RuntimeError(f"{label}: {rows.height} rows stored, {planned} planned")
    first = rows["started_at"].min().timestamp()
    last_write = max(p.stat().st_mtime for p in (store / "runs").glob("part-*.parquet"))
    outcomes = dict(sorted(rows.group_by("outcome").len().iter_rows()))
    return Measure(label, t1 - t0, planned, int(rows["attempts"].sum()), outcomes, n_batches,
                   first - t0, t1 - last_write, float(rows["duration_s"].mean()), cpu.between(first, last_write),
                   busy_s, {"t0": t0})


def start_cluster(workers: int):  # noqa: ANN201 - (LocalCluster, Client)
    """A LocalCluster of `workers` processes with 1 thread each on 127.0.0.1, its workers
    told the flow's Prefect API as the flow's own LocalCluster is (flows.runner.flow_api_env)."""
    from distributed import Client, LocalCluster

    from testprism.flows.runner import flow_api_env

    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address=None, env=flow_api_env())
    client = Client(cluster)
    client.wait_for_workers(workers)
    return cluster, client


class HarnessCpu:
    """CPU seconds of every process of a replay that is not a run's sandbox, by role, over
    any window of the time inside the block: this process ("flow": the flow, Prefect's
    client and, for a LocalCluster the flow starts, the Dask scheduler and the workers'
    nannies), its child processes themselves ("workers": Dask's workers or the direct
    side's pool processes, without the sandboxes they start, which are their children) and
    Prefect's temporary server ("server"). Over the window from the first run's start to
    the last rows written, the flow side's figure less the direct side's is what
    orchestration takes from the runs while they run on a host whose cores they fill,
    counted in CPU rather than wall time, so a load that moves between the two sides does
    not enter it. Sampled every half second and interpolated between samples; the
    sampler's own CPU is left out."""

    ROLES = ("flow", "workers", "server")

    def __init__(self) -> None:
        import psutil  # distributed's dependency
        from prefect.server.api.server import SubprocessASGIServer

        self._psutil = psutil
        self._me = psutil.Process()
        server = SubprocessASGIServer().server_process  # the temporary server this process started
        self._server = server.pid if server is not None else None
        self._first: dict[int, float] = {}
        self._last: dict[int, float] = {}
        self._role: dict[int, str] = {}
        self.timeline: list[tuple[float, dict[str, float]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="harness-cpu", daemon=True)

    def _sample(self, *, opening: bool = False) -> None:
        own = time.thread_time() if threading.current_thread() is self._thread else 0.0
        for proc in [self._me, *self._me.children()]:
            try:
                times = proc.cpu_times()
            except self._psutil.Error:  # exited since the listing
                continue
            cpu = times.user + times.system
            self._first.setdefault(proc.pid, cpu if opening else 0.0)  # a process born inside counts whole
            self._last[proc.pid] = cpu - (own if proc.pid == self._me.pid else 0.0)
            self._role.setdefault(proc.pid, "flow" if proc.pid == self._me.pid else
                                  "server" if proc.pid == self._server else "workers")
        totals = dict.fromkeys(self.ROLES, 0.0)
        for pid, cpu in self._last.items():
            totals[self._role[pid]] += cpu - self._first[pid]
        self.timeline.append((time.time(), totals))

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self._sample()

    def __enter__(self) -> HarnessCpu:
        self._sample(opening=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _at(self, when: float) -> dict[str, float]:
        times = [t for t, _ in self.timeline]
        k = min(max(bisect.bisect_left(times, when), 1), len(times) - 1)
        (ta, a), (tb, b) = self.timeline[k - 1], self.timeline[k]
        w = min(max((when - ta) / (tb - ta), 0.0), 1.0) if tb > ta else 1.0
        return {role: a[role] + w * (b[role] - a[role]) for role in self.ROLES}

    def between(self, start: float, end: float) -> dict[str, float]:
        """CPU seconds by role from `start` to `end` (epoch seconds)."""
        a, b = self._at(start), self._at(end)
        return {role: b[role] - a[role] for role in self.ROLES}


def flow_replay(label: str, bench_root: Path, store: Path, work: WorkPaths, *, workers: int,
                dask_address: str | None, concurrency: int | None = None) -> Measure:
    """One replay_flow call into a fresh store, timed from the call to its return."""
    from testprism.flows.replay import replay_flow
    from testprism.flows.runner import batch_target

    with HarnessCpu() as cpu:
        t0 = time.time()
        state = replay_flow(benchmark=str(bench_root), store=str(store), run=RunSettings(backend="local", workers=workers, dask_address=dask_address, work=str(work.root)), settings=ReplaySettings(timeout_s=TIMEOUT_S, concurrency=concurrency), return_state=True)
        t1 = time.time()
    summary = state.result()
    if summary.executed != summary.planned:
        raise RuntimeError(f"{label}: executed {summary.executed} of {summary.planned} planned runs")
    n_batches = math.ceil(summary.planned / batch_target(summary.planned, workers))
    measure = read_back(label, store, t0, t1, summary.planned, n_batches, cpu, batch_time(state))
    log.info("%s: %d runs in %.1f s = %.2f runs/s (%d executions, %s; load %.1f)", label, measure.planned,
             measure.wall_s, measure.runs_per_s, measure.executions, measure.outcomes, os.getloadavg()[0])
    return measure


def batch_time(state) -> float:  # noqa: ANN001 - the flow run's final Prefect State
    """Σ of the flow run's batch task runs' times, from Running to Completed, as its
    Prefect server recorded them."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[state.state_details.flow_run_id])))
    batches = [t for t in runs if t.name.startswith("replay-batch")]
    if not batches or any(t.start_time is None or t.end_time is None for t in batches):
        raise RuntimeError("the flow run's batch task runs carry no start or end time")
    return sum((t.end_time - t.start_time).total_seconds() for t in batches)


def scaling_arm(workers: int, bench_root: Path, scratch: Path, work: WorkPaths, tag: str) -> Measure:
    """(a): the flow on a LocalCluster of `workers` processes started here, concurrency 1."""
    started = time.perf_counter()
    cluster, client = start_cluster(workers)
    cluster_s = time.perf_counter() - started
    try:
        measure = flow_replay(f"{workers} worker{'s' if workers > 1 else ''} ({tag})", bench_root,
                              scratch / f"store-{workers}w-{tag}", work, workers=workers,
                              dask_address=cluster.scheduler_address, concurrency=1)
    finally:
        client.close()
        cluster.close()
    measure.extra["cluster_start_s"] = cluster_s
    return measure


def orchestrated_replay(label: str, bench_root: Path, store: Path, work: WorkPaths) -> Measure:
    """(b)'s flow: replay_flow(workers=2) as users run it (its own LocalCluster)."""
    return flow_replay(label, bench_root, store, work, workers=2, dask_address=None)


def timed_batch(specs: list, options: ExecutionOptions) -> tuple[float, BatchSummary]:
    """execute_batch and the seconds it took, measured where it ran."""
    start = time.perf_counter()
    summary = execute_batch(specs, options)
    return time.perf_counter() - start, summary


def _noop(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def direct_replay(label: str, bench_root: Path, store: Path, work: WorkPaths, workers: int) -> Measure:
    """(b)'s baseline: the flow's batches through execute_batch in a plain pool of `workers`
    spawned processes, concurrency 1 each, no Prefect, no Dask. Planning and the pool's start
    are outside the clock: what is timed is executing the batches."""
    from testprism.flows.runner import batch_target

    bench = load_benchmark(bench_root)
    options = ExecutionOptions(backend="local", work_root=work.root, store_root=store, limits=Limits(timeout_s=TIMEOUT_S),
                               concurrency=1)
    specs = [s for s in plan(bench, options) if s.runs_in_sandbox]
    groups = batches(specs, batch_target(len(specs), workers))
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        pids = {f.result() for f in [pool.submit(_noop, 1.0) for _ in range(workers)]}
        if len(pids) != workers:
            log.warning("%s: only %d of %d pool processes warmed", label, len(pids), workers)
        with HarnessCpu() as cpu:
            t0 = time.time()
            done, _ = wait([pool.submit(timed_batch, g.specs, options) for g in groups])
            t1 = time.time()
    executed = sum(f.result()[1].executed for f in done)
    if executed != len(specs):
        raise RuntimeError(f"{label}: executed {executed} of {len(specs)} runs")
    measure = read_back(label, store, t0, t1, len(specs), len(groups), cpu, sum(f.result()[0] for f in done))
    log.info("%s: %d runs in %.1f s = %.2f runs/s (%d executions, %s; load %.1f)", label, measure.planned,
             measure.wall_s, measure.runs_per_s, measure.executions, measure.outcomes, os.getloadavg()[0])
    return measure


# -- reporting -----------------------------------------------------------------------------------


def pooled(measures: list[Measure]) -> float:
    return sum(m.planned for m in measures) / sum(m.wall_s for m in measures)


def report(one: list[Measure], two: list[Measure], flows: list[Measure], directs: list[Measure],
           warmup: Measure, load_before: tuple[float, ...], load_after: tuple[float, ...]) -> None:
    table = Table(title="replay throughput, local backend (bubblewrap), per-worker run concurrency 1")
    for column in ("measurement", "runs", "executions", "batches", "wall (s)", "runs/s", "before 1st run (s)",
                   "after last write (s)", "note"):
        table.add_column(column, justify="left" if column in ("measurement", "note") else "right",
                         no_wrap=column != "note", min_width=len(column) if column != "note" else 20)

    def add(m: Measure, note: str = "") -> None:
        table.add_row(m.label, str(m.planned), str(m.executions), str(m.batches), f"{m.wall_s:.1f}",
                      f"{m.runs_per_s:.2f}", f"{m.startup_s:.1f}", f"{m.tail_s:.1f}", note)

    add(warmup, "warm-up: starts Prefect's server; untimed")
    for m in sorted(one + two + directs + flows, key=lambda m: m.extra["t0"]):
        if "cluster_start_s" in m.extra:
            add(m, f"(a) cluster up in {m.extra['cluster_start_s']:.1f} s, untimed")
        elif m in directs:
            add(m, "(b) no Prefect, no Dask")
        else:
            add(m, "(b) flow as users run it")
    console.print(table)

    summary = Table(title="figures")
    for column in ("figure", "value", "target", "verdict"):
        summary.add_column(column, justify="left" if column == "figure" else "right", no_wrap=True)
    if one and two:
        r1, r2 = pooled(one), pooled(two)
        ratio = r2 / r1
        per_round = [b.runs_per_s / a.runs_per_s for a, b in zip(one, two, strict=True)]
        summary.add_row("(a) 1 worker, runs/s (pooled)", f"{r1:.2f}", "", "")
        summary.add_row("(a) 2 workers, runs/s (pooled)", f"{r2:.2f}", "", "")
        spread = max(per_round) / min(per_round) > 1.3  # rounds this far apart: the machine's load moved
        summary.add_row("(a) 2 workers ÷ 1 worker", f"{ratio:.2f}×", f"≥ {SCALING_TARGET:.1f}×",
                        ("met" if ratio >= SCALING_TARGET else "MISSED") + ("; rounds disagree (load)" if spread else ""))
        summary.add_row("(a) per round", ", ".join(f"{r:.2f}×" for r in per_round), "", "")
        log.info("(a) 1 worker %.2f runs/s, 2 workers %.2f runs/s: %.2f× (target ≥ %.1f×)", r1, r2, ratio,
                 SCALING_TARGET)
    flow_wall = sum(m.wall_s for m in flows)
    direct_wall = sum(m.wall_s for m in directs)
    share = (flow_wall - direct_wall) / flow_wall
    summary.add_row(f"(b) flow wall, {flows[0].planned} runs", f"{flow_wall / len(flows):.1f} s", "", "")
    summary.add_row("(b) direct execution wall", f"{direct_wall / len(directs):.1f} s", "", "")
    drift = statistics.mean(m.mean_run_s for m in flows) / statistics.mean(m.mean_run_s for m in directs)
    verdict = "met" if share <= ORCHESTRATION_TARGET else "MISSED"
    if abs(drift - 1) > 0.05:  # the sides ran under different loads: the difference is not orchestration
        verdict = f"inconclusive: runs ×{drift:.2f} in the flow"
    summary.add_row("(b) orchestration share", f"{100 * share:.1f}%", f"≤ {100 * ORCHESTRATION_TARGET:.0f}%", verdict)
    extra_start = statistics.mean(m.startup_s for m in flows) - statistics.mean(m.startup_s for m in directs)
    extra_tail = statistics.mean(m.tail_s for m in flows) - statistics.mean(m.tail_s for m in directs)
    middle = (flow_wall - direct_wall) / len(flows) - extra_start - extra_tail
    summary.add_row("(b) flow − direct: before the first run", f"{extra_start:+.1f} s", "", "")
    summary.add_row("(b) flow − direct: while runs execute", f"{middle:+.1f} s", "", "")
    summary.add_row("(b) flow − direct: after the last write", f"{extra_tail:+.1f} s", "", "")
    fixed = (extra_start + extra_tail) / (flow_wall / len(flows))
    summary.add_row("(b) of which before + after (drift-free part)", f"{100 * fixed:.1f}%", "", "")
    summary.add_row("(b) mean run time in sandbox, flow ÷ direct", f"{drift:.2f}", "",
                    "load differed" if abs(drift - 1) > 0.05 else "")
    def role_means(side: list[Measure]) -> dict[str, float]:
        return {role: statistics.mean(m.cpu_s[role] for m in side) for role in HarnessCpu.ROLES}

    flow_cpu, direct_cpu = role_means(flows), role_means(directs)
    cores = os.cpu_count() or 1
    cpu_share = (sum(flow_cpu.values()) - sum(direct_cpu.values())) / (cores * flow_wall / len(flows))
    for side, cpu in (("flow", flow_cpu), ("direct", direct_cpu)):
        summary.add_row(f"(b) CPU outside the sandboxes while runs ran: {side} side", f"{sum(cpu.values()):.1f} s", "",
                        ", ".join(f"{role} {cpu[role]:.1f} s" for role in HarnessCpu.ROLES))
    summary.add_row(f"(b) the difference, of {cores} cores × flow wall (drift-free)", f"{100 * cpu_share:.1f}%", "", "")
    slots = 2  # (b) runs 2 workers, or 2 pool processes, one run at a time each
    flow_idle = statistics.mean(m.idle_s(slots) for m in flows)
    direct_idle = statistics.mean(m.idle_s(slots) for m in directs)
    idle_share = (flow_idle - direct_idle) / (slots * flow_wall / len(flows))
    summary.add_row("(b) worker slots idle while runs ran: flow, direct", f"{flow_idle:.1f} s, {direct_idle:.1f} s", "",
                    "slot-seconds in no batch")
    summary.add_row(f"(b) the difference, of {slots} slots × flow wall", f"{100 * idle_share:.1f}%", "", "")
    drift_free = fixed + cpu_share + idle_share
    summary.add_row("(b) orchestration share, drift-free (before + after + CPU + idle slots)",
                    f"{100 * drift_free:.1f}%", f"≤ {100 * ORCHESTRATION_TARGET:.0f}%",
                    "met" if drift_free <= ORCHESTRATION_TARGET else "MISSED")
    summary.add_row("Prefect temporary server start (once per process)",
                    f"≈ {warmup.wall_s:.1f} s", "", f"{100 * warmup.wall_s / (flow_wall / len(flows) + warmup.wall_s):.1f}% "
                    "more if counted")
    summary.add_row("load average before → after", f"{load_before[0]:.1f} {load_before[1]:.1f} {load_before[2]:.1f} → "
                    f"{load_after[0]:.1f} {load_after[1]:.1f} {load_after[2]:.1f}", "", "")
    console.print(summary)
    console.print("(a) holds each worker to one run at a time (--concurrency 1), so the ratio is scaling across "
                  "worker processes; (b) orchestration share = (flow wall − direct execute_batch wall) / flow wall, same "
                  "batches, same concurrency; Prefect's temporary server start is excluded (warm-up).")
    log.info("(b) %d runs: flow %.1f s, direct %.1f s: orchestration share %.1f%% (target ≤ %.0f%%)", flows[0].planned,
             flow_wall / len(flows), direct_wall / len(directs), 100 * share, 100 * ORCHESTRATION_TARGET)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2000, help="planned runs of (b) (rounded up to a multiple of 8)")
    parser.add_argument("--scaling-runs", type=int, default=240,
                        help="planned runs of each (a) replay: the first instances of the same benchmark")
    parser.add_argument("--rounds", type=int, default=2, help="(a) rounds; arms alternate 1,2 then 2,1 (0: only (b))")
    parser.add_argument("--orch-rounds", type=int, default=1, help="(b) rounds; direct/flow order alternates")
    parser.add_argument("--work", default=None, help="work area (default: a temporary one)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s", handlers=[RichHandler(console=console, show_path=False)])
    # Prefect logs every flow and task run at INFO; the figures are what this benchmark is for.
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    for noisy in ("httpx", "distributed"):  # a line per Prefect API call; cluster start and stop
        logging.getLogger(noisy).setLevel(logging.WARNING)
    if not bubblewrap_works():
        raise SystemExit("bubblewrap is required: this benchmark measures the local backend's real sandbox")

    base = Path("/var/tmp") if Path("/var/tmp").is_dir() else Path(tempfile.gettempdir())
    scratch = Path(tempfile.mkdtemp(prefix="testprism-bench-", dir=base))
    scratch.chmod(0o755)
    work = WorkPaths(Path(args.work) if args.work else scratch / "work")
    work.ensure()
    try:
        full = scratch / "bench-full"
        planned = generate(full, args.runs)
        small = scratch / "bench-scaling"
        scaling_planned = subset(full, small, min(args.scaling_runs, planned))
        tiny = scratch / "bench-warmup"
        subset(full, tiny, 1)
        log.info("benchmark: %d planned runs for (b), %d for each (a) replay; %d cores", planned, scaling_planned,
                 os.cpu_count())
        log.info("environment and %d state trees built in %.1f s (cached for every arm)", planned // 2,
                 warm(full, work))
        load_before = os.getloadavg()
        log.info("load average before: %.1f %.1f %.1f", *load_before)
        warmup = flow_replay("warm-up flow", tiny, scratch / "store-warmup", work, workers=1, dask_address=None)
        one: list[Measure] = []
        two: list[Measure] = []
        flows: list[Measure] = []
        directs: list[Measure] = []
        orders = [(1, 2) if k % 2 == 0 else (2, 1) for k in range(args.rounds)]
        for k, order in enumerate(orders[: (args.rounds + 1) // 2]):
            for workers in order:
                (one if workers == 1 else two).append(scaling_arm(workers, small, scratch, work, f"r{k + 1}"))
        for k in range(args.orch_rounds):
            sides = ("direct", "flow") if k % 2 == 0 else ("flow", "direct")
            for side in sides:
                store = scratch / f"store-{side}-{k + 1}"
                if side == "direct":
                    directs.append(direct_replay(f"direct, 2 processes (o{k + 1})", full, store, work, 2))
                else:
                    flows.append(orchestrated_replay(f"flow, workers=2 (o{k + 1})", full, store, work))
        for k, order in enumerate(orders[(args.rounds + 1) // 2 :], start=(args.rounds + 1) // 2):
            for workers in order:
                (one if workers == 1 else two).append(scaling_arm(workers, small, scratch, work, f"r{k + 1}"))
        load_after = os.getloadavg()
        log.info("load average after: %.1f %.1f %.1f", *load_after)
        report(one, two, flows, directs, warmup, load_before, load_after)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
