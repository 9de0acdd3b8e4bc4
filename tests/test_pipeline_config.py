"""`testprism pipeline CONFIG`: the stages of one config run in order (a generate stage
included), and a rerun redoes nothing the store holds; the bundled example config is valid
and replays the bundled benchmark."""

from __future__ import annotations


import polars as pl
import pytest
from typer.testing import CliRunner

from testprism.flows.cli import app
from testprism.storage import Store
from testprism.tasks.model.bundled import BUNDLED
from testprism.tasks.pipeline.config import PipelineConfigError, load_pipeline
from tests.chatserver import SUITE_SCRIPT
from tests.synthbench import make_synthetic


def test_the_example_config_replays_the_bundled_benchmark_into_a_store_beside_it():
    config = load_pipeline(BUNDLED / "pipeline.toml")
    assert config.replay_benchmark == BUNDLED and config.replay_trusted
    assert config.store == BUNDLED.parent / "pipeline-out"
    assert config.report_out == config.store / "report.html"
    assert config.curate is None and config.collect is None


#: a generate stage's agent: asks its model for the suite once, through the channel, and
#: writes what it answers (tests/chatserver.py's `suite` marker: the strong suite)
ASKING_AGENT = r"""
import json, os, pathlib, urllib.request
body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "[[script:suite]] write run_tests.sh"}]})
request = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", body.encode(),
                                 {"Content-Type": "application/json"})
reply = json.loads(urllib.request.urlopen(request, timeout=30).read())
pathlib.Path("tmp/run_tests.sh").write_text(reply["choices"][0]["message"]["content"])
"""


@pytest.mark.slow
@pytest.mark.requires("sandbox")
def test_the_pipeline_runs_every_stage_and_a_rerun_redoes_nothing(tmp_path, work_root, endpoint):
    """generate → replay → score → report from one config (issue 43, item 5): the agent of
    [generate] runs in the sandbox and asks the scripted model on loopback for its suite;
    replay runs the generated configuration with the benchmark's own, and score ranks it."""
    url, script = endpoint
    make_synthetic(tmp_path / "bench", 2)
    (tmp_path / "agent.py").write_text(ASKING_AGENT)
    config = tmp_path / "pipeline.toml"
    config.write_text(f'store = "store"\n[run]\nwork = "{work_root}"\n'
                      '[generate]\nbenchmark = "bench"\nconfiguration = "asked"\n'
                      'command = "python3 tmp/.task/tools/agent.py"\ntools = ["agent.py"]\n'
                      f'model_url = "{url}"\n[replay]\nbenchmark = "bench"\n[score]\nreplicates = 100\n')
    store = Store(tmp_path / "store")
    for _ in range(2):  # the rerun appends no run and asks no model: every key is in the store
        result = CliRunner().invoke(app, ["pipeline", str(config)])
        assert result.exit_code == 0, result.output
        assert store.scan("runs").select(pl.len()).collect().item() == 66  # 2 instances x 3 suites x 11 states
        assert script.requests["suite"] == 2
    generated = store.scan("generations").collect()
    assert generated["configuration"].to_list() == ["asked"] * 2 and generated["reason"].to_list() == [None] * 2
    assert generated["total_tokens"].to_list() == [5, 5]  # the channel counted each reply
    for iid in ("synth__0000", "synth__0001"):  # generate wrote into its benchmark, where replay read it
        assert (tmp_path / "bench" / "suites" / "asked" / iid / "run_tests.sh").read_text() == SUITE_SCRIPT
    board = {r["configuration"]: r["jvr"] for r in store.read_table("leaderboard").iter_rows(named=True)}
    assert board == {"asked": 1.0, "good": 1.0, "lax": 0.0}
    assert (tmp_path / "store" / "report.html").is_file()


@pytest.mark.slow
@pytest.mark.requires("sandbox")
def test_a_pipeline_with_a_gate_replays_and_scores_only_the_rows_it_passes(tmp_path, work_root):
    """[check] runs first: the twin whose reference fixes nothing fails the gate, so replay
    runs none of its states and the leaderboard holds the other row only."""
    from tests.benchfixture import BUGGY, WEAK, diff, make_benchmark
    from tests.test_gate import twin

    root = make_benchmark(tmp_path / "bench", {"weak": {"test_weak.py": WEAK}})
    twin(root, "mini__median-wrong-fix", **{"reference.diff": diff("stats.py", BUGGY, BUGGY.replace("non-empty", "any"))})
    (root / "suites" / "weak" / "mini__median-wrong-fix").mkdir()
    for name in ("test_weak.py", "run_tests.sh"):
        (root / "suites" / "weak" / "mini__median-wrong-fix" / name).write_bytes(
            (root / "suites" / "weak" / "mini__median-even" / name).read_bytes())
    config = tmp_path / "pipeline.toml"
    config.write_text(f'store = "store"\n[run]\nwork = "{work_root}"\n[check]\n[replay]\nbenchmark = "bench"\n'
                      '[score]\nreplicates = 100\n')
    result = CliRunner().invoke(app, ["pipeline", str(config)])
    assert result.exit_code == 0, result.output
    store = Store(tmp_path / "store")
    gate = store.scan("gate").collect()
    assert dict(zip(gate["instance_id"], gate["verdict"], strict=True)) == {
        "mini__median-even": "ok", "mini__median-wrong-fix": "gold_fails"}
    assert set(store.scan("runs").collect()["instance_id"]) == {"mini__median-even"}
    assert set(store.read_table("instance_scores")["instance_id"]) == {"mini__median-even"}


