"""The coverage pass's instrumentation: the environment plus coverage.py, and the helper
folder that starts it in every Python process of a run and writes the report back.

The helper folder is mounted read-only outside the workspace (HELPER_AT), and the report
it hands back is sealed with a nonce of the run's own (`unseal`): a suite can neither
replace the measurement code nor put a report of its own where the harness reads it
(SECURITY.md, "Coverage").
"""

from __future__ import annotations

import re
import secrets
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


from testprism.tasks.model.benchmark import Suite
from testprism.tasks.model.benchmark_format import EnvironmentSpec
from testprism.tasks.model.hashing import digest
from testprism.tasks.model.workdir import WorkPaths, build_once
from testprism.tasks.sandbox.base import Mount

from testprism.tasks.model.changes import ChangedFile

COVERAGE_REQUIREMENT = "coverage>=5"

HELPER_AT = "/testprism-coverage"
"""Where a coverage run sees its helper folder: a host folder mounted read-only there
(`Mount`), outside the workspace, so the suite can neither rewrite nor remove it."""

HELPER_DIR = ".testprism-coverage"
"""The folder under the suite's `tmp/` that brings the run's seal (`NONCE_FILE`), read and
removed by the helper before the suite starts (a dot folder: pytest does not collect it)."""

NONCE_FILE = f"{HELPER_DIR}/nonce"

SEAL = b"testprism-coverage "
"""The first line of every report the helper hands back: this, the run's nonce, a newline."""

# Every language's run.sh starts so (`{what}`: how it measures). The nonce is read into this
# shell and its file removed before any code of the suite runs; after the suite, `collecting`
# kills every other process of the run (only inside a sandbox's own process namespace: the
# helper folder is at HELPER_AT only there) and gives the collector a fresh folder, and
# `hand_back` puts the collector's report, under the nonce, where the harness reads it.
# Nothing of the nonce reaches a command line or an environment.
RUNNER_HEAD = """\
#!/usr/bin/env bash
# testprism coverage pass (tasks/score/coverage/instrument.py): the suite's own entry, {what},
# then the changed files' part of it at $TESTPRISM_JUNIT, sealed; the suite's JUnit report goes aside.
set -u
here="$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)"
root="$PWD"
out="$TESTPRISM_JUNIT"
data="$(dirname "$out")/coverage"
report="$data/unsealed"
nonce=""
if [ -f "$root/tmp/{nonce}" ]; then read -r nonce < "$root/tmp/{nonce}"; fi
rm -rf "$root/tmp/{helper}"
mkdir -p "$data"
sweep() {{
  [ "$here" = "{at}" ] || return 0
  local keep=" $$ " pid=$$ stat rest pass left entry
  while [ "$pid" -gt 1 ]; do
    read -r stat < "/proc/$pid/stat" || break
    rest="${{stat##*) }}"; rest="${{rest#* }}"; pid="${{rest%% *}}"
    keep="$keep$pid "
  done
  for ((pass = 0; pass < 100; pass++)); do
    left=0
    for entry in /proc/[0-9]*; do
      pid="${{entry#/proc/}}"
      case "$keep" in *" $pid "*) continue;; esac
      read -r stat < "$entry/stat" 2>/dev/null || continue
      rest="${{stat##*) }}"
      [ "${{rest%% *}}" = Z ] && continue
      kill -9 "$pid" 2>/dev/null && left=1
    done
    [ "$left" = 0 ] && return 0
  done
  return 1
}}
collecting() {{
  if ! sweep; then echo "testprism coverage: processes of the suite outlived it: no report" >&2; nonce=""; fi
  [ -p "$out" ] || rm -rf "$out" 2>/dev/null  # the harness's report pipe stays (tasks/sandbox/report_pipe.py)
  local fresh
  if fresh="$(mktemp -d)"; then report="$fresh/report"; else nonce=""; fi
}}
hand_back() {{
  if [ -n "$nonce" ] && [ -f "$report" ] && [ ! -L "$report" ]; then
    {{ printf '{seal}%s\\n' "$nonce"; cat "$report"; }} > "$out"
  fi
}}
"""


def runner_head(what: str) -> str:
    """The start of a language's run.sh (`RUNNER_HEAD`): after the suite's entry it calls
    `collecting`, its collector writes "$report", and `hand_back` ends it."""
    return RUNNER_HEAD.format(what=what, nonce=NONCE_FILE, helper=HELPER_DIR, at=HELPER_AT, seal=SEAL.decode())


