"""`testprism pipeline` with its `[generate]` stage, end to end (issue 43, item 5): a config
whose generate runs a small agent in the sandbox, the agent asks the scripted model on
loopback (tests/chatserver.py) for its suite through the channel, and replay, score and
report then take the generated configuration with the benchmark's own (tests/synthbench.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from testprism.flows.cli import app
from testprism.storage import Store
from tests.chatserver import SUITE_SCRIPT
from tests.synthbench import make_synthetic

#: asks its model for the suite once, through the channel, and writes what it answers
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
@pytest.mark.timeout(600)
def test_a_pipeline_with_a_generate_stage_replays_scores_and_reports_what_it_generated(tmp_path, work_root, endpoint):
    url, script = endpoint
    make_synthetic(tmp_path / "bench", 2, valid=1, invalid=1)
    (tmp_path / "agent.py").write_text(ASKING_AGENT)
    config = tmp_path / "pipeline.toml"
    config.write_text(
        f'store = "store"\nwork = "{work_root}"\n'
        '[generate]\nbenchmark = "bench"\nconfiguration = "asked"\n'
        'command = "python3 tmp/.task/tools/agent.py"\ntools = ["agent.py"]\n'
        f'model_url = "{url}"\n[score]\nreplicates = 200\n')
    result = CliRunner().invoke(app, ["pipeline", str(config)])
    assert result.exit_code == 0, result.output
    store = Store(tmp_path / "store")
    generated = store.scan("generations").collect()
    assert generated["configuration"].to_list() == ["asked", "asked"] and generated["reason"].to_list() == [None] * 2
    assert generated["total_tokens"].to_list() == [5, 5] and script.requests["suite"] == 2  # the channel counted it
    for iid in ("synth__0000", "synth__0001"):  # generate wrote into its benchmark, where replay read it
        assert (tmp_path / "bench" / "suites" / "asked" / iid / "run_tests.sh").read_text() == SUITE_SCRIPT
    board = {r["configuration"]: r for r in store.read_table("leaderboard").iter_rows(named=True)}
    assert set(board) == {"asked", "good", "lax"}  # the generated configuration beside the benchmark's own
    assert board["asked"]["jvr"] == board["good"]["jvr"] == 1.0 and board["lax"]["jvr"] == 0.0
    runs = store.scan("runs").collect()
    assert runs.filter(configuration="asked").height == 2 * 4  # buggy, reference, 2 candidates per instance
    assert (tmp_path / "store" / "report.html").is_file()

    again = CliRunner().invoke(app, ["pipeline", str(config)])  # a rerun redoes nothing settled
    assert again.exit_code == 0, again.output
    assert script.requests["suite"] == 2 and Store(tmp_path / "store").scan("runs").collect().height == runs.height
