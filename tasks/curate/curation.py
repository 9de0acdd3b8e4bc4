"""One curation, stage by stage, and what it leaves: the funnel (TestPrism's Table 5 with
the why of every exclusion) in the store, the test split as a benchmark folder, the
training split beside it, and a manifest that says how they were chosen.

Plain functions: flows/curate.py wires them, reading each source as a coarse task.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from testprism.storage import SCHEMAS, Store
from testprism.tasks.curate.config import CurateConfig
from testprism.tasks.curate.judge import AuditItem, Decision, Judge, audit_all
from testprism.tasks.curate.selection import CurateItem, Split, deduplicate, screen, split, too_easy
from testprism.tasks.curate.sources import SourceRead
from testprism.tasks.importing.staging import staged
from testprism.tasks.model import toml_writer
from testprism.tasks.model.benchmark import Instance, place_shared_environment
from testprism.tasks.model.funnel import Excluded, Funnel, Stage
from testprism.tasks.model.outcome import Reason

log = logging.getLogger(__name__)

#: An audit stage: the items it keeps and the exclusions it made (tasks/curate/judge.py).
AuditStage = Callable[[list[CurateItem], dict[str, Instance]], tuple[list[CurateItem], list[Excluded]]]


@dataclass
class Curation:
    funnel: Funnel
    split: Split
    instances: dict[str, Instance]  #: every instance read, by id


def gather(reads: Sequence[SourceRead]) -> tuple[dict[str, Instance], list[CurateItem], Stage]:
    """Every source's instances (an id two sources use is kept from the first), and the
    funnel's first stage with what the adapters skipped."""
    instances: dict[str, Instance] = {}
    items: list[CurateItem] = []
    exclusions = [Excluded(issue.row, Reason.SOURCE_SKIPPED, f"{issue.instance_id or '?'}: field {issue.field}: "
                           f"{issue.message}") for read in reads for issue in read.skipped]
    for read in reads:
        for iid, instance in read.instances.items():
            if iid in instances:
                exclusions.append(Excluded(iid, Reason.DUPLICATE, f"id also in source {instances[iid].source}"))
            else:
                instances[iid] = instance
                items.append(read.items[iid])
    return instances, items, Stage("sources", "instance", len(instances), tuple(exclusions))


def judged(judge: Judge, store: Store, concurrency: int) -> AuditStage:
    """The audit stage: keep what the judge includes; what it sends to review or excludes
    is set aside with its score and rationale (SWEPatchTest: threshold 80)."""
    def run(items: list[CurateItem], instances: dict[str, Instance]) -> tuple[list[CurateItem], list[Excluded]]:
        audits = audit_all([AuditItem.of(instances[i.instance_id]) for i in items], judge, store, concurrency)
        kept: list[CurateItem] = []
        out: list[Excluded] = []
        for item, audit in zip(items, audits):
            if audit.decision is Decision.INCLUDE:
                kept.append(item)
                continue
            why = Reason.JUDGE_EXCLUDED if audit.decision is Decision.EXCLUDE else Reason.NEEDS_REVIEW
            detail = f"score {audit.score}: {audit.rationale}" if audit.score is not None else (audit.error or "")
            out.append(Excluded(item.instance_id, why, detail[:500]))
        return kept, out

    return run


def curate(config: CurateConfig, reads: Sequence[SourceRead], store: Store, flow_run: str,
           audit: AuditStage | None = None) -> Curation:
    """Screen, dedup, audit, filter by difficulty and split; every stage in the funnel."""
    funnel = Funnel("curate", flow_run)
    instances, items, first = gather(reads)
    funnel.add(first)
    items, out = screen(items, config.bounds)
    funnel.add(Stage("bounds", "instance", len(items), tuple(out)))
    items, out = deduplicate(items)
    funnel.add(Stage("dedup", "instance", len(items), tuple(out)))
    if audit is not None:
        items, out = audit(items, instances)
        funnel.add(Stage("audit", "instance", len(items), tuple(out)))
    if config.difficulty.configurations:
        runs = Store(config.difficulty.store) if config.difficulty.store else store
        items, out = too_easy(items, runs, config.difficulty.configurations)
        funnel.add(Stage("difficulty", "instance", len(items), tuple(out)))
    chosen = split(items, config.split, config.bounds)
    funnel.add(Stage("split", "instance", len(chosen.test) + len(chosen.train), tuple(
        Excluded(i.instance_id, Reason.NOT_SAMPLED, "eligible, beyond the sizes asked for") for i in chosen.unused)))
    return Curation(funnel, chosen, instances)


def record(store: Store, funnel: Funnel) -> None:
    """Store the curation's funnel (the collect funnel's dataset, flow `curate`)."""
    store.append("funnel", pa.Table.from_pylist(funnel.rows(), schema=SCHEMAS["funnel"]))


def train_folder(out: Path) -> Path:
    """Where the training split goes: beside the test split, `<name>-train`."""
    return out.with_name(f"{out.name}-train")


def _write(out: Path, items: Sequence[CurateItem], instances: dict[str, Instance], manifest: dict, *,
           overwrite: bool) -> None:
    with staged(out.parent, out, overwrite=overwrite) as folder:
        for item in items:
            # links stay links: the loader refuses them, and copying never reads through one
            shutil.copytree(instances[item.instance_id].folder, folder / "instances" / item.instance_id, symlinks=True)
            place_shared_environment(instances[item.instance_id], folder)
        (folder / "instances").mkdir(parents=True, exist_ok=True)
        (folder / "curation.toml").write_text(toml_writer.dumps(
            manifest, ["How this split was chosen (testprism curate). Not read by the loader."]))


def write_splits(curation: Curation, config: CurateConfig, out: Path, *, overwrite: bool = False) -> tuple[Path, Path]:
    """The test split at `out` and the training split beside it, each a benchmark folder
    that `testprism collect` and `replay` read, renamed into place whole."""
    chosen = curation.split
    manifest = {"flow_run": curation.funnel.flow_run, "config": config.key, "seed": config.split.seed,
                "test": [i.instance_id for i in chosen.test], "train": [i.instance_id for i in chosen.train]}
    train = train_folder(out)
    _write(out, chosen.test, curation.instances, {**manifest, "split": "test"}, overwrite=overwrite)
    _write(train, chosen.train, curation.instances, {**manifest, "split": "train"}, overwrite=overwrite)
    log.info("test split: %d instances at %s; training split: %d at %s", len(chosen.test), out,
             len(chosen.train), train)
    return out, train
