"""`testprism pipeline CONFIG`: the stages of one config run in order, and a rerun redoes
nothing the store holds; the bundled example config is valid and replays the bundled
benchmark."""

from __future__ import annotations


import polars as pl
import pytest
from typer.testing import CliRunner

from testprism.flows.cli import app
from testprism.storage import Store
from testprism.tasks.model.benchmark import BUNDLED
from testprism.tasks.pipeline.config import PipelineConfigError, load_pipeline
from tests.synthbench import make_synthetic


def test_the_example_config_replays_the_bundled_benchmark_into_a_store_beside_it():
    config = load_pipeline(BUNDLED / "pipeline.toml")
    assert config.replay_benchmark == BUNDLED and config.replay_trusted
    assert config.store == BUNDLED.parent / "pipeline-out"
    assert config.report_out == config.store / "report.html"
    assert config.curate is None and config.collect is None


@pytest.mark.slow
@pytest.mark.requires("sandbox")
def test_the_pipeline_runs_every_stage_and_a_rerun_redoes_nothing(tmp_path, work_root):
    make_synthetic(tmp_path / "bench", 2)
    config = tmp_path / "pipeline.toml"
    config.write_text(f'store = "store"\nwork = "{work_root}"\n[replay]\nbenchmark = "bench"\n[score]\nreplicates = 100\n')
    store = Store(tmp_path / "store")
    for _ in range(2):  # the rerun appends no run: every key is in the store
        result = CliRunner().invoke(app, ["pipeline", str(config)])
        assert result.exit_code == 0, result.output
        assert store.scan("runs").select(pl.len()).collect().item() == 44  # 2 instances x 2 suites x 11 states
    assert sorted(store.read_table("leaderboard")["configuration"].to_list()) == ["good", "lax"]
    assert (tmp_path / "store" / "report.html").is_file()


def test_a_cluster_class_is_configuration(tmp_path):
    """SLURM through dask-jobqueue, as a pipeline config names it (README, Deployments)."""
    config = tmp_path / "pipeline.toml"
    config.write_text('store = "s"\n[replay]\nbenchmark = "b"\n[dask_cluster]\nclass = "distributed.LocalCluster"\n'
                      'kwargs = {cores = 8, memory = "16GB"}\nadapt = {minimum = 0, maximum = 20}\n')
    chosen = load_pipeline(config).dask_cluster
    assert chosen.class_path == "distributed.LocalCluster" and chosen.kwargs == {"cores": 8, "memory": "16GB"}
    assert chosen.adapt == {"minimum": 0, "maximum": 20}
    config.write_text('store = "s"\ndask_address = "tcp://127.0.0.1:8786"\n[replay]\nbenchmark = "b"\n'
                      '[dask_cluster]\nclass = "distributed.LocalCluster"\n')
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
