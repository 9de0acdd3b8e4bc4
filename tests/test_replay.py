"""Replay end to end on the tiny benchmark: outcomes per state, content keys, skipping
stored runs, and the flows."""

from __future__ import annotations

import polars as pl
import pytest

from testprism.tasks.score.settings import ScoreSettings
from testprism.tasks.execution.run_settings import RunSettings
from testprism.storage import Store
from testprism.tasks.replay.settings import ReplaySettings
from testprism.tasks.score.metrics import flake_table
from testprism.tasks.model.benchmark import load_benchmark
from testprism.tasks.replay.runs import execute_batch, finished_keys, pending_runs, plan, record_plan, unrunnable_rows
from testprism.tasks.execution.batch import ExecutionOptions
from tests.benchfixture import BUGGY, CHECKS, WEAK, diff, make_benchmark

pytestmark = pytest.mark.requires("sandbox")

FLAKY = '''\
import random

def test_coin():
    assert random.random() < 0.5
'''
BROKEN = '''\
from stats import median_of_medians

def test_it():
    assert median_of_medians([1, 2]) == 1.5
'''


@pytest.fixture()
def bench(tmp_path):
    root = make_benchmark(
        tmp_path / "bench",
        {"strong": {"test_median.py": CHECKS}, "weak": {"test_median.py": WEAK}, "broken": {"test_x.py": BROKEN}},
        extra_candidates={"garbled": ("invalid", "--- a/stats.py\n+++ b/stats.py\n@@ -1,1 +1,1 @@\n-nothing like this\n+x\n")},
    )
    (root / "suites" / "strong" / "mini__median-even" / "extra").mkdir()
    return root


def replay(bench_root, store_root, work_root, configurations=()):
    benchmark = load_benchmark(bench_root, configurations)
    store = Store(store_root)
    record_plan(benchmark, store)
    options = ExecutionOptions(backend="local", work_root=work_root, store_root=store_root, concurrency=2)
    specs = plan(benchmark, options)
    todo = pending_runs(specs, finished_keys(store))
    rows = unrunnable_rows(todo, options)
    summary = execute_batch([s for s in todo if s.runs_in_sandbox], options)
    return specs, todo, rows, summary, store


def outcomes(store: Store) -> dict[tuple[str, str], tuple[str, str | None]]:
    runs = store.scan("runs").collect()
    return {(r["configuration"], r["candidate_id"] or r["state"]): (r["outcome"], r["reason"]) for r in runs.iter_rows(named=True)}


def test_outcomes_per_state_and_configuration(bench, tmp_path, work_root):
    specs, todo, _, summary, store = replay(bench, tmp_path / "store", work_root)
    assert len(specs) == 3 * 5  # 3 configurations × (buggy, reference, 3 candidates)
    got = outcomes(store)
    assert got[("strong", "buggy")] == ("F", None)
    assert got[("strong", "reference")] == ("P", None)
    assert got[("strong", "stdlib")] == ("P", None)
    assert got[("strong", "sorts-in-place")] == ("F", None)
    assert got[("weak", "sorts-in-place")] == ("P", None)  # weak specification lets it through
    assert got[("broken", "reference")] == ("F", None)  # execution-logic error
    assert got[("strong", "garbled")] == ("E", "patch_failed")
    runs = store.scan("runs").collect()
    failed = runs.filter(pl.col("outcome") == "F")
    assert (failed["attempts"] == 2).all()  # every failure confirmed by a replay
    strong_ref = runs.filter((pl.col("configuration") == "strong") & (pl.col("state") == "reference")).row(0, named=True)
    assert {t["outcome"] for t in strong_ref["tests"]} == {"passed"} and len(strong_ref["tests"]) == 3


