"""The red team's resource attacks at their own sizes, under the default limits (issue 26).

tests/test_run_limits.py and tests/test_docker_redteam.py hold each attack with a control,
at small limits so that CI stays fast (256 MiB of memory, 64 MiB of disk). This script
runs the catalogue's attacks as the red team ran them, against a run's DEFAULT `Limits`
(4 GiB of memory for the run, 4 GiB of disk), and prints what each became:

- `memory across processes`: 7 processes each holding 0.9 GiB at once (6.3 GiB in all);
- `memory through tmpfs`: 6.5 GiB written to `/tmp`, `/var/tmp` and `/dev/shm` (files of
  500 MiB: one file is bounded at 512 MiB), no process holding any of it;
- `disk`: 3 GiB written into the program's folder (6 files of 512 MiB), under a 2 GiB disk bound (the default's
  4 GiB would take the 3 GiB whole: the point is the bound's enforcement at scale, so
  `disk_mb` is lowered to 2048 for this one and said so).

Each attack reports how much it got to hold (the run's last line) and the run's verdict
(`classify`). With `--controls`, each attack also runs with the defence off (the run's
cgroup and bounded workspace disabled: `$TESTPRISM_RUN_CGROUP=0`,
`$TESTPRISM_BOUNDED_WORKSPACE=0`, local only): it then goes through, which shows the
attack is real at this size. The host needs the memory: at most one attack runs at once.
Nothing here is timed: the figures are sizes and verdicts.
"""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from testprism.tasks.execution.verdict import classify
from testprism.tasks.model.benchmark_format import EnvironmentSpec
from testprism.tasks.model.workdir import WorkPaths
from testprism.tasks.sandbox import cgroup
from testprism.tasks.sandbox.base import Limits, RunRequest, SandboxBackend
from testprism.tasks.sandbox.workspace import BOUNDED_SETTING

log = logging.getLogger("redteam_scale")

#: 7 processes of 0.9 GiB each, all alive at once; the parent sums their resident sizes
ACROSS_PROCESSES = """python - <<'EOF'
import os, time
r, w = os.pipe()
kids = []
for _ in range(7):
    pid = os.fork()
    if pid == 0:
        os.close(r)
        held = bytearray(900 << 20)
        for i in range(0, len(held), 4096):
            held[i] = 1
        os.write(w, b"1")
        time.sleep(5)
        os._exit(0)
    kids.append(pid)
os.close(w)
ready = b""
while len(ready) < 7 and (chunk := os.read(r, 7)):
    ready += chunk
rss = 0
for pid in kids:
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                rss += int(line.split()[1]) // 1024
    except OSError:
        pass
print(f"{len(ready)} of 7 holders ready; held {rss} MiB across processes")
EOF"""

#: 6.5 GiB parked in the sandbox's tmpfs folders, in files of 500 MiB (a file is bounded
#: at 512 MiB: `Limits.file_size_mb`), 13 of them across /tmp, /var/tmp and /dev/shm
THROUGH_TMPFS = ("for i in $(seq 13); do d=$(echo /tmp /var/tmp /dev/shm | cut -d' ' -f$(( i % 3 + 1 ))); "
                 "head -c 524288000 /dev/zero > $d/f$i || break; done; "
                 "du -cm /tmp /var/tmp /dev/shm 2>/dev/null | tail -1")

#: 3 GiB written into the program's folder, in 6 files of 512 MiB
DISK = "for i in $(seq 6); do head -c 536870912 /dev/zero > filler$i || break; done; du -cm filler* | tail -1"

ATTACKS = {
    "memory across processes (6.3 GiB)": (ACROSS_PROCESSES, {}),
    "memory through tmpfs (6.5 GiB)": (THROUGH_TMPFS, {}),
    "disk (3 GiB into the program, disk_mb=2048)": (DISK, {"disk_mb": 2048}),
}


@contextmanager
def defence_off() -> Iterator[None]:
    """The control: the run's cgroup and bounded workspace off (local's per-process rlimits)."""
    saved = {k: os.environ.get(k) for k in (cgroup.SETTING, BOUNDED_SETTING)}
    os.environ[cgroup.SETTING] = "0"
    os.environ[BOUNDED_SETTING] = "0"
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def backend_named(name: str, work: WorkPaths) -> SandboxBackend:
    if name == "local":
        from testprism.tasks.sandbox.local import LocalBackend

        return LocalBackend(work)
    from testprism.tasks.sandbox.docker.backend import DockerBackend

    return DockerBackend(work)


def attack(backend: SandboxBackend, env: Path, tree: Path, script: str, limits: dict) -> tuple[str, str]:
    """One run of `script` under the default limits (bar `limits`): its verdict and last line."""
    result = backend.run(RunRequest(tree=tree, suite_folder=None, suite_files=(), command=script,
                                    environment=env, limits=Limits(**{"timeout_s": 240.0, **limits})))
    outcome, reason = classify(result)
    lines = [line for line in result.output_tail.splitlines() if line.strip()]
    return f"{outcome.value}/{reason.value if reason else '-'}", (lines[-1][:100] if lines else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="local,docker")
    parser.add_argument("--controls", action="store_true", help="also run each attack with local's defence off")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    with tempfile.TemporaryDirectory(prefix="redteam-", dir="/var/tmp") as scratch:
        os.chmod(scratch, 0o755)  # the sandbox's own uid reaches its workspace through it
        work = WorkPaths(Path(scratch) / "work")
        tree = Path(scratch) / "tree"
        tree.mkdir()
        (tree / "data.txt").write_text("program file\n")
        for name in args.backends.split(","):
            backend = backend_named(name, work)
            try:
                env = backend.prepare(EnvironmentSpec(python="3.11", packages=()))
                for label, (script, limits) in ATTACKS.items():
                    verdict, last = attack(backend, env, tree, script, limits)
                    log.info("%-7s defended  %-45s %-20s %s", name, label, verdict, last)
                    if args.controls and name == "local":
                        with defence_off():
                            verdict, last = attack(backend, env, tree, script, limits)
                        log.info("%-7s control   %-45s %-20s %s", name, label, verdict, last)
            finally:
                backend.close()


if __name__ == "__main__":
    main()
