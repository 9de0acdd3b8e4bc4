"""gVisor (`runsc`) against docker's default runtime (`runc`): per-run cost, and whether a
run can still see what an earlier run left in the kernel's page cache.

    .venv/bin/python bench/gvisor_overhead.py [--rounds 4] [--per-round 5]

Needs an engine with the `runsc` runtime registered (.ci/start-dockerd does it when
Debian's `runsc` is installed). Two measurements, each arm in the same process:

- cost: the wall time of `DockerBackend.run` (containers started ahead, as by default) for
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
import tempfile
import time
from pathlib import Path

import testprism.tasks.sandbox  # noqa: F401 - the package first: its imports are ordered there
from testprism.tasks.model.benchmark import EnvironmentSpec
from testprism.tasks.model.workdir import WorkPaths
from testprism.tasks.sandbox.base import Limits, RunRequest
from testprism.tasks.sandbox.docker.backend import DockerBackend
from testprism.tasks.sandbox.docker.engine import api_client

log = logging.getLogger("gvisor_overhead")

PROBE_FILE = "/usr/lib/x86_64-linux-gnu/perl/5.36.0/CORE/charclass_invlists.h"
OBSERVE = f"""python - <<'END'
import ctypes, mmap, os, time
fd = os.open("{PROBE_FILE}", os.O_RDONLY)
size = os.fstat(fd).st_size
m = mmap.mmap(fd, size, prot=mmap.PROT_READ)
pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
vec = (ctypes.c_ubyte * pages)()
libc = ctypes.CDLL(None, use_errno=True)
buf = (ctypes.c_char * size).from_buffer(m)
rc = libc.mincore(ctypes.c_void_p(ctypes.addressof(buf)), ctypes.c_size_t(size), vec)
resident = sum(v & 1 for v in vec) if rc == 0 else -1
del buf
start = time.perf_counter()
while os.read(fd, 1 << 20):
    pass
print("OBSERVED", resident, pages, round((time.perf_counter() - start) * 1e3, 3))
END
"""
TOUCH = f"cat {PROBE_FILE} > /dev/null && echo TOUCHED"
IMPORTS = "python -c 'import json, email.parser, http.client, xml.dom.minidom, unittest, argparse, decimal'"


def _host_path(image: str) -> Path:
    """Where the probe file of `image` lies on the host: in the overlay layer that holds it."""
    api = api_client()
    try:
        data = api.inspect_image(image)["GraphDriver"]["Data"]
    finally:
        api.close()
    layers = [data.get("UpperDir", "")] + (data.get("LowerDir") or "").split(":")
    for folder in layers:
        candidate = Path(folder) / PROBE_FILE.lstrip("/")
        if folder and candidate.exists():
            return candidate
    raise SystemExit(f"{PROBE_FILE} is in no layer of {image}")


def _evict(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _request(env: Path, tree: Path, command: str) -> RunRequest:
    return RunRequest(tree=tree, suite_folder=None, suite_files=(), command=command, environment=env,
                      limits=Limits(timeout_s=120.0))


def _observed(output: str) -> dict:
    line = next(line for line in output.splitlines() if line.startswith("OBSERVED"))
    _, resident, pages, read_ms = line.split()
    return {"resident_pages": int(resident), "pages": int(pages), "read_ms": float(read_ms)}


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
    arms = {name: DockerBackend(work, runtime=None if name == "runc" else name) for name in ("runc", "runsc")}
    envs = {name: b.prepare(EnvironmentSpec(python="3.11", packages=())) for name, b in arms.items()}
    image = arms["runc"]._tag_of(_request(envs["runc"], tree, "true"))
    host_file = _host_path(image)
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
            _evict(host_file)
            before = _observed(b.run(_request(envs[name], tree, OBSERVE)).output_tail)
            _evict(host_file)
            assert "TOUCHED" in b.run(_request(envs[name], tree, TOUCH)).output_tail
            after = _observed(b.run(_request(envs[name], tree, OBSERVE)).output_tail)
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