_SITECUSTOMIZE = '''\
"""testprism coverage pass: start coverage.py in this interpreter (COVERAGE_PROCESS_START)."""
try:
    import coverage
except ImportError:
    pass
else:
    coverage.process_startup()
'''

# -s: no user site (HOME is the run's /tmp, where the suite could have left a usercustomize)
_RUNNER = runner_head("with coverage.py in every Python process") + '''\
export TESTPRISM_COVERAGE_ROOT="$root" TESTPRISM_COVERAGE_DATA="$data"
(
  export COVERAGE_PROCESS_START="$here/coveragerc"
  export PYTHONPATH="$here/site${PYTHONPATH:+:$PYTHONPATH}"
  export TESTPRISM_JUNIT="$data/junit.xml"
  exec bash "$here/entry.sh"
)
status=$?
collecting
cd "$root" && python -s "$here/collect.py" "$report" "$data" "$here/coveragerc" "$root"
hand_back
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
        "run.sh": _RUNNER,
        "entry.sh": entry + "\n",
        "collect.py": _COLLECTOR,
        "coveragerc": _coveragerc(changes),
        "site/sitecustomize.py": _SITECUSTOMIZE,
    }


COMMAND = f"bash {HELPER_AT}/run.sh"
"""The entry of every coverage run: the helper, from its read-only folder, runs the suite's own entry."""


def coverage_helpers(suite: Suite, changes: tuple[ChangedFile, ...], work: WorkPaths) -> Path:
    """The Python helper folder (`with_helpers`)."""
    return with_helpers(_helper_files(suite.entry, changes), work)


def with_helpers(helpers: dict[str, str], work: WorkPaths) -> Path:
    """The helper folder of a suite's runs: `helpers` (path in the folder → text), built once
    in the work area and mounted read-only at HELPER_AT (`placement`). Every language's
    instrumentation travels this way (tasks/score/coverage/toolchains/); `entry.sh`, the
    suite's own entry, is one of them."""
    key = digest("coverage-helpers-folder", *(part for item in sorted(helpers.items()) for part in item))

    def build(target: Path) -> None:
        for rel, text in helpers.items():
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            (target / rel).write_text(text)

    return build_once(work.root / "coverage" / key, build)


@dataclass(frozen=True)
class Placement:
    """Where one coverage run finds its files: the suite's and the nonce under `tmp/`
    (copied from `suite_folder`), the helper folder in `mounts`, read-only."""

    suite_folder: Path
    suite_files: tuple[str, ...]
    command: str
    mounts: tuple[Mount, ...]


@contextmanager
def placement(suite: Suite, helpers: Path, nonce: str, work: WorkPaths) -> Iterator[Placement]:
    """One run's placement: the helper folder `helpers` mounted read-only at HELPER_AT, and
    the suite's files with the nonce that seals its report (`unseal`) in a folder of this
    run's own, removed after it."""
    with tempfile.TemporaryDirectory(prefix="coverage-run-", dir=work.root) as name:
        folder = Path(name)
        files = tuple(rel for rel in suite.files if not rel.startswith(f"{HELPER_DIR}/"))
        for rel in files:
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(suite.folder / rel, folder / rel)
        (folder / NONCE_FILE).parent.mkdir(parents=True, exist_ok=True)
        (folder / NONCE_FILE).write_text(nonce + "\n")
        yield Placement(folder, (*files, NONCE_FILE), COMMAND, (Mount(HELPER_AT, helpers),))


def new_nonce() -> str:
    """A run's nonce: what its report must start with (`SEAL`), unknown to the suite."""
    return secrets.token_hex(16)


def unseal(report: bytes | None, nonce: str) -> bytes:
    """The helper's report without its seal; b"" when the run handed none back (the
    toolchain says why). ValueError when the report does not start with this run's nonce:
    the helper did not hand it back (the suite wrote it, or ended the helper first)."""
    if not report:
        return b""
    seal = SEAL + nonce.encode() + b"\n"
    if not report.startswith(seal):
        raise ValueError("the coverage report does not carry this run's seal: not the helper's")
    return report[len(seal):]


#: what the helpers are: part of every measurement's key
HELPERS_HASH = digest("coverage-helpers", _SITECUSTOMIZE, _RUNNER, _COLLECTOR, COVERAGE_REQUIREMENT)
