"""Benchmark: curating 20,000 instances from 4 sources (judge off), time and peak memory.

Writes 4 synthetic source benchmarks of 5,000 instances each (once; kept under
/var/tmp/testprism-curate-sources): a one-file program, a reference of 1–30 lines, an
official test file of 1–12 tests (a new file, or a patch over an existing one for a
quarter of them), 100–400 repositories per source and 2% duplicates across sources. Then,
in a fresh process, runs what `testprism curate --workers 2` runs: every source read and
loaded with the signals of its instances (a source per task, two processes), bounds, dedup, the seeded repository-disjoint split, the funnel
written to a store, both splits written as benchmark folders.

Side by side in the same run: the signals of 300 instances by the in-memory patching the
curation uses against applying each checks patch with git in a scratch folder (the
fallback), so the cost of one against the other is measured on the same machine and load.

With the judge on: 400 instances audited against a chat-completions server the bench
starts on 127.0.0.1 (20 ms an answer), concurrency 4: the requests made, the most in
flight at once, and a second pass that asks nothing.

Run: `python bench/curate_scale.py [SOURCES]`. Targets on the 2-core machine: < 60 s,
peak memory < 2 GiB.
"""

from __future__ import annotations

import json
import logging
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

log = logging.getLogger("bench.curate_scale")

SOURCES = ("alpha", "beta", "gamma", "delta")
PER_SOURCE = 5000
TARGET_S = 60.0
TARGET_MIB = 2048
SIDE_BY_SIDE = 300
JUDGE_ITEMS = 400
JUDGE_CONCURRENCY = 4

CONFIG = """\
[[sources]]
name = "alpha"
kind = "benchmark"
path = "alpha"

[[sources]]
name = "beta"
kind = "benchmark"
path = "beta"

[[sources]]
name = "gamma"
kind = "benchmark"
path = "gamma"

[[sources]]
name = "delta"
kind = "benchmark"
path = "delta"

[bounds.alpha]
min_solution_lines = 3
[bounds.beta]
min_tests = 3
[bounds.gamma]
min_density = 2.0
test_quota = 50

[split]
seed = 42
test_size = 300
train_size = 1700
"""


def _tests(n: int, prefix: str) -> str:
    return "".join(f"\ndef test_{prefix}_{k}():\n    assert pkg.f({k}) == {k}\n" for k in range(n))


