"""The one stage driver (flows/driver.py): what it reports once per finished batch, and
that a rerun places nothing (issue 30, item 2)."""

from __future__ import annotations

import pytest

from testprism.flows.driver import StageProgress, reporting_batches_to
from testprism.flows.replay import replay_flow
from testprism.tasks.replay.settings import ReplaySettings
from tests.synthbench import make_synthetic

pytestmark = [pytest.mark.slow, pytest.mark.requires("sandbox")]


def test_the_driver_reports_each_batch_and_a_rerun_places_none(tmp_path, work_root):
    bench = make_synthetic(tmp_path / "bench", 2)  # 2 instances x 2 suites x 11 states = 44 runs
    store = tmp_path / "store"
    seen: list[StageProgress] = []
    with reporting_batches_to(seen.append):
        summary = replay_flow(benchmark=str(bench), store=str(store), settings=ReplaySettings(),
                              work=str(work_root))
    last = seen[-1]
    assert (last.stage, last.planned, last.stored, last.done) == ("replay", 44, 0, 44)
    assert last.failed == summary.outcomes.get("E", 0) == 0
    done = [p.done for p in seen]
    assert done == sorted(done) and len(set(done)) > 2  # it advanced batch by batch
    seen.clear()
    with reporting_batches_to(seen.append):
        again = replay_flow(benchmark=str(bench), store=str(store), settings=ReplaySettings(), work=str(work_root))
    assert again.executed == 0
    assert (seen[-1].planned, seen[-1].stored, seen[-1].done) == (44, 44, 0)  # nothing placed, nothing run
