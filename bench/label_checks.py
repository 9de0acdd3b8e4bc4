"""Benchmark: what the label defences of issue 39 cost the harness per run, side by side.

- the cross-check (tasks/execution/crosscheck.py): `classify` of one run with and without
  it, alternated in rounds, on a JUnit run (a pytest report of 12 cases and the 4 KiB tail
  of its log) and on a log-parsed run (pytest's `-rA` log, tests/data/runner_logs), and on
  an 8 MiB log of result lines (a parsed log's bound: the worst case);
- the restoration (tasks/execution/infrastructure.py): `to_restore` over a candidate's
  touched files (one source file, a conftest.py, a pyproject.toml whose pytest section
  changed), done once per candidate's checked tree, not per run;
- the report pipe's own cost is a backend's: bench/replay_overhead.py `--against REV`.

Usage: python bench/label_checks.py [--rounds 20]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from testprism.tasks.execution import infrastructure, verdict
from testprism.tasks.execution.crosscheck import disagreement
from testprism.tasks.sandbox.base import ExecResult

LOGS = Path(__file__).resolve().parents[1] / "tests" / "data" / "runner_logs"
REPORT = ("<testsuite>" + "".join(f'<testcase classname="tests.test_x" name="test_{i}"/>' for i in range(12))
          + "</testsuite>").encode()


def _per_call_us(call, repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        call()
    return (time.perf_counter() - start) / repeat * 1e6


def _side_by_side(name: str, call, repeat: int, rounds: int) -> None:
    on, off = [], []
    for _ in range(rounds):
        on.append(_per_call_us(call, repeat))
        real = verdict.disagreement
        verdict.disagreement = lambda *args, **kwargs: None
        try:
            off.append(_per_call_us(call, repeat))
        finally:
            verdict.disagreement = real
    print(f"{name:<44} with {statistics.median(on):9.1f} µs  without {statistics.median(off):9.1f} µs  "
          f"added {statistics.median(on) - statistics.median(off):8.1f} µs a run")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    pytest_log = (LOGS / "pytest.log").read_text()
    junit_run = ExecResult(0, 0.1, pytest_log[-4096:].replace("failed", "passed"), junit_xml=REPORT)
    parsed_run = ExecResult(1, 0.1, pytest_log)
    big = ExecResult(0, 0.1, "PASSED tests/t.py::test_a\n" * (8 * 1024 * 1024 // 26) + "=== 1 passed in 1s ===\n")
    _side_by_side("JUnit run (12 cases, 4 KiB tail)", lambda: verdict.classify(junit_run), 2000, args.rounds)
    _side_by_side("pytest -rA log (real, 3.4 KiB)", lambda: verdict.classify(parsed_run, ("x",), parser="pytest"),
                  500, args.rounds)
    start = time.perf_counter()
    assert disagreement(big, (), "pytest") is None
    print(f"{'cross-check alone, 8 MiB parsed log':<44} {time.perf_counter() - start:9.3f} s (the bound's worst case)")
    with tempfile.TemporaryDirectory() as folder:
        program, tree = Path(folder, "program"), Path(folder, "tree")
        for root, pytest_section in ((program, '"-q"'), (tree, '"-q -p forged"')):
            (root / "pkg").mkdir(parents=True)
            (root / "pkg" / "mod.py").write_text("x = 1\n" * 200)
            (root / "pyproject.toml").write_text(f'[project]\nname = "x"\n[tool.pytest.ini_options]\naddopts = {pytest_section}\n')
        (tree / "conftest.py").write_text("import pytest\n")
        touched = {"pkg/mod.py", "conftest.py", "pyproject.toml"}
        times = [_per_call_us(lambda: infrastructure.to_restore(program, tree, touched), 200) for _ in range(args.rounds)]
        print(f"{'restoration, per candidate (3 touched files)':<44} {statistics.median(times):9.1f} µs")


if __name__ == "__main__":
    main()
