"""TypeScript for real: the bundled `tskit__duration-ms-unit` (Vitest with its JUnit reporter,
`tsc --noEmit` as the build step once per state) replayed under `local` (the host's Vitest and
tsc, which .ci/setup installs) and `docker` (examples/environments/typescript/Dockerfile): the
strong suite's outcome on every state and the official checks' label of every candidate as
designed, and the same on both backends, run by run. Vitest's case names (`describe > it`,
classname the file) against the ids an instance may list."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from testprism.flows.replay import replay_flow
from testprism.tasks.replay.settings import ReplaySettings
from testprism.storage import Store
from testprism.tasks.collect.candidate import normalise_patch
from testprism.tasks.collect.label import LABEL_POLICY, label_of
from testprism.tasks.collect.verification import candidate_states, execute, plan, stored_rows
from testprism.tasks.execution.batch import ExecutionOptions
from testprism.tasks.execution.junit import parse_junit, select
from testprism.tasks.model.bundled import BUNDLED
from testprism.tasks.model.benchmark import load_benchmark
from testprism.tasks.execution.run_settings import RunSettings
from tests.test_examples import bundled_part

INSTANCE = "tskit__duration-ms-unit"
ENVIRONMENT = BUNDLED / "environments" / "typescript"


def _designed() -> tuple[dict[str, str], dict[str, tuple[str, tuple[str, ...]]]]:
    """The strong suite's outcome per state (F on the buggy program and the invalid
    candidates, P on the others) and each candidate's label and failed checks, as the
    instance's files say."""
    instance = load_benchmark(BUNDLED).instances[INSTANCE]
    outcomes = {"buggy": "F", "reference": "P"} | {c.id: "P" if c.label == "valid" else "F" for c in instance.candidates}
    labels = {c.id: (c.label, tuple(sorted(c.failed_checks or ()))) for c in instance.candidates}
    return outcomes, labels


def _replay(bench: Path, backend: str, root: Path, work: Path) -> dict:
    """One replay of the strong suite on every state, and one run of the checks on every
    candidate (as the collect flow labels them), on `backend`; `work` a work area the
    sandbox's uid can traverse."""
    store = root / f"{backend}-store"
    summary = replay_flow(benchmark=str(bench), store=str(store), run=RunSettings(backend=backend, work=str(work)), settings=ReplaySettings(configurations=("strong",)))
    runs = Store(store).scan("runs").collect().sort("started_at")
    instance = load_benchmark(bench).instances[INSTANCE]
    options = ExecutionOptions(backend=backend, work_root=work, store_root=store, policy=LABEL_POLICY)
    patches = {c.id: normalise_patch(c.patch.decode()) for c in instance.candidates}
    specs = plan(instance, list(candidate_states(instance, patches).values()), options)
    execute(specs, options)
    rows = stored_rows(Store(store), [s.key for s in specs])
    labels = {}
    for spec in specs:
        label = label_of(instance, rows[spec.key])
        labels[spec.state.candidate_id] = (label.label, tuple(sorted(label.failed_checks)))
    first = {}  # state -> its first run (a failure's confirmation comes after it)
    for run in runs.iter_rows(named=True):
        first.setdefault(run["candidate_id"] or run["state"], run)
    return {"builds": summary.builds, "isolation": set(runs["isolation"]), "labels": labels,
            "outcomes": {state: run["outcome"] for state, run in first.items()},
            "tests": {state: sorted((t["name"], t["outcome"]) for t in run["tests"]) for state, run in first.items()},
            "checks_tests": {spec.state.candidate_id: sorted((t["name"], t["outcome"]) for t in rows[spec.key]["tests"])
                             for spec in specs}}


@pytest.fixture(scope="module")
def replays(tmp_path_factory, work_root, require) -> dict[str, dict]:
    """The instance with its strong suite alone, replayed once per backend (CI's time)."""
    require("sandbox")
    require("toolchains")
    require("docker")
    root = tmp_path_factory.mktemp("typescript")
    bench = bundled_part(root / "bench", (INSTANCE,))
    for kind in ("biased", "weak", "broken"):
        shutil.rmtree(bench / "suites" / kind)
    return {backend: _replay(bench, backend, root, work_root / f"typescript-{backend}") for backend in ("local", "docker")}