def test_rerun_executes_nothing_and_keys_are_content(bench, tmp_path, work_root):
    specs, _, _, first, store = replay(bench, tmp_path / "store", work_root, ("weak",))
    assert first.executed == len(specs)
    specs2, todo, _, second, _ = replay(bench, tmp_path / "store", work_root, ("weak",))
    assert [s.run_key for s in specs2] == [s.run_key for s in specs]
    assert todo == [] and second.executed == 0
    # Editing the suite changes its hash, so its runs are planned again; others are kept.
    (bench / "suites" / "weak" / "mini__median-even" / "test_median.py").write_text(WEAK + "\n# edited\n")
    _, todo, _, _, _ = replay(bench, tmp_path / "store", work_root, ("weak",))
    assert len(todo) == len(specs)


def test_flaky_suite_is_unstable_and_missing_suite_is_recorded(tmp_path, work_root):
    root = make_benchmark(tmp_path / "b", {"flaky": {"test_coin.py": FLAKY}, "strong": {"test_m.py": CHECKS}})
    (root / "suites" / "flaky" / "other").mkdir(parents=True)  # not an instance → not loaded as a suite
    import shutil

    shutil.rmtree(root / "suites" / "flaky" / "other")
    shutil.rmtree(root / "suites" / "strong" / "mini__median-even")
    specs, todo, rows, summary, store = replay(root, tmp_path / "store", work_root)
    assert {r["reason"] for r in rows} == {"missing_suite"} and len(rows) == 4
    flaky = store.scan("runs").filter(pl.col("configuration") == "flaky").collect()
    # A coin flip per attempt: every run is P, F-then-F, or F-then-P (unstable); over 4
    # states at least one differs from a plain verdict with probability 1 - 0.5**4... so
    # assert only what always holds: an `E` here is always `unstable`, never anything else.
    assert set(flaky.filter(pl.col("outcome") == "E")["reason"].to_list()) <= {"unstable"}
    assert all(a in (1, 2) for a in flaky["attempts"].to_list())
    flakes = flake_table(store).row(0, named=True)
    assert flakes["configuration"] == "flaky" and flakes["runs"] == 4
    assert flakes["unstable"] == flaky.filter(pl.col("reason") == "unstable").height


def test_suite_with_symlink_is_rejected_with_its_path(tmp_path):
    root = make_benchmark(tmp_path / "b", {"strong": {"test_m.py": CHECKS}})
    (root / "suites" / "strong" / "mini__median-even" / "escape").symlink_to("/etc/passwd")
    bench = load_benchmark(root)
    assert ("strong", "mini__median-even") not in bench.suites
    assert "escape" in bench.suite_errors[("strong", "mini__median-even")]
    assert "symlinks" in bench.suite_errors[("strong", "mini__median-even")]


@pytest.mark.slow
def test_flows_rerun_executes_zero_runs_and_leaderboard_is_byte_identical(bench, tmp_path, work_root, monkeypatch):
    from testprism.flows.replay import replay_flow
    from testprism.flows.score import score_flow

    store = tmp_path / "store"
    args = dict(benchmark=str(bench), store=str(store), run=RunSettings(work=work_root))
    monkeypatch.setenv("TESTPRISM_DOCKER_RUNTIME", "runsc")
    monkeypatch.setenv("TESTPRISM_MODEL_TOKEN", "hunter2")
    first = replay_flow(**args, settings=ReplaySettings(timeout_s=77))
    assert first.executed == first.planned == 15
    _what_the_replay_ran_with_is_read_back(store, work_root)
    args["settings"] = ReplaySettings(timeout_s=77)
    board = score_flow(store=str(store), settings=ScoreSettings(replicates=500))
    before = (store / "scores" / "leaderboard.parquet").read_bytes()
    second = replay_flow(**args)
    assert second.executed == 0 and second.skipped == 15
    score_flow(store=str(store), settings=ScoreSettings(replicates=500))
    assert (store / "scores" / "leaderboard.parquet").read_bytes() == before
    rows = {r["configuration"]: r for r in board.iter_rows(named=True)}
    assert rows["strong"]["jvr"] == 0.0  # the garbled candidate is E: not rejected
    assert rows["strong"]["grr"] == 1.0 and rows["broken"]["grr"] == 0.0
    assert rows["weak"]["wdr"] < rows["strong"]["wdr"]


