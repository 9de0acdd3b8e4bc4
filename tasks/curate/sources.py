"""Curate's sources: each config source becomes a benchmark folder of instances (the one
instance format) through its adapter, and every instance a `CurateItem`.

A benchmark source is read where it is; a source in another format is imported once into
the work area, under a key of its config, by the importer of its kind (tasks/importing/),
which reports what it skipped and why.
"""

from __future__ import annotations

import logging
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from testprism.tasks.curate.config import SourceConfig
from testprism.tasks.curate.selection import CurateItem, repository_of
from testprism.tasks.curate.signals import signals_of
from testprism.tasks.importing.exercises import import_exercises
from testprism.tasks.importing.harbor import import_harbor
from testprism.tasks.importing.recipe import load_recipes
from testprism.tasks.importing.rows import Issue
from testprism.tasks.importing.sources import ProgramSources
from testprism.tasks.importing.swebench import import_rows
from testprism.tasks.model.benchmark import Instance, load_benchmark
from testprism.tasks.model.hashing import digest
from testprism.tasks.model.workdir import WorkPaths
from testprism.tasks.sandbox.base import backend_class

log = logging.getLogger(__name__)


@dataclass
class SourceRead:
    """One source as curate read it."""

    name: str
    root: Path  #: the benchmark folder its instances are in
    instances: dict[str, Instance] = field(default_factory=dict)
    skipped: list[Issue] = field(default_factory=list)  #: what its adapter could not import, and why
    #: what the screening reads of each instance: computed with the read, so that sources
    #: read in parallel (one task each) also compute their signals in parallel
    items: dict[str, CurateItem] = field(default_factory=dict)


def _benchmark_root(source: SourceConfig, work: WorkPaths) -> tuple[Path, list[Issue]]:
    if source.kind == "benchmark":
        return source.path, []
    root = work.root / "curate" / f"{source.name}-{digest('curate-source', source.model_dump_json())}"
    if source.kind == "swebench":
        report = import_rows(source.path, root, load_recipes(list(source.recipes)),
                             ProgramSources.from_options(source.repos, source.releases), source=source.name)
    elif source.kind == "harbor":  # solve.sh runs sandboxed (untrusted code), in the task's Dockerfile's image
        backend = backend_class("docker")(work)
        try:
            report = import_harbor(source.path, root, source=source.name, backend=backend)
        finally:
            backend.close()
    else:
        report = import_exercises(source.path, root, source=source.name)
    return root, [i for i in report.issues if i.fatal]


def read_source(source: SourceConfig, work: WorkPaths) -> SourceRead:
    """The source's instances (a benchmark with no instances/ folder is an empty source)."""
    root, skipped = _benchmark_root(source, work)
    instances = load_benchmark(root).instances if (root / "instances").is_dir() else {}
    log.info("source %s: %d instances, %d skipped by its adapter", source.name, len(instances), len(skipped))
    return SourceRead(source.name, root, instances, skipped, {iid: item_of(i) for iid, i in instances.items()})


def _declared_repository(instance: Instance) -> str | None:
    origin = instance.folder / "origin.toml"
    if origin.is_file():
        repo = tomllib.loads(origin.read_text()).get("repo")
        return repo if isinstance(repo, str) and repo else None
    return None


def item_of(instance: Instance) -> CurateItem:
    """What the screening reads of an instance: its signals, instruction and repository."""
    instruction = instance.folder / "instruction.md"
    text = instruction.read_text(encoding="utf-8", errors="replace") if instruction.is_file() else instance.spec.summary
    return CurateItem(instance.id, instance.source, repository_of(instance.id, _declared_repository(instance)),
                      text, instance.program_hash, signals_of(instance))
