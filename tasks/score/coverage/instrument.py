"""The coverage pass's instrumentation: the environment plus coverage.py, and the helper
folder that starts it in every Python process of a run and writes the report back.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable
from pathlib import Path


from testprism.tasks.model.benchmark import EnvironmentSpec, Suite
from testprism.tasks.model.hashing import digest
from testprism.tasks.model.workdir import WorkPaths, build_once

from testprism.tasks.model.changes import ChangedFile

COVERAGE_REQUIREMENT = "coverage>=5"

HELPER_DIR = ".testprism-coverage"
"""The helper folder under the suite's `tmp/` (a dot folder: pytest does not collect it)."""

_SITECUSTOMIZE = '''\
"""testprism coverage pass: start coverage.py in this interpreter (COVERAGE_PROCESS_START)."""
try:
    import coverage
except ImportError:
    pass
else:
    coverage.process_startup()
'''

_RUNNER = '''\
#!/usr/bin/env bash
# testprism coverage pass (tasks/score/coverage/instrument.py): the suite's own entry with coverage.py in
# every Python process, then the combined data as JSON at $TESTPRISM_JUNIT.
set -u
root="$PWD"
here="$root/tmp/{helper}"
report="$TESTPRISM_JUNIT"
data="$(dirname "$report")/coverage"
mkdir -p "$data"
export TESTPRISM_COVERAGE_ROOT="$root" TESTPRISM_COVERAGE_DATA="$data"
(
  export COVERAGE_PROCESS_START="$here/coveragerc"
  export PYTHONPATH="$here/site${{PYTHONPATH:+:$PYTHONPATH}}"
  export TESTPRISM_JUNIT="$data/junit.xml"
  exec bash "$here/entry.sh"
)
status=$?
cd "$root" && python "$here/collect.py" "$report" "$data" "$here/coveragerc" "$root"
exit "$status"
'''

# Runs under the environment's interpreter, whatever its version: plain Python 3 syntax.
_COLLECTOR = '''\
"""testprism coverage pass: combine this run's data, write statements and missed lines."""
import glob
import json
import os
import sys


def main():
    report, data, rc, root = sys.argv[1:5]
    root = os.path.realpath(root)
    out = {"data_files": len(glob.glob(os.path.join(data, ".coverage.*"))), "files": {}, "error": None}
    try:
        if out["data_files"]:
            import coverage

            cov = coverage.Coverage(config_file=rc)
            cov.combine()
            for name in sorted(cov.get_data().measured_files()):
                rel = os.path.relpath(name, root) if name.startswith(root + os.sep) else name
                try:
                    _, statements, _, missing, _ = cov.analysis2(name)
                except Exception as exc:  # the suite may have removed the file
                    out["files"][rel] = {"error": "{}: {}".format(type(exc).__name__, exc)}
                    continue
                out["files"][rel] = {"statements": sorted(statements), "missing": sorted(missing)}
    except Exception as exc:
        out["error"] = "{}: {}".format(type(exc).__name__, exc)
    with open(report, "w") as fh:
        json.dump(out, fh)


main()
'''


def coverage_environment(environment: EnvironmentSpec) -> EnvironmentSpec:
    """The instance's environment plus coverage.py (kept as is when it already has it)."""
    if any(re.match(r"\s*coverage\s*($|[\[<>=!~;])", p, re.IGNORECASE) for p in environment.packages):
        return environment
    return environment.model_copy(update={"packages": (*environment.packages, COVERAGE_REQUIREMENT)})


def _coveragerc(changes: Iterable[ChangedFile]) -> str:
    include = "".join(f"\n    ${{TESTPRISM_COVERAGE_ROOT}}/{c.path}" for c in changes)
    return (
        "# testprism coverage pass: trace only the files the reference changes.\n"
        "[run]\nparallel = True\ndata_file = ${TESTPRISM_COVERAGE_DATA}/.coverage\n"
        f"include ={include}\n"
        "disable_warnings = no-data-collected, module-not-measured, module-not-imported, module-not-python\n"
    )


def _helper_files(entry: str, changes: tuple[ChangedFile, ...]) -> dict[str, str]:
    return {
        f"{HELPER_DIR}/run.sh": _RUNNER.format(helper=HELPER_DIR),
        f"{HELPER_DIR}/entry.sh": entry + "\n",
        f"{HELPER_DIR}/collect.py": _COLLECTOR,
        f"{HELPER_DIR}/coveragerc": _coveragerc(changes),
        f"{HELPER_DIR}/site/sitecustomize.py": _SITECUSTOMIZE,
    }


COMMAND = f"bash tmp/{HELPER_DIR}/run.sh"
"""The entry of every coverage run: the helper runs the suite's own entry."""


def coverage_suite(suite: Suite, changes: tuple[ChangedFile, ...], work: WorkPaths) -> tuple[Path, tuple[str, ...]]:
    """The suite's files plus the Python helper folder (`with_helpers`)."""
    return with_helpers(suite, _helper_files(suite.entry, changes), work)


def with_helpers(suite: Suite, helpers: dict[str, str], work: WorkPaths) -> tuple[Path, tuple[str, ...]]:
    """The suite's files plus `helpers` (relative path → text), built once in the work
    area; returns the folder and the relative files a RunRequest copies under `tmp/`.
    Every language's instrumentation travels this way (tasks/score/coverage/toolchains.py)."""
    key = digest("coverage-suite", suite.hash, *(part for item in sorted(helpers.items()) for part in item))

    def build(target: Path) -> None:
        for rel in suite.files:
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(suite.folder / rel, target / rel)
        for rel, text in helpers.items():
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            (target / rel).write_text(text)

    folder = build_once(work.root / "coverage" / key, build)
    return folder, tuple(rel for rel in suite.files if not rel.startswith(f"{HELPER_DIR}/")) + tuple(helpers)


#: what the helpers are: part of every measurement's key
HELPERS_HASH = digest("coverage-helpers", _SITECUSTOMIZE, _RUNNER, _COLLECTOR, COVERAGE_REQUIREMENT)
