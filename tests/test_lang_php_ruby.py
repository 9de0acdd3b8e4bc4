"""PHP (PHPUnit 9.6, `--log-junit`) and Ruby (RSpec 3.12 with rspec_junit_formatter): the
bundled instances replayed for real under `local` (the host's Debian toolchains) and
`docker` (examples/environments/{php,ruby}/Dockerfile), with the outcomes designed run by
run, the same under both backends, and the official checks labelling every candidate
through the one matching rule (PHPUnit's namespaced `Class::method` and data sets, RSpec's
full descriptions holding `::`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from testprism.flows.collect import collect_flow
from testprism.tasks.replay.settings import ReplaySettings
from testprism.flows.replay import replay_flow
from testprism.storage import Store
from testprism.tasks.collect.verification import check_ids
from testprism.tasks.execution.junit import parse_junit, select
from testprism.tasks.model.benchmark import load_benchmark
from testprism.tasks.model.patches import is_test_file
from testprism.tasks.model.pytest_ids import find_test_functions
from testprism.tasks.model import outcome
from testprism.tasks.execution.run_settings import RunSettings
from tests.test_examples import bundled_part

INSTANCES = ("sizekit__format-rounds-to-1024", "listkit__two-items-serial-comma")
JUNIT = Path(__file__).parent / "data" / "junit"
#: the first test to ask for `replays` runs them: two image builds, 2 x (22 runs + 26 verifications)
SLOW = pytest.mark.timeout(1800)

Key = tuple[str, str, str | None, int]


def _rows(store: Path, dataset: str) -> dict[Key, dict]:
    """A dataset's rows by (instance, state, candidate, repeat): the gold validation runs the
    checks on buggy and reference twice."""
    frame = Store(store).scan(dataset).collect()
    rows = {(r["instance_id"], r["state"], r["candidate_id"], r.get("repeat") or 0): r for r in frame.iter_rows(named=True)}
    assert len(rows) == frame.height
    return rows


def _seen(rows: dict[Key, dict]) -> dict[Key, tuple]:
    """What a backend must agree on: each row's outcome, reason and every test's outcome."""
    return {key: (r["outcome"], r["reason"], sorted((t["name"], t["outcome"]) for t in r["tests"] or ()))
            for key, r in rows.items()}


@pytest.fixture(scope="module")
def replays(tmp_path_factory, work_root):
    """The two instances with their strong suite, replayed and their candidates checked
    (collect) once per backend: {backend: (runs, verifications, collect summary)}."""
    root = tmp_path_factory.mktemp("php-ruby")
    bench = bundled_part(root / "bench", INSTANCES)
    for kind in ("biased", "weak", "broken"):
        shutil.rmtree(bench / "suites" / kind)
    out = {}
    for backend in ("local", "docker"):
        store = root / f"store-{backend}"
        work = str(work_root / f"php-ruby-{backend}")
        # failures on buggy and reference confirmed by a replay, those on candidates not (the
        # cheaper policy: 20 runs fewer), as the outcomes here are the designed ones
        replay_flow(benchmark=str(bench), store=str(store), run=RunSettings(backend=backend, work=work), settings=ReplaySettings(confirm_audit=0.01))
        summary = collect_flow(benchmark=str(bench), store=str(store), run=RunSettings(backend=backend, work=work))
        out[backend] = (_rows(store, "runs"), _rows(store, "verifications"), summary)
    return load_benchmark(bench), out


@pytest.mark.slow
@pytest.mark.polyglot
@pytest.mark.requires("sandbox", "docker", "toolchains")
@SLOW
@pytest.mark.parametrize("backend", ["local", "docker"])
def test_strong_suite_outcomes_as_designed(replays, backend):
    bench, out = replays
    runs = out[backend][0]
    expected = {}
    for iid in INSTANCES:
        expected[(iid, "buggy", None, 0)] = "F"
        expected[(iid, "reference", None, 0)] = "P"
        for candidate in bench.instances[iid].candidates:
            expected[(iid, "candidate", candidate.id, 0)] = "P" if candidate.label == "valid" else "F"
    assert {key: r["outcome"] for key, r in runs.items()} == expected
    assert {r["isolation"] for r in runs.values()} == {"bubblewrap" if backend == "local" else "container"}
    # per-test results came from each runner's JUnit XML, not from the exit status
    assert all(r["tests"] for r in runs.values())


@pytest.mark.slow
@pytest.mark.polyglot
@pytest.mark.requires("sandbox", "docker", "toolchains")
@SLOW
@pytest.mark.parametrize("backend", ["local", "docker"])
def test_checks_label_every_candidate(replays, backend):
    bench, out = replays
    verifications, summary = out[backend][1], out[backend][2]
    assert summary.agreement == (18, 18)
    for iid in INSTANCES:
        instance = bench.instances[iid]
        ids = check_ids(instance)

        def failing(key: Key) -> set[str]:
            tests = tuple(outcome.TestResult(t["name"], t["outcome"]) for t in verifications[key]["tests"])
            outcomes = select(tests, ids)
            assert "missing" not in outcomes.values(), (key, outcomes)
            return {i for i, o in outcomes.items() if o != "passed"}

        for repeat in (0, 1):
            assert failing((iid, "buggy", None, repeat)) == set(instance.spec.checks.fail_to_pass)
            assert failing((iid, "reference", None, repeat)) == set()
        for candidate in instance.candidates:
            assert failing((iid, "candidate", candidate.id, 0)) == set(candidate.failed_checks or ()), candidate.id


@pytest.mark.slow
@pytest.mark.polyglot
@pytest.mark.requires("sandbox", "docker", "toolchains")
@SLOW
def test_local_and_docker_agree_run_by_run(replays):
    _, out = replays
    assert _seen(out["local"][0]) == _seen(out["docker"][0])
    assert _seen(out["local"][1]) == _seen(out["docker"][1])


def test_ids_match_real_phpunit_and_rspec_reports():
    """The checks' reports on the buggy state, as PHPUnit 9.6.7 and RSpec 3.12.0 with
    rspec_junit_formatter 0.4.1 (Debian bookworm) wrote them: PHPUnit dots a namespaced
    class (`Sizekit.Tests.FormatBoundaryTest`) and names each data set's case
    `method with data set "..."`; rspec_junit_formatter names a case by the spec file
    (`spec.join_connectors_spec`) and the example's full description."""
    php = parse_junit((JUNIT / "phpunit.xml").read_bytes())
    assert ("Sizekit.Tests.FormatBoundaryTest::testBoundaryFollowsPrecision with data set \"two decimals do not\"",
            "passed") in {(c.name, c.outcome) for c in php}
    assert select(php, (r"Sizekit\Tests\FormatBoundaryTest::testBoundaryFollowsPrecision",  # two data sets fail
                        "Sizekit.Tests.FormatBoundaryTest::testPrecision", r"Sizekit\Tests\FormatBoundaryTest::testPrecisio",
                        "testRoundsUpIntoTheNextUnit", r"Other\FormatBoundaryTest::testPrecision")) == {
        r"Sizekit\Tests\FormatBoundaryTest::testBoundaryFollowsPrecision": "failed",
        "Sizekit.Tests.FormatBoundaryTest::testPrecision": "passed",
        r"Sizekit\Tests\FormatBoundaryTest::testPrecisio": "missing",
        "testRoundsUpIntoTheNextUnit": "failed",
        r"Other\FormatBoundaryTest::testPrecision": "missing"}
    ruby = parse_junit((JUNIT / "rspec.xml").read_bytes())
    assert ("spec.join_connectors_spec::ListKit::Sentence.join rejects unknown options", "passed") in {
        (c.name, c.outcome) for c in ruby}
    assert select(ruby, ("ListKit::Sentence.join with two items uses a custom two_words_connector",
                         "ListKit::Sentence.join rejects unknown options",
                         "spec.join_connectors_spec::ListKit::Sentence.join rejects unknown options",
                         "ListKit::Sentence.join rejects unknown",
                         "rejects unknown options")) == {
        "ListKit::Sentence.join with two items uses a custom two_words_connector": "failed",
        "ListKit::Sentence.join rejects unknown options": "passed",
        "spec.join_connectors_spec::ListKit::Sentence.join rejects unknown options": "passed",
        "ListKit::Sentence.join rejects unknown": "missing",
        "rejects unknown options": "missing"}


