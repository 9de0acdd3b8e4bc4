"""gVisor (`runsc`) against docker's default runtime (`runc`): per-run cost, and whether a
run can still see what an earlier run left in the kernel's page cache.

    .venv/bin/python bench/gvisor_overhead.py [--rounds 4] [--per-round 5]

Needs an engine with the `runsc` runtime registered (.ci/start-dockerd does it when
Debian's `runsc` is installed). Two measurements, each arm in the same process:

- cost: the wall time of `DockerBackend.run` (containers started ahead, the opt-in `prewarm=True`, as when it was measured) for
  a trivial Python command (`python -c pass`) and for a 50-file import, arms interleaved in
  rounds of `--per-round` runs so that the machine's load moves both alike; medians;
- the page-cache channel of issue 26: a large file of the base image that no run reads
  (perl's `charclass_invlists.h`, 4.4 MB) is evicted on the host (fadvise DONTNEED on the
  image layer's file), then an observer run counts its resident pages (mmap + mincore)
  and times reading it; a toucher run reads it whole; the observer runs again. Under runc
  the second observer sees the toucher's pages (one bit and more per run pair); the
  question is whether it does under runsc.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import testprism.tasks.sandbox  # noqa: F401 - the package first: its imports are ordered there
from testprism.tasks.model.benchmark_format import EnvironmentSpec
from testprism.tasks.model.workdir import WorkPaths
from testprism.tasks.sandbox.base import Limits, RunRequest
from testprism.tasks.sandbox.docker.backend import DockerBackend

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # tests/ is not installed: the probe lives there, shared with its test
    sys.path.insert(0, str(ROOT))

from tests.pagecache_probe import OBSERVE, TOUCH, evict, observed, probe_host_path  # noqa: E402

log = logging.getLogger("gvisor_overhead")

IMPORTS = "python -c 'import json, email.parser, http.client, xml.dom.minidom, unittest, argparse, decimal'"


def _request(env: Path, tree: Path, command: str) -> RunRequest:
    return RunRequest(tree=tree, suite_folder=None, suite_files=(), command=command, environment=env,
                      limits=Limits(timeout_s=120.0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--per-round", type=int, default=5)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    work_root = args.work or Path(tempfile.mkdtemp(prefix="gvisor-bench-", dir="/var/tmp"))
    work_root.chmod(0o755)
    work = WorkPaths(work_root)
    work.ensure()
    tree = work_root / "tree"
    tree.mkdir(exist_ok=True)
    (tree / "f.py").write_text("X = 1\n")
    arms = {name: DockerBackend(work, runtime=None if name == "runc" else name, prewarm=True) for name in ("runc", "runsc")}
    envs = {name: b.prepare(EnvironmentSpec(python="3.11", packages=())) for name, b in arms.items()}
    image = arms["runc"]._tag_of(_request(envs["runc"], tree, "true"))
    host_file = probe_host_path(image)
    results: dict[str, dict] = {name: {"pass": [], "imports": []} for name in arms}
    try:
        for name, b in arms.items():  # warm up: images, page cache, the first pre-started container
            for _ in range(2):
                b.run(_request(envs[name], tree, "python -c pass"))
        for _ in range(args.rounds):
            for name, b in arms.items():
                for kind, command in (("pass", "python -c pass"), ("imports", IMPORTS)):
                    for _ in range(args.per_round):
                        start = time.monotonic()
                        done = b.run(_request(envs[name], tree, command))
                        assert done.exit_code == 0, done.output_tail
                        results[name][kind].append(time.monotonic() - start)
        channel = {}
        for name, b in arms.items():
            evict(host_file)
            before = observed(b.run(_request(envs[name], tree, OBSERVE)).output_tail)
            evict(host_file)
            assert "TOUCHED" in b.run(_request(envs[name], tree, TOUCH)).output_tail
            after = observed(b.run(_request(envs[name], tree, OBSERVE)).output_tail)
            channel[name] = {"after_eviction": before, "after_another_run_read_it": after}
    finally:
        for b in arms.values():
            b.close()
    report = {
        "per_run_median_s": {name: {kind: round(statistics.median(times), 4) for kind, times in kinds.items()}
                             for name, kinds in results.items()},
        "runs_per_arm_and_kind": args.rounds * args.per_round,
        "page_cache_channel": channel,
        "load_average": os.getloadavg(),
    }
    for kind in ("pass", "imports"):
        report.setdefault("runsc_minus_runc_ms", {})[kind] = round(
            (report["per_run_median_s"]["runsc"][kind] - report["per_run_median_s"]["runc"][kind]) * 1e3, 1)
    log.info("%s", json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
