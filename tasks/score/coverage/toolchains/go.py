"""Go: the suite runs `go test` (or `gotestsum -- ...`) itself; the helper sets
`GOFLAGS=-coverprofile=... -coverpkg=<module>/...`, which every `go test` of the run picks up
(`go help environment`: GOFLAGS flags apply to the commands that know them; `go build` and
`go vet` ignore these two). `-coverpkg` names the changed files' modules rather than
`./...`, so a suite running `go test` from a subfolder still instruments the whole module.
The profile's lines for the changed files come back at $TESTPRISM_JUNIT. Go 1.19 writes one
profile per `go test` command: a suite that runs several keeps the last one's only."""

from __future__ import annotations

import logging
import re
from pathlib import Path, PurePosixPath

from testprism.tasks.model.benchmark import Suite
from testprism.tasks.model.changes import ChangedFile, analyse_reference
from testprism.tasks.model.hashing import digest
from testprism.tasks.model.workdir import WorkPaths
from testprism.tasks.score.coverage.instrument import runner_head, with_helpers
from testprism.tasks.score.coverage.reports import MeasuredFile, parse_go_profile
from testprism.tasks.score.coverage.toolchains.base import Toolchain

log = logging.getLogger(__name__)


_GO_RUNNER = runner_head("with a cover profile from every `go test`") + '''\
case "$data" in *" "*) echo "testprism coverage: GOFLAGS cannot hold the path $data (a space)" >&2; exit 2;; esac
(
  export GOFLAGS="${GOFLAGS:+$GOFLAGS }-coverprofile=$data/cover.out -coverpkg=$(cat "$here/packages")"
  export TESTPRISM_JUNIT="$data/junit.xml"
  exec bash "$here/entry.sh"
)
status=$?
collecting
if [ -f "$data/cover.out" ]; then
  { head -n 1 "$data/cover.out"; grep -F -f "$here/files" "$data/cover.out"; } > "$report"
fi
hand_back
exit "$status"
'''

_MODULE = re.compile(rb'^\s*module\s+"?([^"\s]+)"?', re.MULTILINE)


def go_modules(tree: Path, paths: list[str]) -> dict[str, str]:
    """Module path → its folder ("" for the root) for each of `paths`' nearest go.mod."""
    modules: dict[str, str] = {}
    for path in paths:
        for folder in PurePosixPath(path).parents:
            gomod = tree / folder / "go.mod"
            if gomod.is_file():
                found = _MODULE.search(gomod.read_bytes())
                if found:
                    modules[found.group(1).decode()] = "" if str(folder) == "." else str(folder)
                break
    return modules


def _import_file(path: str, modules: dict[str, str]) -> str | None:
    """`pkg/a.go` as the cover profile names it (`module/pkg/a.go`), None outside every module."""
    owners = [(m, f) for m, f in modules.items() if not f or path.startswith(f + "/")]
    if not owners:
        return None
    module, folder = max(owners, key=lambda owner: len(owner[1]))
    return f"{module}/{path[len(folder) + 1:] if folder else path}"


class GoToolchain(Toolchain):
    """`go test` cover profiles through GOFLAGS."""

    helpers_hash = digest("coverage-helpers-go", _GO_RUNNER)

    def analyse(self, tree: Path, reference: bytes) -> tuple[ChangedFile, ...]:
        """Changed .go files but tests (`_test.go`: not instrumented by `go test`) and
        those outside any module (the profile could not name them)."""
        found = analyse_reference(tree, reference, lambda path: path.endswith(".go") and not path.endswith("_test.go"))
        modules = go_modules(tree, [c.path for c in found])
        for change in found:
            if _import_file(change.path, modules) is None:
                log.warning("%s: in no Go module (no go.mod above it): not measured", change.path)
        return tuple(c for c in found if _import_file(c.path, modules) is not None)

    def helpers(self, suite: Suite, changes: tuple[ChangedFile, ...], tree: Path, work: WorkPaths) -> Path:
        modules = go_modules(tree, [c.path for c in changes])
        names = sorted(name for c in changes if (name := _import_file(c.path, modules)) is not None)
        return with_helpers({
            "run.sh": _GO_RUNNER,
            "entry.sh": suite.entry + "\n",
            "packages": ",".join(f"{m}/..." for m in sorted(modules)) + "\n",
            "files": "".join(f"{name}:\n" for name in names),
        }, work)

    def parse(self, report: bytes, tree: Path, changes: tuple[ChangedFile, ...]) -> dict[str, MeasuredFile]:
        """No report: the run wrote no profile (no `go test` ran, or none built), which
        measures nothing rather than 0."""
        if not report:
            raise ValueError("no Go cover profile: the suite ran no go test, or nothing built")
        return parse_go_profile(report, go_modules(tree, [c.path for c in changes]))