def test_errors_are_not_results_on_resume(tmp_path):
    from datetime import UTC, datetime

    import pyarrow as pa

    from testprism.storage import SCHEMAS

    def run(key, outcome, reason, minute):
        return {"run_key": key, "instance_id": "i", "source": "s", "configuration": "c", "state": "buggy",
                "candidate_id": None, "label": None, "outcome": outcome, "reason": reason, "exit_code": None,
                "duration_s": 0.0, "attempts": 1, "stdout_tail": "", "tests": [],
                "started_at": datetime(2026, 1, 1, 0, minute, tzinfo=UTC), "suite_hash": "", "state_hash": "",
                "environment_hash": "", "policy_hash": "", "backend": "local", "isolation": "bubblewrap"}

    store = Store(tmp_path / "s")
    rows = [run("infra", "E", "sandbox_error", 1), run("slow", "E", "timeout", 1), run("apply", "E", "patch_failed", 1),
            run("done", "F", None, 1), run("healed", "E", "sandbox_error", 1), run("healed", "P", None, 2)]
    store.append("runs", pa.Table.from_pylist(rows, schema=SCHEMAS["runs"]))
    assert finished_keys(store) == {"slow", "apply", "done", "healed"}
    assert finished_keys(store, retry_errors=True) == {"apply", "done", "healed"}


def test_the_same_work_under_another_configuration_or_replay_is_not_run_again(tmp_path, work_root):
    """A run whose content (suite, state, environment, policy) the store already settled, in
    an earlier replay under another configuration, takes that row's verdict without running:
    its row names the row it came from (`reused_from`); work that is new still runs."""
    from testprism.flows.replay import replay_flow

    root = make_benchmark(tmp_path / "bench", {"strong": {"test_median.py": CHECKS},
                                               "twin": {"test_median.py": CHECKS},
                                               "weak": {"test_median.py": WEAK}})
    store = tmp_path / "store"
    args = dict(benchmark=str(root), store=str(store), run=RunSettings(work=work_root))
    first = replay_flow(**args, settings=ReplaySettings(configurations=("strong",)))
    states = first.planned
    assert first.executed == states and first.reused == 0
    second = replay_flow(**args)
    assert (second.skipped, second.reused, second.executed) == (states, states, states)  # strong, twin, weak
    runs = Store(store).scan("runs").collect()
    strong = {r["state_hash"]: r for r in runs.filter(pl.col("configuration") == "strong").iter_rows(named=True)}
    twin = list(runs.filter(pl.col("configuration") == "twin").iter_rows(named=True))
    assert len(twin) == states
    for r in twin:
        origin = strong[r["state_hash"]]
        assert r["reused_from"] == origin["run_key"] != r["run_key"]
        assert (r["outcome"], r["reason"], r["tests"]) == (origin["outcome"], origin["reason"], origin["tests"])
    assert runs.filter(pl.col("configuration") != "twin")["reused_from"].null_count() == 2 * states


def test_the_audit_policy_confirms_buggy_and_reference_and_a_seeded_share_of_candidates():
    """The cheaper confirmation policy: a failure on buggy or reference is always replayed,
    one on a candidate only when its content is drawn into the audit; the draw is seeded
    and keeps its share; the default policy's key (so every stored run's) is unchanged."""
    from testprism.tasks.execution.verdict import Policy

    assert Policy().key == "confirm=1;retries=2;fuzz=5" and Policy().confirmation == "every failure"
    audit = Policy(audit_share=0.3, audit_seed=7)
    keys = [f"content-{i}" for i in range(4000)]
    drawn = [audit.confirms("candidate", k) for k in keys]
    assert 0.27 < sum(drawn) / len(keys) < 0.33
    assert drawn == [Policy(audit_share=0.3, audit_seed=7).confirms("candidate", k) for k in keys]
    assert drawn != [Policy(audit_share=0.3, audit_seed=8).confirms("candidate", k) for k in keys]
    assert all(audit.confirms(kind, k) for kind in ("buggy", "reference") for k in keys[:50])
    assert all(Policy().confirms("candidate", k) for k in keys[:50])
    assert audit.key != Policy().key and "audit 0.3" in audit.confirmation
    with pytest.raises(ValueError):
        Policy(audit_share=0.0)


