"""Benchmark: how long `testprism --help` and `testprism replay --help` take, this checkout
against another one, side by side in one run (issue 32).

Each round runs every command once with this checkout's interpreter and once with the
baseline's (a virtualenv where the other checkout is installed, `pip install -e`), in
turn, so a machine whose load drifts slows both alike. Prints, per command and side, the
median wall and CPU (user + system, the child's own accounting) seconds over the rounds and
the ratio of the medians, and the import time of `testprism.flows.cli` alone (`python -X
importtime`, its cumulative microseconds, median). The children run without
PYTHONDONTWRITEBYTECODE (set on this project's machines): an installed CLI finds its
modules' bytecode cached, and round 0 writes it, where otherwise every start compiled
testprism's own modules again (about 25 ms of a `--help` here). Run:

    git worktree add /tmp/main-ref <commit> && python3.11 -m venv /tmp/main-ref/.venv \\
        && /tmp/main-ref/.venv/bin/pip install -e /tmp/main-ref
    .venv/bin/python bench/cli_start.py --baseline /tmp/main-ref/.venv/bin/python --rounds 15
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import subprocess
import sys
import time

from rich.console import Console
from rich.logging import RichHandler
from rich.table import Table

log = logging.getLogger("bench.cli_start")

COMMANDS = {"testprism --help": ["--help"], "testprism replay --help": ["replay", "--help"]}


#: the children's environment: bytecode cached, as an installed CLI has it (module docstring)
CHILD_ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def timed(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one whole process (its start-up included)."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=CHILD_ENV)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"{' '.join(argv)} exited {child.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def import_seconds(python: str) -> float:
    """`testprism.flows.cli`'s cumulative import time, from `-X importtime`."""
    done = subprocess.run([python, "-X", "importtime", "-c", "import testprism.flows.cli"], capture_output=True,
                          text=True, check=True, env=CHILD_ENV)
    line = next(x for x in done.stderr.splitlines() if x.rstrip().endswith("| testprism.flows.cli"))
    return int(line.split("|")[1]) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="interpreter of the checkout to compare against")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, handlers=[RichHandler(show_path=False)], format="%(message)s")
    sides = {"this checkout": sys.executable, "baseline": args.baseline}
    walls: dict[tuple[str, str], list[float]] = {}
    cpus: dict[tuple[str, str], list[float]] = {}
    imports: dict[str, list[float]] = {side: [] for side in sides}
    for round_ in range(args.rounds + 1):  # round 0 warms the disk cache and is not counted
        for name, tail in COMMANDS.items():
            for side, python in sides.items():
                wall, cpu = timed([python, "-m", "testprism.flows.cli", *tail])
                if round_:
                    walls.setdefault((name, side), []).append(wall)
                    cpus.setdefault((name, side), []).append(cpu)
        for side, python in sides.items():
            if round_:
                imports[side].append(import_seconds(python))
        log.info("round %d of %d done", round_, args.rounds)
    table = Table(title=f"median of {args.rounds} rounds, alternating (seconds)")
    for column in ("command", "this checkout: wall", "cpu", "baseline: wall", "cpu", "ratio (wall)", "ratio (cpu)"):
        table.add_column(column, justify="left" if column == "command" else "right")
    rows = [(name, walls[(name, "this checkout")], cpus[(name, "this checkout")], walls[(name, "baseline")],
             cpus[(name, "baseline")]) for name in COMMANDS]
    for name, wall_a, cpu_a, wall_b, cpu_b in rows:
        ma, ca, mb, cb = (statistics.median(v) for v in (wall_a, cpu_a, wall_b, cpu_b))
        table.add_row(name, f"{ma:.3f}", f"{ca:.3f}", f"{mb:.3f}", f"{cb:.3f}", f"{ma / mb:.3f}", f"{ca / cb:.3f}")
    ia, ib = statistics.median(imports["this checkout"]), statistics.median(imports["baseline"])
    table.add_row("import testprism.flows.cli (-X importtime)", f"{ia:.3f}", "", f"{ib:.3f}", "", f"{ia / ib:.3f}", "")
    Console(width=150).print(table)


if __name__ == "__main__":
    main()
