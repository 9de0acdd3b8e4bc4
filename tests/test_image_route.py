"""Real SWE-bench instances through the image route (issue 27, build 1 and 5): images in
SWE-bench's official layout built here (tests/swebench_image.py), the published rows
imported as image instances, their real candidates labelled by the official checks (sympy's
`bin/test` log read by the `sympy` parser), and a real generated suite replayed under
`local` (the image's exported root under bubblewrap) and `docker` (the image itself), with
the same outcomes run by run.

Two rows of ../shared/realdata (the test reads the copy under tests/data/realdata):
`sympy__sympy-18532`, whose checks reproduce on the `sympy==1.5.1` release
(docs/swebench.md), with its two real resolved patches; and `sympy__sympy-18189`, the only
row of that release with real generated tests (TDD-Bench's Otter and Otter++), replayed on
buggy, reference and its real resolved patch. Both rows' images are one content (the same
release and environment): two names, one program, one key.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from testprism.flows.collect import collect_flow
from testprism.flows.replay import replay_flow
from testprism.storage import Store
from testprism.tasks.importing.image_route import ImageRoute, import_image_rows
from testprism.tasks.importing.image_specs import ImageSpecs
from testprism.tasks.importing.suite_import import import_suites
from testprism.tasks.model.benchmark import load_benchmark
from testprism.tasks.execution.run_settings import RunSettings
from tests.swebench_image import build_swebench_image

REALDATA = Path(__file__).parent / "data" / "realdata"
LABELLED, REPLAYED = "sympy__sympy-18532", "sympy__sympy-18189"
#: the suites' runner: pytest with JUnit, on the tests their test patches add or change
#: (`{tests}`: test_diophantine.py whole takes ~35 s a run, its one generated test ~3 s)
SUITE_COMMAND = "python -m pytest -p no:cacheprovider -q {test_files} -k {tests} --junitxml=$TESTPRISM_JUNIT"

pytestmark = [pytest.mark.slow, pytest.mark.requires("docker", "sandbox"), pytest.mark.timeout(1800)]


def _rows(name: str, ids: tuple[str, ...]) -> list[dict]:
    return [r for r in map(json.loads, (REALDATA / name).read_text().splitlines()) if r["instance_id"] in ids]


@pytest.fixture(scope="module")
def image_bench(tmp_path_factory, docker_engine) -> Path:
    """The two published rows imported through the image route (`import swebench --route
    image`), with 18189's real resolved patch as its candidate (label: the official one,
    resolved) and its real generated suites (`import suites`)."""
    for instance_id in (LABELLED, REPLAYED):
        build_swebench_image(instance_id=instance_id)
    root = tmp_path_factory.mktemp("image-route")
    rows = root / "rows.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in _rows("swebench_lite_sympy_dev.jsonl",
                                                                  (LABELLED, REPLAYED))))
    bench = root / "bench"
    report = import_image_rows(rows, bench, ImageRoute(ImageSpecs.load()))
    assert sorted(report.imported) == [REPLAYED, LABELLED] and not report.issues, report.issues
    checks = load_benchmark(bench).instances[LABELLED].spec.checks
    assert "bin/test -C --verbose" in checks.command and checks.parser == "sympy"  # SWE-bench's, as published
    _add_candidates(bench / "instances" / REPLAYED, _rows("predictions_resolved_dev.jsonl", (REPLAYED,)))
    generated = root / "generated.jsonl"
    generated.write_text("".join(json.dumps(r) + "\n" for r in _rows("generated_tests_dev.jsonl", (REPLAYED,))))
    report = import_suites(generated, bench, command=SUITE_COMMAND)
    assert not [i for i in report.issues if i.fatal], report.issues
    return bench


def _add_candidates(folder: Path, predictions: list[dict]) -> None:
    """The instance's real resolved patches as its candidates, labelled as officially."""
    (folder / "candidates").mkdir()
    tables = []
    for number, row in enumerate(predictions):
        (folder / "candidates" / f"resolved-{number}.diff").write_text(row["model_patch"])
        tables.append(f'\n[[candidates]]\nid = "resolved-{number}"\nlabel = "valid"\n'
                      f'patch = "candidates/resolved-{number}.diff"\nnote = "{row["model_name_or_path"]}"\n')
    with open(folder / "instance.toml", "a") as toml:
        toml.write("".join(tables))


def test_real_candidates_get_their_official_labels_through_the_image(image_bench, tmp_path, work_root):
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text("".join(json.dumps(r) + "\n" for r in _rows("predictions_resolved_dev.jsonl", (LABELLED,))))
    bench = tmp_path / "labelled"  # the one row whose checks reproduce on the release
    shutil.copytree(image_bench / "instances" / LABELLED, bench / "instances" / LABELLED)
    summary = collect_flow(benchmark=str(bench), store=str(tmp_path / "store"), predictions=[str(predictions)],
                           run=RunSettings(backend="local", work=str(work_root)))
    verifications = Store(tmp_path / "store").scan("verifications").collect()
    mine = verifications.filter(pl.col("instance_id") == LABELLED)
    assert set(zip(mine["state"], mine["outcome"])) >= {("buggy", "F"), ("reference", "P")}
    agree, compared = summary.agreement
    assert compared == 2 and agree == 2, summary.stages  # both resolved officially, both valid here


def test_a_real_generated_suite_replays_alike_under_local_and_docker(image_bench, tmp_path, work_root, monkeypatch):
    """Under `local`, `docker` (bind mode: the state's tree bound at /testbed) and docker's
    archive mode (a remote engine's: the tree copied into an empty volume at /testbed)."""
    outcomes = {}
    for backend, copy in (("local", "bind"), ("docker", "bind"), ("docker", "archive")):
        monkeypatch.setenv("TESTPRISM_DOCKER_COPY", copy)
        store = tmp_path / f"{backend}-{copy}"
        replay_flow(benchmark=str(image_bench), store=str(store), run=RunSettings(backend=backend, work=str(work_root)))
        runs = Store(store).scan("runs").collect().filter(pl.col("instance_id") == REPLAYED)
        outcomes[backend if copy == "bind" else copy] = {
            (r["configuration"], r["state"], r["candidate_id"]): (r["outcome"], r["reason"])
            for r in runs.iter_rows(named=True)}
    assert outcomes["local"] == outcomes["docker"] == outcomes["archive"]
    suites = {c for c, _, _ in outcomes["local"]}
    assert len(suites) == 2
    for suite in suites:  # the generated tests reproduce the issue: fail before the fix, pass after it
        assert outcomes["local"][(suite, "buggy", None)][0] == "F"
        assert outcomes["local"][(suite, "reference", None)][0] == "P"
    assert load_benchmark(image_bench).instances[REPLAYED].spec.environment.image is not None