def test_an_audited_replay_records_which_failures_it_replayed_and_the_flake_rate_it_saw(tmp_path, work_root):
    """Under the audit policy every row says whether its failure was replayed; the flakes
    table counts replayed and unreplayed failures under the policy's name and gives the
    flake rate among the replayed with its exact interval (0 of n here: a suite that
    always fails)."""
    from testprism.tasks.execution.verdict import Policy

    more = {f"c{i}": ("invalid", diff("stats.py", BUGGY, BUGGY + f"# c{i}\n")) for i in range(8)}
    root = make_benchmark(tmp_path / "b", {"broken": {"test_x.py": BROKEN}}, extra_candidates=more)
    benchmark = load_benchmark(root)
    store = Store(tmp_path / "store")
    record_plan(benchmark, store)
    policy = Policy(audit_share=0.5, audit_seed=3)
    options = ExecutionOptions(backend="local", work_root=work_root, store_root=tmp_path / "store", concurrency=2,
                               policy=policy)
    specs = [s for s in plan(benchmark, options) if s.runs_in_sandbox]
    execute_batch(specs, options)
    runs = {r["run_key"]: r for r in store.scan("runs").collect().iter_rows(named=True)}
    for spec in specs:
        got = runs[spec.run_key]
        assert got["outcome"] == "F" and got["confirmation"] == policy.confirmation
        assert got["replayed"] is policy.confirms(spec.state.kind, spec.content_key)
        assert got["attempts"] == (2 if got["replayed"] else 1)
    flakes = flake_table(store).row(0, named=True)
    replayed = sum(r["replayed"] for r in runs.values())
    assert (flakes["confirmation"], flakes["replayed"], flakes["unreplayed"]) == (
        policy.confirmation, replayed, len(specs) - replayed)
    assert flakes["unreplayed"] > 0 and flakes["flake_rate"] == 0.0 and flakes["flake_low"] == 0.0
    assert 0 < flakes["flake_high"] < 1


BROKEN = "def test_always():\n    assert False\n"


@pytest.mark.slow
def test_early_stop_leaves_out_decided_runs_and_keeps_jvr(tmp_path, work_root, monkeypatch):
    """`early_stop`: once a suite's joint success is decided (S = 0: the broken suite fails
    the reference, the weak one passes an invalid candidate), its remaining runs are stored
    as E/early_stopped, not run; JVR is a full replay's. Which runs remain depends on the
    drawn run order (tasks/execution/batch.py), fixed here so the test is deterministic;
    the assertions hold for any order. A replay without early stop runs exactly those, and
    then every metric is the full replay's."""
    from testprism.flows.replay import replay_flow
    from testprism.tasks.execution import batch
    from tests.test_dask import leaderboard

    monkeypatch.setattr(batch, "new_order_secret", lambda: bytes(32))  # one drawn order
    root = make_benchmark(tmp_path / "b", {"strong": {"test_m.py": CHECKS}, "weak": {"test_m.py": WEAK},
                                           "broken": {"test_m.py": BROKEN}})
    full, early = tmp_path / "full", tmp_path / "early"
    args = dict(benchmark=str(root), run=RunSettings(work=work_root))
    full_replay, early_stop = ReplaySettings(concurrency=1), ReplaySettings(concurrency=1, early_stop=True)
    replay_flow(store=str(full), settings=full_replay, **args)
    first = replay_flow(store=str(early), settings=early_stop, **args)
    runs = Store(early).scan("runs").collect()
    stopped = runs.filter(pl.col("reason") == "early_stopped")
    assert first.planned == 12 and first.executed + stopped.height == 12 and stopped.height > 0
    decided = set(leaderboard(full).filter(pl.col("jvr") == 0.0)["configuration"])
    assert set(stopped["configuration"]) <= decided and set(stopped["outcome"]) == {"E"}
    assert "strong" not in set(stopped["configuration"])
    assert leaderboard(early)["jvr"].to_list() == leaderboard(full)["jvr"].to_list()
    counts = dict(flake_table(Store(early)).select("configuration", "early_stopped").rows())
    assert sum(counts.values()) == stopped.height and counts["strong"] == 0
    again = replay_flow(store=str(early), settings=early_stop, **args)
    assert again.executed == 0 and again.skipped == 12  # an early-stopped run is settled for early stop
    rest = replay_flow(store=str(early), settings=full_replay, **args)
    assert rest.executed == stopped.height and rest.skipped == 12 - stopped.height
    assert leaderboard(early).equals(leaderboard(full))
    assert flake_table(Store(early))["early_stopped"].sum() == 0  # the newest rows are the runs'


