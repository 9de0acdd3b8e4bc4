"""What the page-cache counting channel of issue 26 needs, for tests/test_docker_redteam.py
and bench/gvisor_overhead.py: a large file of the base image that no run reads, evicted on
the host; a run that times reading each of its pages; a run that reads it whole. Under a
shared kernel, the second timing sees the reader's pages in the cache."""

from __future__ import annotations

import os
from pathlib import Path

from testprism.tasks.sandbox.docker.engine import api_client

#: perl's largest header (4.4 MB): in the base image, read by no run
PROBE_FILE = "/usr/lib/x86_64-linux-gnu/perl/5.36.0/CORE/charclass_invlists.h"
#: times reading one byte of every page, readahead off (POSIX_FADV_RANDOM on its own
#: descriptor): a page in the host's cache answers in microseconds, one on disk takes an I/O.
#: (mincore says nothing here: since Linux 5.0 it reports every page of a file the caller
#: may not write as resident; RWF_NOWAIT is refused on overlayfs: timing is the channel.)
OBSERVE = f"""python - <<'END'
import os, statistics, time
fd = os.open("{PROBE_FILE}", os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
pages = (os.fstat(fd).st_size + 4095) // 4096
times = []
for page in range(pages):
    start = time.perf_counter_ns()
    os.pread(fd, 1, page * 4096)
    times.append(time.perf_counter_ns() - start)
print("OBSERVED", pages, round(statistics.median(times) / 1e3, 2), round(sum(times) / 1e6, 2))
END
"""
TOUCH = f"cat {PROBE_FILE} > /dev/null && echo TOUCHED"


def probe_host_path(image: str) -> Path:
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
    raise LookupError(f"{PROBE_FILE} is in no layer of {image}")


def evict(path: Path) -> None:
    """Drop the host file's pages from the page cache: the count starts from nothing."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def observed(output: str) -> dict:
    """The observer run's figures: pages read, median µs per page, total ms."""
    line = next(line for line in output.splitlines() if line.startswith("OBSERVED"))
    _, pages, median_us, total_ms = line.split()
    return {"pages": int(pages), "median_us": float(median_us), "total_ms": float(total_ms)}
