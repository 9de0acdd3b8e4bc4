"""Benchmark: the bits one run can pass to the next through the host's page cache (issue 26).

The run order carries no label any more (tasks/execution/batch.py), but runs on a shared
kernel share its page cache: a sender run reads the pages of a large system file that its
message's 1-bits name; a receiver run, later, times reading one byte of every page
(readahead off) and decodes a fast page as a 1. Both are real `local` (bubblewrap) runs, one
after the other, as a replay would run two states of one suite. The file starts evicted
(as root: POSIX_FADV_DONTNEED), as a file no run has read yet would be; the attacker cannot
evict, so each page is one write-once bit per replay.

Prints, per trial: bits sent, bits read back right, the receiver's time; then the bits per
run pair and the write-once capacity of every readable page under /usr. Run as root:
    .venv/bin/python bench/cache_channel.py --trials 3
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import tempfile
from pathlib import Path

from rich.console import Console
from rich.logging import RichHandler
from rich.table import Table

from testprism.tasks.model.benchmark_format import EnvironmentSpec
from testprism.tasks.model.workdir import WorkPaths
from testprism.tasks.sandbox.base import Limits, RunRequest
from testprism.tasks.sandbox.local import LocalBackend

log = logging.getLogger("cache_channel")

#: perl's largest header (4.4 MB, ~1,070 pages): on the host's /usr, read by no run
CARRIER = "/usr/lib/x86_64-linux-gnu/perl/5.36.0/CORE/charclass_invlists.h"
PAGE = 4096
#: a page read faster than this (µs) was in the cache: a disk read takes tens of µs or more
CACHED_US = 10.0

SEND = """python - <<'END'
import os
fd = os.open("{carrier}", os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
for page in {pages}:
    os.pread(fd, 1, page * {page})
print("SENT")
END"""

RECEIVE = """python - <<'END'
import os, time
fd = os.open("{carrier}", os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
pages = (os.fstat(fd).st_size + {page} - 1) // {page}
bits = []
for page in range(pages):
    start = time.perf_counter_ns()
    os.pread(fd, 1, page * {page})
    bits.append("1" if (time.perf_counter_ns() - start) / 1e3 < {cached_us} else "0")
print("BITS", "".join(bits))
END"""


def evict(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def run(backend: LocalBackend, env: Path, tree: Path, command: str):
    return backend.run(RunRequest(tree=tree, suite_folder=None, suite_files=(), command=command, environment=env,
                                  limits=Limits(timeout_s=120.0)))


def readable_pages(root: str = "/usr") -> int:
    """Pages of every regular file under `root`: the write-once bits a replay could use."""
    total = 0
    for folder, _, files in os.walk(root):
        for name in files:
            try:
                st = os.lstat(os.path.join(folder, name))
            except OSError:
                continue
            if st.st_mode & 0o004 and os.path.isfile(os.path.join(folder, name)):
                total += (st.st_size + PAGE - 1) // PAGE
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--seed", type=int, default=26)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s", handlers=[RichHandler(show_path=False)])
    pages = (os.stat(CARRIER).st_size + PAGE - 1) // PAGE
    draw = random.Random(args.seed)
    table = Table(title=f"page-cache channel under local (carrier: {pages} pages)")
    for column in ("trial", "bits sent", "1-bits", "read right", "error rate", "receiver s"):
        table.add_column(column, justify="right")
    right_total = sent_total = 0
    with tempfile.TemporaryDirectory(dir="/var/tmp") as scratch:
        os.chmod(scratch, 0o755)  # the sandbox's uid must reach the work area
        work = WorkPaths(Path(scratch) / "work")
        tree = Path(scratch) / "tree"
        tree.mkdir()
        backend = LocalBackend(work)
        try:
            env = backend.prepare(EnvironmentSpec(python="3.11", packages=()))
            for trial in range(1, args.trials + 1):
                message = [draw.random() < 0.5 for _ in range(pages)]
                evict(CARRIER)
                ones = [i for i, bit in enumerate(message) if bit]
                sent = run(backend, env, tree, SEND.format(carrier=CARRIER, pages=ones, page=PAGE))
                assert "SENT" in sent.output_tail, sent.output_tail
                got = run(backend, env, tree, RECEIVE.format(carrier=CARRIER, page=PAGE, cached_us=CACHED_US))
                bits = got.output_tail.split("BITS ")[-1].strip()
                right = sum(1 for bit, b in zip(message, bits) if (b == "1") == bit)
                right_total += right
                sent_total += pages
                table.add_row(str(trial), str(pages), str(len(ones)), str(right),
                              f"{1 - right / pages:.4f}", f"{got.duration_s:.2f}")
        finally:
            backend.close()
    Console().print(table)
    capacity = readable_pages()
    log.info("bits per run pair: %d of %d read right (%.2f%%); /usr holds %d readable pages: a replay's write-once "
             "capacity of ~%.1f Mbit", right_total // max(1, args.trials), pages, 100 * right_total / max(1, sent_total),
             capacity, capacity / 1e6)


if __name__ == "__main__":
    main()
