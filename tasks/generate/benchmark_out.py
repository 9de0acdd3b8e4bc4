"""The generated suites as a benchmark `testprism replay` runs unchanged: `OUT/instances/`
(the source benchmark's, hard-linked where the filesystem allows), the environment folders
they share outside their own (`environments/<name>/`, the Dockerfile's build context, at the
same place, so `environment.dockerfile = "../../environments/go/Dockerfile"` still loads) and
`OUT/suites/<configuration>/<instance>/` from the store's kept outputs (or crossval's merged suites).

A configuration's folder is rebuilt whole from the store and swapped in, so a rerun (or a
feedback round that replaced some suites) leaves exactly the suites the store says are
current, and the other configurations of OUT are untouched. OUT may be the source benchmark
itself: then only its `suites/<configuration>/` is written.
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from collections.abc import Mapping
from pathlib import Path

from testprism.tasks.model.benchmark import Benchmark, BenchmarkError, place_shared_environment
from testprism.tasks.model.folder_swap import swap_in

log = logging.getLogger(__name__)

#: marks a folder this module wrote (and so may write again)
MARKER = ".testprism-generated"


def _link_tree(source: Path, target: Path) -> None:
    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:  # another filesystem, or links not allowed: a copy
            shutil.copy2(src, dst)

    shutil.copytree(source, target, symlinks=True, copy_function=link)


def write_generated(benchmark: Benchmark, configuration: str, suites: Mapping[str, Path], out: Path) -> int:
    """Write `configuration`'s suites (`instance id → suite folder`: a kept generation's, or
    crossval's merged one) into the benchmark folder `out`; how many."""
    in_place = out.resolve() == benchmark.root.resolve()
    if not in_place:
        if out.exists() and any(out.iterdir()) and not (out / MARKER).exists():
            raise BenchmarkError(out, "(folder)", "exists and was not written by testprism generate; choose another")
        out.mkdir(parents=True, exist_ok=True)
        (out / MARKER).write_text(f"generated suites over the instances of {benchmark.root}\n")
        for instance in benchmark.instances.values():
            target = out / "instances" / instance.id
            if not target.exists():
                _link_tree(instance.folder, target)
            place_shared_environment(instance, out, _link_tree)
    folder = out / "suites" / configuration
    staging = folder.parent / f".{configuration}.tmp-{uuid.uuid4().hex[:8]}"
    staging.mkdir(parents=True)
    try:
        for instance_id, source in sorted(suites.items()):
            shutil.copytree(source, staging / instance_id)
        swap_in(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    log.info("wrote %d generated suites of %s to %s", len(suites), configuration, folder)
    return len(suites)
