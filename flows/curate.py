"""The curate flow: source benchmarks → a screened, deduplicated, audited, stratified and
repository-disjoint instance set (docs/curate.md).

Thin wiring of tasks/curate/: each source is read by its adapter as a coarse task (in
parallel with `workers` > 1 or on a Dask cluster); the
selection runs in the flow (it is fast: 20,000 items in seconds, bench/curate_scale.py);
the funnel goes to the store, the test split to `out` and the training split beside it.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from testprism.flows.runner import Placement
from testprism.tasks.execution.run_settings import RunSettings
from testprism.storage import Store
from testprism.tasks.curate.config import SourceConfig, load_config
from testprism.tasks.curate.curation import curate, judged, record, write_splits
from testprism.tasks.curate.judge import ChatJudge
from testprism.tasks.curate.sources import SourceRead, read_source
from testprism.tasks.model.workdir import WorkPaths

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CurateSummary:
    flow_run: str
    funnel: list[str]  #: one line per stage
    test: int
    train: int
    out: str
    train_out: str


@task(name="read-source", cache_policy=NO_CACHE)
def read_source_task(source: SourceConfig, work_root: Path) -> SourceRead:
    """One coarse unit: a source through its adapter into the one instance format."""
    return read_source(source, WorkPaths(work_root))


@flow(name="curate", log_prints=False)
def curate_flow(config: str, store: str, out: str, overwrite: bool = False,
                run: RunSettings = RunSettings()) -> CurateSummary:
    """Curate the sources of `config` into `out`; `run`: where sources are read (its work
    area and placement: sources in parallel on a cluster; curate runs nothing sandboxed)."""
    chosen = load_config(Path(config))
    target = Store(store)
    work_root = run.work_root
    with Placement.of(run).task_runner() as runner:  # sources in parallel on a cluster
        futures = [runner.submit(read_source_task, {"source": source, "work_root": work_root})
                   for source in chosen.sources]
        reads = [future.result() for future in futures]
    flow_run = f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"
    settings = chosen.judge_config()
    audit = judged(ChatJudge(settings), target, settings.concurrency) if settings else None
    curation = curate(chosen, reads, target, flow_run, audit)
    record(target, curation.funnel)
    for stage in curation.funnel.stages:
        log.info("%s", stage.summary())
    test, train = write_splits(curation, chosen, Path(out), overwrite=overwrite)
    return CurateSummary(flow_run, [s.summary() for s in curation.funnel.stages], len(curation.split.test),
                         len(curation.split.train), str(test), str(train))