def test_an_instance_s_own_limits_bound_its_suites_runs_too(tmp_path, work_root):
    """`[limits]` (Harbor's task.toml) is the instance's for every run, a suite's as well as
    its official checks': a suite sleeping past the instance's `timeout_s` is E/timeout.
    Control: the same instance without `[limits]` passes under the run-wide default, and its
    run keys are what they were (the instance's limits enter only its own keys)."""
    from testprism.tasks.model.hashing import digest

    slow = "import time\n\n\ndef test_slow():\n    time.sleep(5)\n"
    found = {}
    for name, limits in (("limited", "\n[limits]\ntimeout_s = 2.0\n"), ("free", "")):
        root = make_benchmark(tmp_path / name, {"slow": {"test_slow.py": slow}})
        toml = root / "instances" / "mini__median-even" / "instance.toml"
        toml.write_text(toml.read_text() + limits)
        benchmark = load_benchmark(root)
        options = ExecutionOptions(backend="local", work_root=work_root, store_root=tmp_path / name / "store")
        specs = [s for s in plan(benchmark, options) if s.state.kind == "buggy"]
        execute_batch(specs, options)
        (row,) = Store(tmp_path / name / "store").scan("runs").collect().iter_rows(named=True)
        found[name] = (row["outcome"], row["reason"])
        default_key = digest("run", specs[0].suite.hash, specs[0].state.hash,
                             benchmark.instances["mini__median-even"].spec.environment.key, options.policy_hash)
        assert (specs[0].content_key == default_key) is (name == "free")
    assert found == {"limited": ("E", "timeout"), "free": ("P", None)}


def _what_the_replay_ran_with_is_read_back(store, work_root) -> None:
    """The stored replay's settings, as `testprism show` prints them: the stage's own, the
    options the runs were given, the TESTPRISM_* overrides (a credential by name only), and
    never the run order's secret."""
    import json

    from typer.testing import CliRunner

    from testprism.flows.cli import app
    from testprism.tasks.execution.stage_record import WITHHELD, stage_runs

    [row] = stage_runs(Store(store), "replay")
    assert row["settings"]["timeout_s"] == 77 and row["options"]["limits"]["timeout_s"] == 77
    assert row["options"]["backend"] == "local" and row["options"]["work_root"] == str(work_root)
    assert row["placement"] == {"workers": 1, "dask_address": None, "dask_cluster": None}
    assert row["environment"]["TESTPRISM_DOCKER_RUNTIME"] == "runsc"
    assert row["environment"]["TESTPRISM_MODEL_TOKEN"] == WITHHELD
    assert "order_secret" not in row["options"]
    stored = b"".join(p.read_bytes() for p in Store(store).parts("stage_runs"))
    assert b"hunter2" not in stored
    shown = CliRunner().invoke(app, ["show", str(store), "--stage", "replay"])
    assert shown.exit_code == 0, shown.output
    assert '"timeout_s": 77' in shown.output and "runsc" in shown.output
    assert json.loads(json.dumps(row["options"]))["policy_hash"] == row["policy_hash"]

