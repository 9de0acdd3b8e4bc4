"""Beyond Python: instances in Go and JavaScript, environments from a Dockerfile (docker) or
the host's toolchains (local), a build step run once per state, and per-test results from
each toolchain's JUnit XML. The same instances replayed under both backends give the same
outcomes."""

from __future__ import annotations

import shutil
import textwrap

import polars as pl
import pytest

from testprism.flows.replay import replay_flow
from testprism.storage import Store
from testprism.tasks.collect.label import label_of
from testprism.tasks.collect.verification import check_ids
from testprism.tasks.execution.junit import parse_junit, select
from testprism.tasks.model.benchmark import BenchmarkError, load_benchmark
from testprism.tasks.model.outcome import Reason
from testprism.tasks.model.workdir import WorkPaths
from testprism.tasks.sandbox.environment import EnvironmentBuildError, build_environment
from testprism.tasks.execution.run_settings import RunSettings
from tests.benchfixture import CHECKS, make_benchmark
from tests.langfixture import make_language_benchmark

EXPECTED = {  # (instance, state) -> outcome of the `strong` suite
    ("go__clamp", "buggy"): "F", ("go__clamp", "reference"): "P",
    ("go__clamp", "valid"): "P", ("go__clamp", "invalid"): "F",
    ("js__clamp", "buggy"): "F", ("js__clamp", "reference"): "P",
    ("js__clamp", "valid"): "P", ("js__clamp", "invalid"): "F",
}


def _fresh_work(work_root, tmp_path):
    """A work area of this test's own under the session's (which the sandbox's uid can
    traverse): the builds it counts are its own, not found done by an earlier test."""
    return str(work_root / f"own-{tmp_path.name}")


def _outcomes(store) -> dict[tuple[str, str], str]:
    runs = Store(store).scan("runs").collect()
    return {(r["instance_id"], r["candidate_id"] or r["state"]): r["outcome"] for r in runs.iter_rows(named=True)}


def test_languages_and_environments_load(tmp_path):
    bench = load_benchmark(make_language_benchmark(tmp_path / "bench"))
    go, js = bench.instances["go__clamp"], bench.instances["js__clamp"]
    assert (go.spec.language, js.spec.language) == ("go", "javascript")
    assert go.spec.environment.python is None and go.spec.environment.packages == ()  # no virtualenv by default
    assert go.spec.environment.context == (tmp_path / "bench" / "environments" / "go").resolve()
    assert go.spec.build is not None and js.spec.build is None
    # the Dockerfile's content is in the key, not its path: editing it makes a new environment
    before = go.spec.environment.key
    dockerfile = tmp_path / "bench" / "environments" / "go" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "RUN true\n")
    assert load_benchmark(tmp_path / "bench").instances["go__clamp"].spec.environment.key != before


@pytest.mark.parametrize("edit, field, message", [
    (lambda t: t.replace('language = "go"', 'language = "cobol"'), "language", "not a language testprism knows"),
    (lambda t: t.replace("../../environments/go/Dockerfile", "../../../Dockerfile"), "environment.dockerfile",
     "points outside the benchmark"),
    (lambda t: t.replace("../../environments/go/Dockerfile", "../../environments/go/Nope"), "environment.dockerfile",
     "is not a file"),
    (lambda t: t.replace('toolchains = ["go", "gotestsum"]', 'toolchains = ["go; rm -rf /"]'),
     "environment.toolchains", "not a command name"),
    (lambda t: t.replace("[build]\n", '[build]\ntimeout = 3\n'), "build.timeout", "Extra inputs are not permitted"),
])
def test_bad_multilanguage_fields_name_file_and_field(tmp_path, edit, field, message):
    root = make_language_benchmark(tmp_path / "bench")
    toml = root / "instances" / "go__clamp" / "instance.toml"
    toml.write_text(edit(toml.read_text()))
    with pytest.raises(BenchmarkError) as caught:
        load_benchmark(root)
    assert caught.value.path == toml and caught.value.field == field and message in str(caught.value)