def write_sources(root: Path) -> None:
    """The 4 synthetic sources (deterministic: seed 7)."""
    rng = random.Random(7)
    shared = [f"shared problem {k}" for k in range(PER_SOURCE * len(SOURCES) // 50)]  # 2% duplicates
    for source in SOURCES:
        repos = rng.randint(100, 400)
        for k in range(PER_SOURCE):
            iid = f"{source}{rng.randrange(repos)}__bug-{k}"
            folder = root / source / "instances" / iid
            (folder / "program").mkdir(parents=True)
            dup = rng.random() < 0.02
            text = rng.choice(shared) if dup else f"Fix bug {k} of {source}: f must return its argument."
            body = "def f(x):\n    return x\n" if dup else f"def f(x):\n    return x  # {source} {k}\n"
            (folder / "program" / "pkg.py").write_text(body)
            (folder / "instruction.md").write_text(text + "\n")
            lines = rng.randint(1, 30)
            added = "".join(f"+    y{i} = x  # step {i}\n" if i % 3 else f"+    # note {i}\n" for i in range(lines))
            old = body.splitlines()[1]
            (folder / "reference.diff").write_text(
                f"--- a/pkg.py\n+++ b/pkg.py\n@@ -1,2 +1,{lines + 2} @@\n def f(x):\n-{old}\n{added}+    return x\n")
            tests = rng.randint(1, 12)
            if rng.random() < 0.25:  # a patch over an existing test file
                (folder / "program" / "test_pkg.py").write_text("import pkg\n" + _tests(1, "old"))
                new = _tests(tests, "new")
                checks = (f"--- a/test_pkg.py\n+++ b/test_pkg.py\n@@ -1,4 +1,{4 + new.count(chr(10))} @@\n"
                          " import pkg\n \n def test_old_0():\n     assert pkg.f(0) == 0\n"
                          + "".join(f"+{line}\n" for line in new.split("\n")[:-1]))
            else:
                new = "import pkg\n" + _tests(tests, "t")
                checks = (f"--- /dev/null\n+++ b/test_pkg.py\n@@ -0,0 +1,{new.count(chr(10))} @@\n"
                          + "".join(f"+{line}\n" for line in new.split("\n")[:-1]))
            (folder / "checks.diff").write_text(checks)
            (folder / "instance.toml").write_text(
                f'id = "{iid}"\nsource = "{source}"\nsummary = "bug {k}"\n\n[checks]\n'
                f'command = "python -m pytest -q test_pkg.py"\nfail_to_pass = ["test_pkg.py::test_t_0"]\n')
    (root / "curate.toml").write_text(CONFIG)


CURATE = """
import json, resource, sys, time
from pathlib import Path
start = time.perf_counter()
from testprism.storage import Store
from testprism.tasks.curate.config import load_config
from testprism.tasks.curate.curation import curate, record, write_splits
from testprism.tasks.curate.sources import read_source
from testprism.tasks.model.workdir import WorkPaths
imported = time.perf_counter()
root, scratch = Path(sys.argv[1]), Path(sys.argv[2])
config = load_config(root / "curate.toml")
from concurrent.futures import ProcessPoolExecutor
with ProcessPoolExecutor(2) as pool:  # as `testprism curate --workers 2`: a source per task
    reads = list(pool.map(read_source, config.sources, [WorkPaths(scratch / "work")] * len(config.sources)))
loaded = time.perf_counter()
store = Store(scratch / "store")
curation = curate(config, reads, store, "bench")
record(store, curation.funnel)
write_splits(curation, config, scratch / "bench")
done = time.perf_counter()
print(json.dumps({"imports": imported - start, "load": loaded - imported, "curate": done - loaded,
                  "total": done - imported, "peak_mib": max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) / 1024,
                  "funnel": [s.summary() for s in curation.funnel.stages]}))
"""

SIDE = """
import json, sys, time
from pathlib import Path
from testprism.tasks.curate import signals
from testprism.tasks.model import patches
from testprism.tasks.model.benchmark import load_instance
folders = sorted(Path(sys.argv[1]).glob("*/instances/*"))[:: max(1, len(list(Path(sys.argv[1]).glob("*/instances/*"))) // int(sys.argv[2]))]
instances = [load_instance(f) for f in folders[: int(sys.argv[2])]]
out = {}
for name in ("memory", "git", "memory2", "git2"):
    start = time.perf_counter()
    for i in instances:
        if name.startswith("memory"):
            signals.official_test_files(i.program, i.checks_patch)
        else:
            touched = sorted(patches.touched_files(patches.parse(i.checks_patch)))
            signals._with_git(i.program, i.checks_patch, touched)
    out[name] = (time.perf_counter() - start) / len(instances)
print(json.dumps(out))
"""


JUDGED = """
import json, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from testprism.storage import Store
from testprism.tasks.curate.judge import AuditItem, ChatJudge, JudgeConfig, audit_all
from testprism.tasks.model.benchmark import load_instance

seen = {"requests": 0, "in_flight": 0, "max_in_flight": 0}
lock = threading.Lock()

class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        with lock:
            seen["requests"] += 1
            seen["in_flight"] += 1
            seen["max_in_flight"] = max(seen["max_in_flight"], seen["in_flight"])
        time.sleep(0.02)  # a fast model
        body = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
             "content": json.dumps({"score": 85, "rationale": "ok"})}}]}).encode()
        with lock:
            seen["in_flight"] -= 1
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
root, scratch, n, concurrency = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
items = [AuditItem.of(load_instance(f)) for f in sorted(root.glob("alpha/instances/*"))[:n]]
judge = ChatJudge(JudgeConfig.load({"base_url": f"http://127.0.0.1:{server.server_address[1]}/v1", "model": "m",
                                    "api_key": "k", "concurrency": concurrency}, environ={}))
store = Store(scratch / "store")
start = time.perf_counter()
first = audit_all(items, judge, store, concurrency)
asked = seen["requests"]
middle = time.perf_counter()
audit_all(items, judge, store, concurrency)
print(json.dumps({"items": len(items), "first_s": middle - start, "second_s": time.perf_counter() - middle,
                  "requests": asked, "again": seen["requests"] - asked, "max_in_flight": seen["max_in_flight"]}))
server.shutdown()
"""


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "/var/tmp/testprism-curate-sources")
    if not (root / "curate.toml").is_file():
        shutil.rmtree(root, ignore_errors=True)
        start = time.perf_counter()
        write_sources(root)
        log.info("wrote %d synthetic instances in %.1f s", PER_SOURCE * len(SOURCES), time.perf_counter() - start)
    with tempfile.TemporaryDirectory(prefix="testprism-curate-bench-") as scratch:
        done = subprocess.run([sys.executable, "-c", CURATE, str(root), scratch], check=True, capture_output=True,
                              text=True)
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    for line in figures["funnel"]:
        log.info("  %s", line)
    log.info("curate %d instances: %.1f s (load and signals %.1f s, selection and writing %.1f s; imports %.1f s "
             "excluded), peak %.0f MiB", PER_SOURCE * len(SOURCES), figures["total"], figures["load"],
             figures["curate"], figures["imports"], figures["peak_mib"])
    side = json.loads(subprocess.run([sys.executable, "-c", SIDE, str(root), str(SIDE_BY_SIDE)], check=True,
                                     capture_output=True, text=True).stdout)
    memory, git = (side["memory"] + side["memory2"]) / 2, (side["git"] + side["git2"]) / 2
    log.info("official tests of one instance: in memory %.2f ms, by git in a scratch copy %.2f ms: %.0fx "
             "(%d instances, alternating twice)", memory * 1e3, git * 1e3, git / memory, SIDE_BY_SIDE)
    with tempfile.TemporaryDirectory(prefix="testprism-curate-judge-") as scratch:
        judged = json.loads(subprocess.run([sys.executable, "-c", JUDGED, str(root), scratch, str(JUDGE_ITEMS),
                                            str(JUDGE_CONCURRENCY)], check=True, capture_output=True,
                                           text=True).stdout.strip().splitlines()[-1])
    log.info("judge on, loopback server (20 ms an answer): %d items in %.1f s with concurrency %d: %d requests, "
             "at most %d in flight; the second pass %.2f s, %d requests (answers from the store)",
             judged["items"], judged["first_s"], JUDGE_CONCURRENCY, judged["requests"], judged["max_in_flight"],
             judged["second_s"], judged["again"])
    met = figures["total"] < TARGET_S and figures["peak_mib"] < TARGET_MIB
    log.info("targets: < %.0f s and < %d MiB: %s", TARGET_S, TARGET_MIB, "met" if met else "MISSED")


if __name__ == "__main__":
    main()
