"""A user's mistake ends a command in a line or two naming the file and the field, with the
exit status docs/commands.md documents (2: wrong input, 3: this machine cannot run it), and no
traceback unless --verbose. Run through the real CLI: the installed `testprism` in a
subprocess where the traceback is the point, typer's runner for the rest (seconds faster)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from testprism.flows.cli import app
from testprism.storage import Store

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
TESTPRISM = Path(sys.executable).with_name("testprism")
NO_ENGINE = {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}


@dataclass(frozen=True)
class Case:
    """A mistake, and what its message must name (file and field, or the option)."""

    args: list[str]
    status: int
    names: list[str]
    env: dict[str, str] | None = None


@pytest.fixture()
def inputs(tmp_path: Path) -> Path:
    """Small, real inputs to get wrong: a benchmark of one example instance and its suites,
    a scored-looking store, recipes, rows and predictions."""
    bench = tmp_path / "bench"
    instance = "algokit__bisect-past-end"
    shutil.copytree(EXAMPLES / "instances" / instance, bench / "instances" / instance)
    shutil.copytree(EXAMPLES / "suites" / "strong" / instance, bench / "suites" / "strong" / instance)
    broken = tmp_path / "broken"
    shutil.copytree(bench, broken)
    toml = broken / "instances" / instance / "instance.toml"
    toml.write_text(re.sub(r"fail_to_pass = \[.*?\]", "fail_to_pass = []", toml.read_text(), count=1, flags=re.S))
    (tmp_path / "old-store").mkdir()
    (tmp_path / "old-store" / "testprism-store.json").write_text(json.dumps({"schema_version": 999}) + "\n")
    Store(tmp_path / "empty-store")
    leaderboard = Store(tmp_path / "scored-store").paths.score_table("leaderboard")
    leaderboard.parent.mkdir()
    leaderboard.write_bytes(b"")  # what the check before the flow looks for; it reads no further
    (tmp_path / "recipes.toml").write_text('[[recipe]]\nrepo = "a/b"\n')
    (tmp_path / "repos.toml").write_text('"a/b" = \n')
    (tmp_path / "rows.jsonl").write_text("{}\n")
    (tmp_path / "repos").mkdir()
    (tmp_path / "not-a-benchmark").mkdir()
    (tmp_path / "pipeline-bad.toml").write_text('store = "s"\n[replay]\nbenchmark = "bench"\n[score]\nreplicates = 0\n')
    (tmp_path / "pipeline-nothing.toml").write_text('store = "s"\n')
    (tmp_path / "pipeline-cluster.toml").write_text('store = "s"\n[run.dask_cluster]\nclass = "no_such_jobqueue.SLURMCluster"\n'
                                                    '[replay]\nbenchmark = "bench"\n')
    (tmp_path / "pipeline-broken.toml").write_text('store = "s"\n[replay]\nbenchmark = "broken"\n')
    return tmp_path


def cases(t: Path) -> dict[str, Case]:
    bench, instance = t / "bench", "algokit__bisect-past-end"
    swebench = ["import", "swebench", str(t / "rows.jsonl"), "--out", str(t / "out")]
    return {
        "malformed benchmark": Case(["replay", str(t / "broken"), "--store", str(t / "s")], 2,
                                    [f"{t}/broken/instances/{instance}/instance.toml", "field checks.fail_to_pass"]),
        "unknown configuration": Case(["replay", str(bench), "--store", str(t / "s"), "--configuration", "nope"], 2,
                                      [f"{bench}/suites/nope", "field configuration"]),
        "unknown backend": Case(["replay", str(bench), "--store", str(t / "s"), "--backend", "nope"], 2,
                                ["'--backend'", "unknown backend 'nope'"]),
        "sandbox unavailable": Case(["replay", str(bench), "--store", str(t / "s"), "--backend", "docker"], 3,
                                    ["no Docker engine answers"], NO_ENGINE),
        "store of another schema": Case(["replay", str(bench), "--store", str(t / "old-store")], 2,
                                        [f"{t}/old-store/testprism-store.json", "field schema_version"]),
        "missing store": Case(["score", str(t / "no-store")], 2, [f"{t}/no-store", "field (folder)"]),
        "store with nothing to score": Case(["score", str(t / "empty-store")], 2,
                                            [f"{t}/empty-store/suites", "field (folder)"]),
        "unscored store": Case(["report", str(t / "empty-store"), "--out", str(t / "r.html")], 2,
                               [f"{t}/empty-store/scores/leaderboard.parquet", "field (file)"]),
        "report of a missing benchmark": Case(["report", str(t / "scored-store"), "--benchmark", str(t / "no-bench")], 2,
                                              [f"{t}/no-bench/instances", "field (folder)"]),
        "malformed recipe": Case([*swebench, "--recipes", str(t / "recipes.toml"), "--repos", str(t / "repos")], 2,
                                 [f"{t}/recipes.toml", "field recipe.0.test_command"]),
        "malformed mapping file": Case([*swebench, "--recipes", str(EXAMPLES / "recipes"), "--repos",
                                        str(t / "repos.toml")], 2, [f"{t}/repos.toml", "field (syntax)"]),
        "missing rows file": Case(["import", "swebench", str(t / "no.jsonl"), "--out", str(t / "out"), "--recipes",
                                   str(EXAMPLES / "recipes"), "--repos", str(t / "repos")], 2, [f"{t}/no.jsonl", "rows"]),
        "missing prediction file": Case(["import", "suites", str(t / "no.jsonl"), "--out", str(bench)], 2,
                                        [f"{t}/no.jsonl", "predictions"]),
        "suites into no benchmark": Case(["import", "suites", str(t / "rows.jsonl"), "--out", str(t / "not-a-benchmark")],
                                         2, [f"{t}/not-a-benchmark/instances", "field (folder)"]),
        "configuration that is no folder name": Case(
            ["import", "suites", str(t / "rows.jsonl"), "--out", str(bench), "--configuration", ".."], 2,
            ["'--configuration'", "'..' is not a configuration name"]),
        "collect of a missing benchmark": Case(["collect", str(t / "no-bench"), "--store", str(t / "s")], 2,
                                               [f"{t}/no-bench/instances", "field (folder)"]),
        "collect of a missing prediction file": Case(
            ["collect", str(bench), "--store", str(t / "s"), "--predictions", str(t / "no.jsonl")], 2,
            [f"{t}/no.jsonl", "'--predictions'"]),
        "check of a missing benchmark": Case(["check", str(t / "no-bench"), "--store", str(t / "s")], 2,
                                             [f"{t}/no-bench/instances", "field (folder)"]),
        "check into a store of another schema": Case(["check", str(bench), "--store", str(t / "old-store")], 2,
                                                     [f"{t}/old-store/testprism-store.json", "field schema_version"]),
        "images of a malformed benchmark": Case(["images", "build", str(t / "broken")], 2,
                                                [f"{t}/broken/instances/{instance}/instance.toml"]),
        "images without an engine": Case(["images", "list"], 3, ["no Docker engine answers"], NO_ENGINE),
        "malformed pipeline config": Case(["pipeline", str(t / "pipeline-bad.toml")], 2,
                                          [f"{t}/pipeline-bad.toml", "field score.replicates"]),
        "pipeline config with nothing to replay": Case(["pipeline", str(t / "pipeline-nothing.toml")], 2,
                                                       [f"{t}/pipeline-nothing.toml", "field replay.benchmark"]),
        "pipeline on a cluster class not installed": Case(
            ["pipeline", str(t / "pipeline-cluster.toml")], 2,
            [f"{t}/pipeline-cluster.toml", "field run.dask_cluster.class", "pip install no-such-jobqueue"]),
        "pipeline of a malformed benchmark": Case(["pipeline", str(t / "pipeline-broken.toml")], 2,
                                                  [f"{t}/broken/instances/{instance}/instance.toml"]),
        "demo on an unknown backend": Case(["demo", "--out", str(t / "d"), "--backend", "nope"], 2,
                                           ["'--backend'", "unknown backend 'nope'"]),
    }


CASES = list(cases(Path("/x")))


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("name", CASES)
def test_a_mistake_is_one_message_with_its_file_field_and_status(name, inputs, work_root):
    case = cases(inputs)[name]
    result = CliRunner().invoke(app, case.args, env=case.env)
    output = result.output
    assert result.exit_code == case.status, output
    assert result.exception is None or isinstance(result.exception, SystemExit), output  # not raised through
    unwrapped = " ".join(line.strip(" │") for line in output.splitlines())  # click's box wraps long messages
    for part in case.names:
        assert part in unwrapped, output
    assert "Traceback" not in output
    errors = [line for line in _lines(output) if "error" in line.lower()]
    assert errors and len(_lines(output)) <= 8, output  # at most the usage box, or the log line of a load and one


def _testprism(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")} | {"COLUMNS": "100"}
    return subprocess.run([str(TESTPRISM), *args], capture_output=True, text=True, timeout=120, env=env)


def test_the_installed_command_prints_one_line_and_the_traceback_only_when_verbose(tmp_path):
    done = _testprism("replay", str(tmp_path / "no-such-folder"), "--store", str(tmp_path / "store"))
    assert done.returncode == 2, done.stderr
    assert _lines(done.stderr) == [
        f"testprism: error: {tmp_path}/no-such-folder/instances: field (folder): missing: a benchmark holds "
        "instances/<id>/"]
    assert not done.stdout and not (tmp_path / "store").exists()  # nothing started: no flow, no store
    verbose = _testprism("--verbose", "replay", str(tmp_path / "no-such-folder"), "--store", str(tmp_path / "store"))
    assert verbose.returncode == 2
    assert "Traceback" in verbose.stderr and "load_benchmark" in verbose.stderr
    assert _lines(verbose.stderr)[0] == _lines(done.stderr)[0]


def test_a_bug_is_not_dressed_as_a_users_mistake(monkeypatch, tmp_path):
    """Only the project's user-error types are shortened; anything else keeps its traceback."""
    from testprism.tasks.score import scores

    def broken(*args, **kwargs):
        raise KeyError("a bug")

    monkeypatch.setattr(scores, "scorable_store", broken)  # the command imports it when it runs
    result = CliRunner().invoke(app, ["score", str(tmp_path)])
    assert result.exit_code == 1 and isinstance(result.exception, KeyError)
    assert "testprism: error" not in result.output
