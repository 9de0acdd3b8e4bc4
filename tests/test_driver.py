"""The one stage driver (flows/driver.py): what it reports to the progress hook once per
finished batch, and that a rerun places nothing (issue 30, item 2)."""

from __future__ import annotations

import pytest

from testprism.flows import progress
from testprism.flows.replay import replay_flow
from testprism.tasks.replay.settings import ReplaySettings
from testprism.tasks.execution.run_settings import RunSettings
from tests.synthbench import make_synthetic
from tests.test_progress import Recorder

pytestmark = [pytest.mark.slow, pytest.mark.requires("sandbox")]


def test_the_driver_reports_each_batch_and_a_rerun_places_none(tmp_path, work_root):
    bench = make_synthetic(tmp_path / "bench", 2)  # 2 instances x 2 suites x 11 states = 44 runs
    store = tmp_path / "store"
    hook = Recorder()
    with progress.reporting_to(hook):
        summary = replay_flow(benchmark=str(bench), store=str(store), settings=ReplaySettings(),
                              run=RunSettings(work=str(work_root)))
    assert hook.calls[0] == ("start", "replay", 44, 0)
    assert hook.calls[-1] == ("finish",)
    batches = [c for c in hook.calls if c[0] == "batch"]
    assert len(batches) > 2  # it advanced batch by batch
    assert sum(c[1] for c in batches) == 44
    assert sum(c[4] for c in batches) == summary.outcomes.get("E", 0) == 0
    again_hook = Recorder()
    with progress.reporting_to(again_hook):
        again = replay_flow(benchmark=str(bench), store=str(store), settings=ReplaySettings(), run=RunSettings(work=str(work_root)))
    assert again.executed == 0
    assert again_hook.calls == [("start", "replay", 44, 44), ("finish",)]  # nothing placed, nothing run