def test_a_cluster_class_is_configuration(tmp_path):
    """SLURM through dask-jobqueue, as a pipeline config names it (docs/deployments.md)."""
    config = tmp_path / "pipeline.toml"
    config.write_text('store = "s"\n[replay]\nbenchmark = "b"\n[run.dask_cluster]\nclass = "distributed.LocalCluster"\n'
                      'kwargs = {cores = 8, memory = "16GB"}\nadapt = {minimum = 0, maximum = 20}\n')
    chosen = load_pipeline(config).run.dask_cluster
    assert chosen.class_path == "distributed.LocalCluster" and chosen.kwargs == {"cores": 8, "memory": "16GB"}
    assert chosen.adapt == {"minimum": 0, "maximum": 20}
    config.write_text('store = "s"\n[replay]\nbenchmark = "b"\n[run]\ndask_address = "tcp://127.0.0.1:8786"\n'
                      '[run.dask_cluster]\nclass = "distributed.LocalCluster"\n')
    with pytest.raises(PipelineConfigError, match="two clusters"):
        load_pipeline(config)


def test_the_replay_stage_takes_the_replays_policies_and_refuses_a_share_out_of_range(tmp_path):
    config = tmp_path / "pipeline.toml"
    config.write_text('store = "s"\n[replay]\nbenchmark = "b"\nconfirm_audit = 0.25\naudit_seed = 3\n'
                      'early_stop = true\nshared_disk = false\n')
    stage = load_pipeline(config).replay
    assert (stage.confirm_audit, stage.audit_seed, stage.early_stop, stage.shared_disk) == (0.25, 3, True, False)
    config.write_text('store = "s"\n[replay]\nbenchmark = "b"\nconfirm_audit = 2\n')
    with pytest.raises(PipelineConfigError, match="replay.confirm_audit"):
        load_pipeline(config)


def _stages():
    """Per stage: its CLI command (None: it reads a config file), settings model, flow,
    pipeline section (None: not a pipeline stage) and what that section adds, and its
    deployment."""
    from testprism.flows.check import check_flow
    from testprism.flows.collect import collect_flow
    from testprism.flows.crossval import crossval_flow
    from testprism.flows.generate import generate_flow
    from testprism.flows.replay import replay_flow
    from testprism.flows.rsi import rsi_flow
    from testprism.flows.select import select_flow
    from testprism.tasks.collect.settings import CollectSettings
    from testprism.tasks.generate.crossval_config import CrossvalConfig
    from testprism.tasks.generate.settings import GenerateSettings, RsiSettings, SelectSettings
    from testprism.tasks.gate.settings import CheckSettings
    from testprism.tasks.pipeline.config import CheckStage, CollectStage, GenerateStage, ReplayStage
    from testprism.tasks.replay.settings import ReplaySettings

    return {
        "replay": ("replay", ReplaySettings, replay_flow, ReplayStage, {"benchmark"}),
        "collect": ("collect", CollectSettings, collect_flow, CollectStage, {"benchmark", "predictions", "diffs", "out"}),
        "check": ("check", CheckSettings, check_flow, CheckStage, {"benchmark"}),
        "generate": ("generate", GenerateSettings, generate_flow, GenerateStage,
                     {"benchmark", "configuration", "command", "out"}),
        "rsi": ("rsi", RsiSettings, rsi_flow, None, set()),
        "crossval": (None, CrossvalConfig, crossval_flow, None, set()),
        "select": ("select", SelectSettings, select_flow, None, set()),
    }


