"""Rust: the bundled `fmtkit__truncate-multibyte` (a crate without dependencies, Debian's
cargo and rustc, libtest's own JUnit report, a `[build]` step keeping `target/` with the
state's tree) replayed by its strong suite and labelled by its official checks under `local`
and `docker`, the same outcome run by run; and libtest's JUnit names matched to the ids
libtest gives, on its real output (tests/data/runner_logs/make_logs.sh)."""

from __future__ import annotations

from pathlib import Path

import pytest

from testprism.flows.replay import replay_flow
from testprism.tasks.replay.settings import ReplaySettings
from testprism.storage import Store
from testprism.tasks.collect.label import GOLD_POLICY, label_of
from testprism.tasks.collect.verification import execute, plan, stored_rows
from testprism.tasks.execution.batch import ExecutionOptions
from testprism.tasks.execution.junit import parse_junit, select
from testprism.tasks.model.bundled import BUNDLED
from testprism.tasks.model.benchmark import load_benchmark
from testprism.tasks.model.outcome import TestResult as Case  # not collected as a test class
from testprism.tasks.model.state import states_of
from testprism.tasks.execution.run_settings import RunSettings
from tests.test_examples import bundled_part

INSTANCE = "fmtkit__truncate-multibyte"
LOGS = Path(__file__).parent / "data" / "runner_logs"
BACKENDS = ("local", "docker")


def test_libtest_junit_names_are_libtest_ids():
    """A unit test's case is `module::tests::name` (classname: its module path); an
    integration test's classname is the word `integration`, and its libtest name follows it."""
    lib = parse_junit((LOGS / "libtest_junit_lib.xml").read_bytes())
    integration = parse_junit((LOGS / "libtest_junit_integration.xml").read_bytes())
    assert {c.name: c.outcome for c in lib} == {
        "tests::passes": "passed", "tests::fails": "failed", "tests::panics_as_expected": "passed",
        "tests::prints_a_fake_result_line": "passed", "tests::nested::ünicode_name": "passed"}
    assert select(lib, ("tests::fails", "tests::nested::ünicode_name", "passes", "nested::ünicode_name",
                        "tests::ignored")) == {
        "tests::fails": "failed", "tests::nested::ünicode_name": "passed", "passes": "passed",
        "nested::ünicode_name": "missing",  # an id is the whole path in its crate
        "tests::ignored": "missing"}  # libtest 1.63 reports no case for an ignored test
    assert select(integration, ("integration_passes", "integration::integration_passes")) == {
        "integration_passes": "passed", "integration::integration_passes": "passed"}
    # a test in a module of an integration-test crate: its libtest name after `integration::`
    cases = (Case("integration::cases::b", "failed", ""), Case("integration::top", "passed", ""))
    assert select(cases, ("cases::b", "b", "top", "s::b")) == {"cases::b": "failed", "b": "failed", "top": "passed",
                                                                "s::b": "missing"}


def _replay_and_label(bench: Path, backend: str, store: Path, work: Path) -> dict:
    """The strong suite on every state (a failure confirmed, as replays do), then the official
    checks on every state, once each (collect confirms a candidate's failure: not needed to
    compare the labels with the benchmark's)."""
    summary = replay_flow(benchmark=str(bench), store=str(store), settings=ReplaySettings(configurations=("strong",)),
                          run=RunSettings(backend=backend, work=str(work)))
    instance = load_benchmark(bench).instances[INSTANCE]
    options = ExecutionOptions(backend=backend, work_root=work, store_root=store, concurrency=2, policy=GOLD_POLICY)
    specs = plan(instance, states_of(instance), options)
    execute(specs, options)
    rows = stored_rows(Store(store), [s.key for s in specs])
    labels = {s.state.candidate_id or s.state.kind: label_of(instance, rows[s.key]) for s in specs}
    return {"builds": summary.builds, "runs": Store(store).scan("runs").collect(), "labels": labels}


@pytest.fixture(scope="module")
def replays(tmp_path_factory, work_root) -> dict[str, dict]:
    """One replay and one labelling per backend (CI's time: each builds every state's tree)."""
    root = tmp_path_factory.mktemp("rust")
    bench = bundled_part(root / "bench", (INSTANCE,))
    return {backend: _replay_and_label(bench, backend, root / f"store-{backend}",
                                       work_root / f"rust-{root.name}" if backend == "local" else root / "work-docker")
            for backend in BACKENDS}


def _by_run(runs) -> dict[str, tuple[str, dict[str, str]]]:
    """Each run's outcome (a failure already confirmed in it) and its tests' outcomes, by the
    state it ran on."""
    return {r["candidate_id"] or r["state"]: (r["outcome"], {t["name"]: t["outcome"] for t in r["tests"]})
            for r in runs.iter_rows(named=True)}


@pytest.mark.slow
@pytest.mark.polyglot
@pytest.mark.requires("sandbox", "toolchains", "docker")
@pytest.mark.timeout(1800)
def test_rust_replays_and_labels_alike_under_local_and_docker(replays):
    instance = load_benchmark(BUNDLED).instances[INSTANCE]
    designed = {"buggy": "F", "reference": "P"} | {c.id: "P" if c.label == "valid" else "F" for c in instance.candidates}
    local, docker = (_by_run(replays[b]["runs"]) for b in BACKENDS)
    assert {state: outcome for state, (outcome, _) in local.items()} == designed
    assert docker == local  # run by run, test by test
    assert set(replays["local"]["runs"]["isolation"]) == {"bubblewrap"}
    assert set(replays["docker"]["runs"]["isolation"]) == {"container"}
    # every state built once, though each failing one ran twice (confirmed)
    assert replays["local"]["builds"] == replays["docker"]["builds"] == 11
    # the suite's cases, as libtest's JUnit names an integration test, matched by libtest's names
    cases = tuple(Case(name, outcome, "") for name, outcome in local["reference"][1].items())
    assert select(cases, ("truncate::cuts_between_characters", "rows_line_up_with_accented_names")) == {
        "truncate::cuts_between_characters": "passed", "rows_line_up_with_accented_names": "passed"}
    # the official checks label every candidate as the benchmark records it, failed checks included
    recorded = {c.id: (c.label, c.failed_checks or frozenset()) for c in instance.candidates}
    recorded |= {"buggy": ("invalid", frozenset(instance.spec.checks.fail_to_pass)), "reference": ("valid", frozenset())}
    for backend in BACKENDS:
        labels = replays[backend]["labels"]
        assert {k: (v.label, frozenset(v.failed_checks)) for k, v in labels.items()} == recorded, backend
        assert all(v.reason is None for v in labels.values()), backend
