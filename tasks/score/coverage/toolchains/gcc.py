"""C and C++: gcc's `--coverage`, compiled in: the state is built again in the pass's
environment (`instruments_build`), the run's counts gathered under GCOV_PREFIX and read by
gcov (GccToolchain)."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from testprism.tasks.model import syntax
from testprism.tasks.model.benchmark import Suite
from testprism.tasks.model.benchmark_format import EnvironmentSpec
from testprism.tasks.model.changes import ChangedFile, analyse_reference
from testprism.tasks.model.hashing import digest
from testprism.tasks.model.workdir import WorkPaths
from testprism.tasks.score.coverage.instrument import runner_head, with_helpers
from testprism.tasks.score.coverage.reports import MeasuredFile, parse_gcov_report
from testprism.tasks.score.coverage.toolchains.base import Toolchain


_GCC_RUNNER = runner_head("with gcov data from every process built with --coverage") + """\
(
  export GCOV_PREFIX="$data/gcda"
  export TESTPRISM_JUNIT="$data/junit.xml"
  exec bash "$here/entry.sh"
)
status=$?
collecting
bash "$here/collect.sh" "$report" "$data" "$root" "$here/names"
hand_back
exit "$status"
"""

# gcov reads an object's notes (.gcno, left by the compiler beside the object) and its counts
# (.gcda) from one folder: libgcov wrote the counts under GCOV_PREFIX + the object's absolute
# path, so each object's notes are copied there. Only objects whose notes name a changed
# file's base name are read (gcov's JSON of a C++ unit holds every header it instantiates).
_GCC_COLLECTOR = """\
#!/usr/bin/env bash
# testprism coverage pass (tasks/score/coverage/toolchains.py): gcov's JSON of the objects naming a changed file.
set -u
report="$1" data="$2" root="$3" names="$4"
{
  printf '# testprism gcov\\n# root %s\\n# gcda %s\\n' "$root" "$(find "$data/gcda" -type f -name '*.gcda' 2>/dev/null | wc -l)"
  find "$root" -type f -name '*.gcno' -print0 | while IFS= read -r -d '' notes; do
    grep -qF -f "$names" "$notes" || continue
    mirror="$data/gcda$(dirname "$notes")"
    mkdir -p "$mirror" && cp "$notes" "$mirror/" \\
      && (cd "$mirror" && gcov --json-format --stdout --object-directory "$mirror" "$mirror/${notes##*/}" 2>/dev/null) \\
      || printf '# error %s\\n' "${notes#"$root"/}"
    echo
  done
} > "$report"
"""

_GCC_HEADERS = (".h", ".hh", ".hpp", ".hxx", ".inl")


class GccToolchain(Toolchain):
    """gcc's own coverage (`--coverage`, read back by gcov) for C and C++.

    Coverage is compiled in, so the state is built again in an environment whose
    `CFLAGS`, `CXXFLAGS` and `LDFLAGS` add `--coverage` (CMake, autotools and make's
    implicit rules read them; a build that sets its own flags over them is not
    instrumented and its report has no data: `coverage_failed`). The suite's run links
    with the same `LDFLAGS` (libgcov), and `GCOV_PREFIX` sends every process's counts
    beside the report. A changed header the compiled objects hold no code of
    (declarations, a struct's fields) has no statements: nothing of it is counted."""

    instruments_build = True
    helpers_hash = digest("coverage-helpers-gcc", _GCC_RUNNER, _GCC_COLLECTOR)

    def environment(self, environment: EnvironmentSpec) -> EnvironmentSpec:
        variables = dict(environment.variables)
        for name in ("CFLAGS", "CXXFLAGS", "LDFLAGS"):
            variables[name] = f"{variables[name]} --coverage" if variables.get(name) else "--coverage"
        toolchains = environment.toolchains + ("gcov",) if "gcov" not in environment.toolchains else environment.toolchains
        return environment.model_copy(update={"variables": tuple(sorted(variables.items())), "toolchains": toolchains})

    def analyse(self, tree: Path, reference: bytes) -> tuple[ChangedFile, ...]:
        """Changed C and C++ sources and headers (a C++ instance's .c files too)."""
        return analyse_reference(tree, reference, lambda path: syntax.language_of(path) in (syntax.C, syntax.CPP))

    def helpers(self, suite: Suite, changes: tuple[ChangedFile, ...], tree: Path, work: WorkPaths) -> Path:
        return with_helpers({
            "run.sh": _GCC_RUNNER,
            "entry.sh": suite.entry + "\n",
            "collect.sh": _GCC_COLLECTOR,
            "names": "".join(sorted({f"{PurePosixPath(c.path).name}\n" for c in changes})),
        }, work)

    def parse(self, report: bytes, tree: Path, changes: tuple[ChangedFile, ...]) -> dict[str, MeasuredFile]:
        if not report:
            raise ValueError("no gcov report: the suite's run left none")
        measured = parse_gcov_report(report)
        for change in changes:
            if change.path not in measured and change.path.endswith(_GCC_HEADERS):
                measured[change.path] = MeasuredFile(frozenset(), frozenset())
        return measured
