"""Java for real: the bundled `sizekit__format-shows-1024-kib` (JUnit 5 through Maven Surefire,
a `[build]` step compiling each state once) replayed under `local` (the host's JDK and Maven,
the environment's Maven repository resolved from the seed project) and `docker` (the
`java` Dockerfile's image, its repository resolved at build): the strong suite on every
state and the official checks labelling every candidate, outcome by outcome the designed
ones, and the same under both backends. Maven starts slowly (a JVM for Maven, one for
Surefire: seconds a run), so the module replays once per backend, with failures of
candidates not replayed (`audit_share`) and the checks run once a state."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from testprism.flows.replay import replay_flow
from testprism.tasks.replay.settings import ReplaySettings
from testprism.storage import Store
from testprism.tasks.collect.label import label_of
from testprism.tasks.collect.verification import execute, plan, stored_rows
from testprism.tasks.execution.batch import ExecutionOptions
from testprism.tasks.execution.junit import parse_junit, select
from testprism.tasks.execution.verdict import Policy
from testprism.tasks.model.bundled import BUNDLED
from testprism.tasks.model.benchmark import load_benchmark
from testprism.tasks.model.state import states_of
from testprism.tasks.sandbox.docker.environment_image import extra_certificates
from testprism.tasks.execution.run_settings import RunSettings

ID = "sizekit__format-shows-1024-kib"
DATA = Path(__file__).parent / "data" / "surefire"


def _strong_only(root: Path) -> Path:
    """The bundled instance, its environment and its strong suite, nothing else."""
    shutil.copytree(BUNDLED / "instances" / ID, root / "instances" / ID)
    shutil.copytree(BUNDLED / "environments" / "java", root / "environments" / "java")
    shutil.copytree(BUNDLED / "suites" / "strong" / ID, root / "suites" / "strong" / ID)
    return root


def _replay(bench: Path, backend: str, store: Path, work: Path) -> tuple[dict, dict, int]:
    """The strong suite's outcome per state, the checks' label and failed checks per state,
    and the number of state builds, under `backend`."""
    # a failure on a candidate is not replayed (a share drawn by content: ~0 here); one on
    # the buggy program still is
    summary = replay_flow(benchmark=str(bench), store=str(store), run=RunSettings(backend=backend, work=str(work)), settings=ReplaySettings(confirm_audit=1e-6))
    runs = Store(store).scan("runs").collect()
    suite = {r["candidate_id"] or r["state"]: r["outcome"] for r in runs.iter_rows(named=True)}
    instance = load_benchmark(bench).instances[ID]
    options = ExecutionOptions(backend=backend, work_root=work, store_root=store, concurrency=2,
                               policy=Policy(confirm_failures=0))
    specs = plan(instance, states_of(instance), options)
    execute(specs, options)
    rows = stored_rows(Store(store), [s.key for s in specs])
    labels = {}
    for spec in specs:
        label = label_of(instance, rows[spec.key])
        labels[spec.state.candidate_id or spec.state.kind] = (label.label, frozenset(label.failed_checks))
    return suite, labels, summary.builds


@pytest.fixture(scope="module")
def replays(tmp_path_factory, work_root) -> dict[str, tuple[dict, dict, int]]:
    root = tmp_path_factory.mktemp("java")
    bench = _strong_only(root / "bench")
    local_work = work_root / "java-local"  # the sandbox's uid traverses the session's work area
    return {"local": _replay(bench, "local", root / "local", local_work),
            "docker": _replay(bench, "docker", root / "docker", root / "docker-work")}


@pytest.mark.slow
@pytest.mark.polyglot
@pytest.mark.requires("sandbox", "docker", "toolchains")
@pytest.mark.timeout(2400)
@pytest.mark.parametrize("backend", ["local", "docker"])
def test_java_outcomes_are_the_designed_ones(replays, backend):
    instance = load_benchmark(BUNDLED).instances[ID]
    suite, labels, builds = replays[backend]
    designed = {"buggy": "F", "reference": "P"} | {c.id: "P" if c.label == "valid" else "F" for c in instance.candidates}
    assert suite == designed
    # the checks: buggy fails the fail-to-pass check alone; every candidate gets its label
    # and, if invalid, exactly the failed checks the benchmark records
    assert labels["buggy"] == ("invalid", frozenset(instance.spec.checks.fail_to_pass))
    assert labels["reference"] == ("valid", frozenset())
    assert {c.id: labels[c.id] for c in instance.candidates} == {
        c.id: (c.label, c.failed_checks or frozenset()) for c in instance.candidates}
    # each state built once for the suite's runs and once with the checks over it
    assert builds == 1 + 1 + len(instance.candidates)


@pytest.mark.slow
@pytest.mark.polyglot
@pytest.mark.requires("sandbox", "docker", "toolchains")
@pytest.mark.timeout(2400)
def test_local_and_docker_agree_run_by_run(replays):
    assert replays["local"][:2] == replays["docker"][:2]


def test_surefire_names_match_class_hash_method_ids():
    """Real Surefire 3.2.5 reports (tests/data/surefire, the strong suite and the checks on
    the reference): a method is classname `example.bytesize.X`, name `method`, a
    parametrised one `method(long, String)[n]`; ids name them `Class#method`,
    `Class.method`, the simple class name, or `classname::method`."""
    cases = tuple(case for report in sorted(DATA.glob("*.xml")) for case in parse_junit(report.read_bytes()))
    ids = ("example.bytesize.ByteSizeOfficialTest#extremesOfLong", "ByteSizeOfficialTest#extremesOfLong",
           "example.bytesize.ByteSizeOfficialTest.extremesOfLong", "example.bytesize.ByteSizeOfficialTest::extremesOfLong",
           "example.bytesize.ByteSizeSuiteTest#formats", "ByteSizeSuiteTest.randomCountsAreCloseAndNeverShow1024",
           "example.bytesize.ByteSizeOfficialTest#extremes", "OtherTest#extremesOfLong", "SizeOfficialTest#extremesOfLong")
    assert select(cases, ids) == dict(zip(ids, ["passed"] * 6 + ["missing"] * 3))
    formats = [c for c in cases if c.name.startswith("example.bytesize.ByteSizeSuiteTest::formats(")]
    assert len(formats) == 24 and formats[0].name.endswith("[1]")
    # one failing part fails the parametrised method
    broken = replace(formats[3], outcome="failed")
    assert select(tuple(c for c in cases if c is not formats[3]) + (broken,), ("ByteSizeSuiteTest#formats",)) == {
        "ByteSizeSuiteTest#formats": "failed"}


def test_a_dockerfile_build_gets_the_machines_added_certificates(tmp_path):
    """What the java Dockerfile's Maven trusts besides Debian's certificates while it fetches
    (`EXTRA_CA`): the `.crt` files of the machine's folder of added CAs, nothing else."""
    folder = tmp_path / "ca-certificates"
    (folder / "corp").mkdir(parents=True)
    (folder / "proxy.crt").write_text("-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n")
    (folder / "corp" / "root.crt").write_text("-----BEGIN CERTIFICATE-----\nBBB\n-----END CERTIFICATE-----\n")
    (folder / "notes.txt").write_text("not a certificate")
    assert extra_certificates(folder).count("BEGIN CERTIFICATE") == 2 and "not a" not in extra_certificates(folder)
    assert extra_certificates(tmp_path / "none") == ""
