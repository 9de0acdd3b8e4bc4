"""Warm/cold identity (issue 41): every state of the given Python instances, each suite run
cold and warm (tasks/sandbox/warm.py) under `local`, outcome by outcome.

A suite here is the instance's official checks (its test patch and command), with
`--suites` every configuration's suite package of the instance (its entry, bash
tmp/run_tests.sh), and with `--generated FILE` (the real data's generated_tests_dev.jsonl)
every generated test patch of that instance run with the checks' command. A run's outcome is its exit code and each
test's JUnit result (passed, failed, error, skipped); warm and cold must be equal for
every (instance, state, suite). Warm runs that the backend sent cold (not admitted) are
counted apart: they are cold twice and prove nothing about the warm route. Both routes get
one fixed PYTHONHASHSEED (`--hash-seed`, default 0): a warm run inherits its warm process's
string-hash seed, one per state, where a cold run draws its own, so a suite that follows
hash order (a set of strings iterated) differs between two runs by chance otherwise (the
first full run here: 1 of 270, algokit toposort's reduce-leaves candidate under the biased
suite, which fails or passes by the seed cold too).

    sudo .venv/bin/python bench/warm_identity.py examples/instances/* --only-python --suites examples/suites
    sudo .venv/bin/python bench/warm_identity.py /tmp/rd-bench/instances/* \
        --generated /work/shared/realdata/generated_tests_dev.jsonl
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from testprism.tasks.model.benchmark import load_instance, load_suite, run_limits
from testprism.tasks.model.state import materialise, states_of
from testprism.tasks.model.workdir import WorkPaths
from testprism.tasks.sandbox.base import ExecResult, Limits, RunRequest, SuiteNotInstalled
from testprism.tasks.sandbox.local import LocalBackend


def outcomes(result: ExecResult) -> tuple[int | None, dict[str, str]]:
    """The exit code and each test's JUnit result."""
    tests: dict[str, str] = {}
    if result.junit_xml:
        try:
            root = ET.fromstring(result.junit_xml)
        except ET.ParseError:
            return result.exit_code, {"<report>": "unreadable"}
        for case in root.iter("testcase"):
            kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
            tests[f"{case.get('classname')}::{case.get('name')}"] = kinds[0] if kinds else "passed"
    return result.exit_code, tests


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("instances", nargs="+", type=Path)
    parser.add_argument("--generated", type=Path, help="generated test patches (SWE-bench predictions form)")
    parser.add_argument("--suites", type=Path, help="a benchmark's suites/ folder: every configuration's suite too")
    parser.add_argument("--only-python", action="store_true", help="skip instances in other languages")
    parser.add_argument("--states", type=int, default=0, help="at most this many states per instance (0: all)")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--hash-seed", default="0",
                        help="PYTHONHASHSEED of both routes (a warm run has its warm process's seed, a cold run "
                             "its own: a suite that follows str hash order differs by chance unless it is fixed; "
                             "'' leaves it random)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("testprism.tasks.sandbox.local").setLevel(logging.DEBUG)  # says why a run went cold
    generated: dict[str, list[bytes]] = {}
    if args.generated:
        for line in args.generated.read_text().splitlines():
            row = json.loads(line)
            generated.setdefault(row["instance_id"], []).append(row["model_patch"].encode())
    work = WorkPaths(args.work or Path(tempfile.mkdtemp(prefix="warm-identity-")))
    backend = LocalBackend(work)
    went_cold = _count_cold()
    total = equal = 0
    print("| instance | states | suites | runs compared | equal | warm (admitted) | cold s/run | warm s/run |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    try:
        for folder in args.instances:
            instance = load_instance(folder)
            if args.only_python and instance.spec.language != "python":
                continue
            environment = backend.prepare(instance.spec.environment)
            states = states_of(instance)[: args.states or None]
            # (folder, files, entry, patch): the official checks, generated test patches, packaged suites
            command = instance.spec.checks.command
            suites = [(None, (), command, instance.checks_patch),
                      *((None, (), command, patch) for patch in generated.get(instance.id, []))]
            for configuration in sorted(args.suites.iterdir()) if args.suites else []:
                if (configuration / instance.id).is_dir():
                    suite = load_suite(configuration / instance.id, configuration.name, instance.id)
                    suites.append((suite.folder, suite.files, suite.entry, suite.patch))
            limits = run_limits(instance, Limits())
            row_total = row_equal = admitted = 0
            times = {False: 0.0, True: 0.0}
            for state in states:
                tree = materialise(instance, state, work)
                if not tree.patch.applied:
                    continue
                for folder, files, entry, patch in suites:
                    seen = {}
                    for route in (False, True):
                        before = went_cold.count
                        start = time.monotonic()
                        try:
                            result = backend.run(RunRequest(
                                tree=tree.tree, suite_folder=folder, suite_files=files, command=entry,
                                environment=environment, limits=limits, suite_patch=patch, warm=route,
                                env={"PYTHONHASHSEED": args.hash_seed} if args.hash_seed else {}))
                        except SuiteNotInstalled as exc:  # a malformed test patch: the same either route
                            seen[route] = (None, {"<suite>": f"not installed: {str(exc)[:80]}"})
                            continue
                        times[route] += time.monotonic() - start
                        admitted += route and went_cold.count == before
                        seen[route] = outcomes(result)
                    row_total += 1
                    if seen[False] == seen[True]:
                        row_equal += 1
                    else:
                        print(f"DIFFERS {instance.id} {state.name} {entry}: cold {seen[False]} warm {seen[True]}",
                              file=sys.stderr)
            total += row_total
            equal += row_equal
            n = max(row_total, 1)
            print(f"| {instance.id} | {len(states)} | {len(suites)} | {row_total} | {row_equal} | {admitted} | "
                  f"{times[False] / n:.2f} | {times[True] / n:.2f} |")
    finally:
        backend.close()
    print(f"\n{equal} of {total} (instance, state, suite) outcomes equal warm and cold")
    return 0 if equal == total else 1


class _count_cold(logging.Handler):
    """Counts the local backend's "run goes cold" lines (a warm request it did not admit)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0
        logging.getLogger("testprism.tasks.sandbox.local").addHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        if "goes cold" in record.getMessage():
            self.count += 1
            print(f"  cold: {record.getMessage()}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