@pytest.mark.slow
@pytest.mark.polyglot
@pytest.mark.timeout(1800)
@pytest.mark.requires("sandbox", "toolchains", "docker")
def test_strong_suite_and_checks_as_designed_under_both_backends(replays):
    outcomes, labels = _designed()
    for backend, got in replays.items():
        assert got["outcomes"] == outcomes, backend
        assert got["labels"] == labels, backend
        # every state built (type-checked) once, though a failing one ran twice
        assert got["builds"] == len(outcomes), backend
    assert replays["local"]["isolation"] == {"bubblewrap"} and replays["docker"]["isolation"] == {"container"}


@pytest.mark.slow
@pytest.mark.polyglot
@pytest.mark.timeout(1800)
@pytest.mark.requires("sandbox", "toolchains", "docker")
def test_local_and_docker_agree_run_by_run(replays):
    """Not only the outcomes: each run's cases, named as Vitest's JUnit reporter names them."""
    local, docker = replays["local"], replays["docker"]
    assert local["tests"] == docker["tests"] and local["checks_tests"] == docker["checks_tests"]
    buggy = dict(local["tests"]["buggy"])
    assert buggy["tmp/durations.test.ts::milliseconds > issue example: 250ms is 250"] == "failed"
    assert buggy["tmp/durations.test.ts::units and parts > decimals"] == "passed"


SAMPLE = """\
import { describe, expect, it } from 'vitest';

describe('outer', () => {
  describe('inner', () => {
    it('passes', () => { expect(1).toBe(1); });
    it('fails', () => { expect(1).toBe(2); });
  });
  it('alone', () => { expect(1).toBe(1); });
});
it('top level', () => { expect(1).toBe(1); });
"""


@pytest.mark.requires("toolchains")
def test_vitest_case_names_match_each_id_form(tmp_path):
    """Vitest's own JUnit report (classname: the file; name: the describe blocks and the
    title joined by ` > `) against the forms an F2P/P2P list may use: its name, Jest's
    `describe › it`, the file-qualified name Vitest prints, `file::name`, and a describe
    block for every test inside it."""
    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "sample.test.ts").write_text(SAMPLE)
    report = tmp_path / "junit.xml"
    done = subprocess.run(["vitest", "run", "--reporter=junit", f"--outputFile.junit={report}", "test/"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr  # one test fails, as written
    cases = parse_junit(report.read_bytes())
    assert sorted(c.name for c in cases) == [
        "test/sample.test.ts::outer > alone", "test/sample.test.ts::outer > inner > fails",
        "test/sample.test.ts::outer > inner > passes", "test/sample.test.ts::top level"]
    assert select(cases, (
        "outer > inner > passes", "outer \u203a inner \u203a passes", "test/sample.test.ts > outer > inner > passes",
        "test/sample.test.ts::outer > inner > passes", "outer > inner > fails", "top level",
        "outer > inner", "outer", "outer > alone", "outer > inn", "other.test.ts > top level", "inner > passes",
    )) == {
        "outer > inner > passes": "passed", "outer \u203a inner \u203a passes": "passed",
        "test/sample.test.ts > outer > inner > passes": "passed", "test/sample.test.ts::outer > inner > passes": "passed",
        "outer > inner > fails": "failed", "top level": "passed",
        "outer > inner": "failed", "outer": "failed", "outer > alone": "passed",
        # a title cut short, another file, a describe block left out: not these tests
        "outer > inn": "missing", "other.test.ts > top level": "missing", "inner > passes": "missing",
    }


def test_dockerfile_adds_the_lockfile_tarballs():
    """The Dockerfile fetches each tarball of package-lock.json through ADD (the engine's
    trust, not the base image's; Dockerfile's comment), so the two lists must agree: every
    package npm ci installs on linux-x64, nothing else."""
    lock = json.loads((ENVIRONMENT / "package-lock.json").read_text())
    wanted = set()
    for path, package in lock["packages"].items():
        if not path:
            continue
        if ("linux" in package.get("os", ["linux"]) and "x64" in package.get("cpu", ["x64"])
                and "glibc" in package.get("libc", ["glibc"])):
            wanted.add(package["resolved"])
    dockerfile = (ENVIRONMENT / "Dockerfile").read_text()
    added = set(re.findall(r"^    (https://registry\.npmjs\.org/\S+\.tgz) \\$", dockerfile, re.MULTILINE))
    assert added == wanted
    assert len({url.rsplit("/", 1)[1] for url in added}) == len(added)  # one folder: no two of one file name