def test_php_and_ruby_test_rules():
    """PHPUnit's rule (`test*` methods, `@test`, `#[Test]`) and RSpec's / Minitest's, read by
    their tree-sitter grammars; names as the runners report them."""
    php = """<?php
namespace App\\Tests;

final class RangeTest extends TestCase
{
    /** @test */
    public function keepsInside(): void {}

    #[Test]
    public function capsAbove(): void {}

    public function testBelow(): void {}

    /** @testdox helper */
    private function helper(): void {}
}
"""
    assert find_test_functions(php, "php") == [("RangeTest::keepsInside", 7, 7), ("RangeTest::capsAbove", 9, 10),
                                               ("RangeTest::testBelow", 12, 12)]
    ruby = """RSpec.describe Range::Clamp, ".call" do
  context "above" do
    it "caps" do
      expect(1).to eq(1)
    end
  end
  specify("keeps") { expect(2).to eq(2) }
  let(:x) { 1 }
end

class ClampTest < Minitest::Test
  def test_caps; end
  def helper; end
end
"""
    assert find_test_functions(ruby, "ruby") == [("Range::Clamp.call above caps", 3, 5), ("Range::Clamp.call keeps", 7, 7),
                                                 ("ClampTest#test_caps", 12, 12)]
    assert is_test_file("tests/RangeTest.php", "php") and not is_test_file("src/Range.php", "php")
    assert is_test_file("spec/range_spec.rb", "ruby") and is_test_file("test/test_range.rb", "ruby")
    assert not is_test_file("lib/range.rb", "ruby") and not is_test_file("spec/spec_helper.rb", "ruby")