@pytest.mark.parametrize("stage", ["replay", "collect", "check", "generate", "rsi", "crossval", "select"])
def test_each_stage_option_is_declared_once_and_every_entry_point_takes_it(stage):
    """Each stage's settings object is the one declaration (issue 30, item 1): the CLI's
    options, the flow's parameters (Prefect's run form), the pipeline config's section and
    prefect.yaml's defaults all come from it or are checked against it."""
    import inspect

    import typer.main
    import yaml
    from pydantic import BaseModel

    from testprism.flows.settings_options import _fields

    command_name, model, flow_, section, added = _stages()[stage]
    fields = set(model.model_fields)
    if command_name is not None:
        command = typer.main.get_command(app)
        help_of = {p.name: p.help for p in command.commands[command_name].params}
        options = dict(_fields(model))  # a nested model's fields are options of their own
        assert set(options) <= set(help_of)  # each field an option, with the field's help text
        assert all(help_of[name] == field.description for name, field in options.items())
        assert {name.split("__")[0] for name in options} == fields  # and every field has its options
    # the flow takes the object whole: none of its fields is a parameter of its own
    parameters = set(inspect.signature(flow_.fn).parameters)
    assert "settings" in parameters and not fields & parameters
    schema = flow_.parameters.model_dump()["definitions"][model.__name__]["properties"]
    assert set(schema) == fields
    assert all(schema[name].get("description") == field.description for name, field in model.model_fields.items()
               if field.description and not (isinstance(field.annotation, type)
                                             and issubclass(field.annotation, BaseModel)))
    if section is not None:
        assert set(section.model_fields) == fields | added  # the pipeline's section: the same fields, and its inputs
    # prefect.yaml's defaults validate against the flow they start, settings whole
    deployments = yaml.safe_load((BUNDLED.parent / "prefect.yaml").read_text())["deployments"]
    deployed = next(d for d in deployments if d["name"] == stage)
    checked = flow_.validate_parameters(deployed["parameters"])
    assert isinstance(checked["settings"], model)
    assert set(deployed["parameters"]["settings"]) <= fields


def test_every_deployment_validates_against_its_flow():
    """prefect.yaml's parameters are what each flow takes: a deployment never starts a run
    that fails on its defaults (issue 31, item 5: generate, crossval, rsi and select too)."""
    import importlib

    import yaml

    deployments = yaml.safe_load((BUNDLED.parent / "prefect.yaml").read_text())["deployments"]
    assert {"generate", "crossval", "rsi", "select"} <= {d["name"] for d in deployments}
    for deployed in deployments:
        module, name = deployed["entrypoint"].split(":")
        flow_ = getattr(importlib.import_module(module), name)
        flow_.validate_parameters(deployed["parameters"])
    replay = next(d for d in deployments if d["name"] == "replay")
    from testprism.flows.replay import replay_flow

    with pytest.raises(Exception, match="timeout_s"):
        replay_flow.validate_parameters({**replay["parameters"], "settings": {"timeout_s": 0}})


def test_a_generate_stage_runs_before_replay_and_replay_runs_what_it_wrote(tmp_path):
    config = tmp_path / "pipeline.toml"
    config.write_text('store = "s"\n[generate]\nbenchmark = "b"\nconfiguration = "agent"\ncommand = "true"\n'
                      'out = "generated"\ntools = ["tool.py"]\n[generate.caps]\nrun_steps = 7\n')
    chosen = load_pipeline(config)
    assert chosen.generate.caps.run_steps == 7 and chosen.generate.tools == (tmp_path / "tool.py",)
    assert chosen.generate_benchmark == tmp_path / "b" and chosen.replay_benchmark == tmp_path / "generated"
    config.write_text('store = "s"\n[generate]\nconfiguration = "agent"\ncommand = "true"\n')
    with pytest.raises(PipelineConfigError, match="generate.benchmark"):
        load_pipeline(config)
    config.write_text('store = "s"\n[generate]\nbenchmark = "b"\nconfiguration = "../x"\ncommand = "true"\n')
    with pytest.raises(PipelineConfigError, match="generate.configuration"):
        load_pipeline(config)


def test_a_replay_option_out_of_its_bounds_is_a_usage_error_naming_it():
    result = CliRunner().invoke(app, ["replay", str(BUNDLED), "--store", "/nonexistent-store", "--confirm-audit", "2"])
    assert result.exit_code == 2 and "--confirm-audit" in result.output and "less than or equal to 1" in result.output
    result = CliRunner().invoke(app, ["replay", str(BUNDLED), "--store", "/nonexistent-store", "--timeout", "0"])
    assert result.exit_code == 2 and "--timeout" in result.output


def test_a_check_section_gates_what_collect_reads_by_default(tmp_path):
    config = tmp_path / "pipeline.toml"
    config.write_text('store = "s"\n[check]\ntimeout_s = 60\n[collect]\nbenchmark = "rows"\nout = "panels"\n')
    chosen = load_pipeline(config)
    assert chosen.check is not None and chosen.check.timeout_s == 60
    assert chosen.check_benchmark == tmp_path / "rows" == chosen.collect_benchmark
    config.write_text('store = "s"\n[check]\nbenchmark = "other"\n[replay]\nbenchmark = "b"\n')
    assert load_pipeline(config).check_benchmark == tmp_path / "other"
    config.write_text('store = "s"\n[check]\ntimeout_s = 0\n[replay]\nbenchmark = "b"\n')
    with pytest.raises(PipelineConfigError, match="check.timeout_s"):
        load_pipeline(config)