def test_variables_are_checked(tmp_path):
    root = make_language_benchmark(tmp_path / "bench")
    toml = root / "instances" / "js__clamp" / "instance.toml"
    toml.write_text(toml.read_text().replace("[environment]\n", '[environment]\nvariables = { TESTPRISM_JUNIT = "/x" }\n'))
    with pytest.raises(BenchmarkError, match="environment.variables"):
        load_benchmark(root)


def test_local_names_every_missing_toolchain(tmp_path, monkeypatch):
    bench = load_benchmark(make_language_benchmark(tmp_path / "bench"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(EnvironmentBuildError) as caught:
        build_environment(bench.instances["go__clamp"].spec.environment, WorkPaths(tmp_path / "work"), False)
    assert "go (Debian: apt install golang-go)" in str(caught.value)
    assert "gotestsum (Debian: apt install gotestsum)" in str(caught.value)


def test_junit_ids_of_each_toolchain():
    """Go's gotestsum (classname = import path, subtests as cases of their own), node's
    runner (cases straight under <testsuites>, describe blocks nested), JUnit 5's console
    launcher (methods named with their signature)."""
    go = parse_junit(textwrap.dedent("""\
        <testsuites><testsuite name="example.com/calc/calc" tests="3">
        <testcase classname="example.com/calc/calc" name="TestClampInside"><failure message="Failed"/></testcase>
        <testcase classname="example.com/calc/calc" name="TestClampInside/keeps"><failure message="Failed"/></testcase>
        <testcase classname="example.com/calc/calc" name="TestClampHigh"/>
        </testsuite></testsuites>""").encode())
    assert select(go, ("TestClampHigh", "TestClampInside", "example.com/calc/calc::TestClampHigh", "TestClamp")) == {
        "TestClampHigh": "passed", "TestClampInside": "failed", "example.com/calc/calc::TestClampHigh": "passed",
        "TestClamp": "missing"}
    node = parse_junit(textwrap.dedent("""\
        <testsuites><testcase name="top" classname="test"/>
        <testsuite name="inside"><testsuite name="deeper">
        <testcase name="nested case" classname="test"><failure message="boom"/></testcase>
        </testsuite></testsuite></testsuites>""").encode())
    assert select(node, ("top", "nested case")) == {"top": "passed", "nested case": "failed"}
    java = parse_junit(b'<testsuite><testcase classname="org.x.FooTest" name="bar()"/>'
                       b'<testcase classname="org.x.FooTest" name="baz(int)"><failure/></testcase></testsuite>')
    assert select(java, ("org.x.FooTest::bar", "baz", "ba")) == {"org.x.FooTest::bar": "passed", "baz": "failed",
                                                                  "ba": "missing"}


@pytest.mark.slow
@pytest.mark.requires("sandbox", "toolchains")
def test_go_and_js_replay_under_local_with_one_build_per_state(tmp_path, work_root):
    bench, work = make_language_benchmark(tmp_path / "bench"), _fresh_work(work_root, tmp_path)
    summary = replay_flow(benchmark=str(bench), store=str(tmp_path / "store"), run=RunSettings(backend="local", work=work))
    assert _outcomes(tmp_path / "store") == EXPECTED
    # 4 Go states, each built once, though each of them ran twice (every F is confirmed)
    assert summary.builds == 4
    runs = Store(tmp_path / "store").scan("runs").collect()
    assert (runs["isolation"] == "bubblewrap").all()
    go_buggy = runs.filter((pl.col("instance_id") == "go__clamp") & (pl.col("state") == "buggy")).row(0, named=True)
    assert {t["name"].rsplit("::", 1)[-1]: t["outcome"] for t in go_buggy["tests"]} == {
        "TestBuiltTree": "passed", "TestAboveUpperBound": "failed", "TestAtUpperBound": "passed"}
    # a second replay into another store reuses the built trees: no build runs again
    again = replay_flow(benchmark=str(bench), store=str(tmp_path / "store2"), run=RunSettings(backend="local", work=work))
    assert again.builds == 0 and _outcomes(tmp_path / "store2") == EXPECTED


@pytest.mark.slow
@pytest.mark.requires("sandbox", "toolchains")
def test_a_failing_build_is_every_run_of_the_state_build_failed(tmp_path, work_root):
    bench = make_language_benchmark(tmp_path / "bench")
    shutil.rmtree(bench / "instances" / "js__clamp")
    shutil.rmtree(bench / "suites" / "strong" / "js__clamp")
    toml = bench / "instances" / "go__clamp" / "instance.toml"
    # the build fails on the invalid candidate's tree alone
    toml.write_text(toml.read_text().replace("go vet ./... && go build testing testing/internal/testdeps ./... && touch BUILT",
                                             "grep -q 'hi - 1' calc/calc.go && exit 3; "
                                             "go build testing testing/internal/testdeps && touch BUILT"))
    summary = replay_flow(benchmark=str(bench), store=str(tmp_path / "store"), run=RunSettings(backend="local", work=_fresh_work(work_root, tmp_path)))
    runs = Store(tmp_path / "store").scan("runs").collect()
    invalid = runs.filter(pl.col("candidate_id") == "invalid").row(0, named=True)
    assert (invalid["outcome"], invalid["reason"], invalid["exit_code"]) == ("E", "build_failed", 3)
    assert "build step exited 3" in invalid["stdout_tail"]
    # the benchmarks' rule: a candidate whose tree does not build resolves nothing (invalid,
    # every check failed), and stays out of panels (its reason is kept)
    instance = load_benchmark(bench).instances["go__clamp"]
    label = label_of(instance, invalid)
    assert (label.label, label.reason, label.failed_checks) == ("invalid", Reason.BUILD_FAILED, check_ids(instance))
    assert _outcomes(tmp_path / "store")[("go__clamp", "reference")] == "P"
    assert summary.builds == 4


@pytest.mark.slow
@pytest.mark.polyglot  # 65 s of CI's 30 minutes (2026-12-07): Go and JavaScript under docker, beside the other
# languages' docker replays; their local replay above stays in every run
@pytest.mark.requires("docker", "sandbox", "toolchains")
@pytest.mark.timeout(1200)
def test_docker_builds_the_dockerfiles_and_agrees_with_local(tmp_path, work_root):
    bench = make_language_benchmark(tmp_path / "bench")
    local = replay_flow(benchmark=str(bench), store=str(tmp_path / "local"), run=RunSettings(backend="local", work=_fresh_work(work_root, tmp_path)))
    docker = replay_flow(benchmark=str(bench), store=str(tmp_path / "docker"), run=RunSettings(backend="docker", work=str(tmp_path / "docker-work")))
    assert _outcomes(tmp_path / "docker") == _outcomes(tmp_path / "local") == EXPECTED
    assert local.builds == docker.builds == 4
    runs = Store(tmp_path / "docker").scan("runs").collect()
    assert set(runs["isolation"]) == {"container"}


def _with_build(bench, command: str, timeout_s: int = 60) -> None:
    toml = bench / "instances" / "mini__median-even" / "instance.toml"
    text = toml.read_text().replace("\n[checks]", f'\n[build]\ncommand = "{command}"\ntimeout_s = {timeout_s}\n\n[checks]', 1)
    toml.write_text(text)


@pytest.mark.requires("sandbox")
def test_a_build_cut_short_leaves_its_candidates_unlabelled(tmp_path, work_root):
    """A build that timed out says nothing of the patch (the host may be loaded): its runs
    carry no exit code, and a candidate's label stays open. Control: the same row with the
    exit code of a build that ran to its end is labelled invalid."""
    bench = make_benchmark(tmp_path / "bench", {"strong": {"test_m.py": CHECKS}})
    _with_build(bench, "sleep 30", timeout_s=1)
    replay_flow(benchmark=str(bench), store=str(tmp_path / "store"), run=RunSettings(backend="local", work=_fresh_work(work_root, tmp_path)))
    runs = Store(tmp_path / "store").scan("runs").collect()
    assert set(runs["reason"]) == {"build_failed"} and runs["exit_code"].is_null().all()
    row = runs.row(0, named=True)
    assert "timed out" in row["stdout_tail"]
    instance = load_benchmark(bench).instances["mini__median-even"]
    assert (label_of(instance, row).label, label_of(instance, row).reason) == (None, Reason.BUILD_FAILED)
    assert label_of(instance, row | {"exit_code": 2}).label == "invalid"


@pytest.mark.requires("sandbox")
def test_a_build_step_of_a_python_instance_is_what_runs_import(tmp_path, work_root):
    """The build's output (here a module it writes) is in the tree every run starts from."""
    suite = "from built import VALUE\n\n\ndef test_built():\n    assert VALUE == 42\n"
    bench = make_benchmark(tmp_path / "bench", {"strong": {"test_built.py": suite}})
    _with_build(bench, "echo VALUE = 42 > built.py")
    summary = replay_flow(benchmark=str(bench), store=str(tmp_path / "store"), run=RunSettings(backend="local", work=_fresh_work(work_root, tmp_path)))
    assert set(_outcomes(tmp_path / "store").values()) == {"P"} and summary.builds == 4


@pytest.mark.slow
@pytest.mark.requires("docker", "sandbox")
def test_each_backend_runs_the_tree_its_own_environment_built(tmp_path, work_root):
    """What a build leaves depends on the toolchain it ran with (a Go build cache is keyed by
    the compiler): replays under local and under docker on one work area build every state
    once each, and every run starts from the tree built with the interpreter it runs (the
    host's environment under local, the image's under docker), not the other backend's."""
    suite = ("import sys\nfrom pathlib import Path\n\n\ndef test_built_with_this_interpreter():\n"
             "    assert Path('built_with').read_text().strip() == sys.executable\n")
    bench = make_benchmark(tmp_path / "bench", {"strong": {"test_built.py": suite}})
    _with_build(bench, "python -c 'import sys; print(sys.executable)' > built_with")
    work = _fresh_work(work_root, tmp_path)
    local = replay_flow(benchmark=str(bench), store=str(tmp_path / "local"), run=RunSettings(backend="local", work=work))
    docker = replay_flow(benchmark=str(bench), store=str(tmp_path / "docker"), run=RunSettings(backend="docker", work=work))
    assert set(_outcomes(tmp_path / "local").values()) == set(_outcomes(tmp_path / "docker").values()) == {"P"}
    assert local.builds == docker.builds == 4


@pytest.mark.requires("sandbox")
def test_a_build_that_turns_the_program_into_a_link_is_refused(tmp_path, work_root):
    """A build is untrusted code on a candidate's tree: replacing `program/` by a link to a
    host folder must not make the harness copy (or write) through it."""
    bench = make_benchmark(tmp_path / "bench", {"strong": {"test_m.py": CHECKS}})
    bait = tmp_path / "host-folder"
    bait.mkdir()
    (bait / "secret").write_text("host data")
    bait.chmod(0o777)
    _with_build(bench, f"cd .. && mv program moved && ln -s {bait} program")
    replay_flow(benchmark=str(bench), store=str(tmp_path / "store"), run=RunSettings(backend="local", work=_fresh_work(work_root, tmp_path)))
    runs = Store(tmp_path / "store").scan("runs").collect()
    assert set(runs["reason"]) == {"build_failed"}
    assert "cannot be kept" in runs["stdout_tail"][0]
    assert [p.name for p in bait.iterdir()] == ["secret"]
