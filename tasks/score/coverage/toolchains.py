"""How the coverage pass measures each language: which reference lines count, what the
run is given to report what it executed, and how that report is read back.

The probe (tasks/score/coverage/probe.py) asks `toolchain_for(instance.spec.language)`;
a language without a toolchain (tsx, any other: NOT_MEASURED_WHY
says why) is *not measured*: its rows keep ΔC and EC null with the reason `not_measured`,
never a number measured on the wrong lines.

Every language's helper folder is mounted read-only outside the workspace, and its run.sh
starts with instrument.RUNNER_HEAD: after the suite, every process it left is ended and the
collector's report handed back under the run's nonce (`instrument.unseal`).

- **python**: coverage.py in every process (tasks/score/coverage/instrument.py).
- **go**: the suite runs `go test` (or `gotestsum -- ...`) itself; the helper sets
  `GOFLAGS=-coverprofile=... -coverpkg=<module>/...`, which every `go test` of the run
  picks up (`go help environment`: GOFLAGS flags apply to the commands that know them;
  `go build` and `go vet` ignore these two). `-coverpkg` names the changed files' modules
  rather than `./...`, so a suite running `go test` from a subfolder still instruments
  the whole module. The profile's lines for the changed files come back at
  $TESTPRISM_JUNIT. Go 1.19 writes one profile per `go test` command: a suite that runs
  several keeps the last one's only.
- **javascript**: `NODE_V8_COVERAGE` makes every Node process write V8's block coverage;
  a small collector (`collect.cjs`: CommonJS whatever the package's `type`) keeps the
  changed files' entries, and the harness turns V8's offsets into lines itself
  (reports.parse_v8_report). Not c8: inside the sandbox it is not in the instance's
  environment and the run has no network to fetch it; on the host it would open the
  source files the run's own report names, as root, where the harness reads only the
  reference tree it materialised. The harness checks that each script V8 saw has the
  file's length, so code transformed on load (babel-jest, ts-node) is refused
  (`coverage_failed`), not mapped onto wrong lines.
- **typescript**: NODE_V8_COVERAGE as for JavaScript, and a preloaded hook that keeps the
  code Vitest's vite-node compiles for each changed file; the collector maps V8's counts on
  it back to the .ts lines through its inline source map (TypeScriptToolchain).
- **c, cpp**: gcc's `--coverage`, compiled in: the state is built again in the pass's
  environment (`instruments_build`), the run's counts gathered under GCOV_PREFIX and read
  by gcov (GccToolchain).
- **java**: JaCoCo's agent in every JVM through JAVA_TOOL_OPTIONS, its XML report written
  by JaCoCo's command line in the run (JavaToolchain).
- **rust**: `-C instrument-coverage`, compiled in (the state built again), with compiler-rt's
  profile runtime in place of the `profiler_builtins` Debian's rustc lacks; the profiles
  merged and exported (lcov) by Debian's llvm-14 tools in the run (RustToolchain).
- **php**: PCOV in every PHP process, started by a file PHP prepends to each script (an ini
  file added through `PHP_INI_SCAN_DIR`); each writes the changed files' lines at shutdown
  (PhpToolchain).
- **ruby**: Ruby's own `Coverage` (lines) in every Ruby process, started by
  `RUBYOPT=-r<helper>` before the suite's code loads; each writes the changed files' counts
  at exit (RubyToolchain).

For the other languages, which changed lines are code is told by the lexer here (neither
blank nor only comments) and, where the run reported the file, by the report's own
statements (Go: inside a cover block; gcov's lines; JaCoCo's lines; llvm-cov's lines; PCOV's
executable lines; Ruby's counted lines). Changed functions come
from the same tree-sitter trees (tasks/model/changes.py).
"""

from __future__ import annotations

import logging
import re
from abc import ABC, abstractmethod
from pathlib import Path, PurePosixPath

from testprism.tasks.model import syntax
from testprism.tasks.model.benchmark import EnvironmentSpec, Suite
from testprism.tasks.model.hashing import digest
from testprism.tasks.model.outcome import Reason
from testprism.tasks.model.workdir import WorkPaths

from testprism.tasks.model.changes import ChangedFile, analyse_reference
from testprism.tasks.score.coverage.reports import MeasuredFile, parse_gcov_report, parse_jacoco_report, parse_go_profile, parse_lcov_report, parse_mapped_v8_report, parse_pcov_report, parse_report, parse_ruby_report, parse_v8_report
from testprism.tasks.score.coverage.instrument import HELPERS_HASH, coverage_environment, coverage_helpers, runner_head, with_helpers

log = logging.getLogger(__name__)


class Toolchain(ABC):
    """One language's instrumentation for the coverage pass."""

    #: the reason of a row whose reference changes no line this toolchain measures
    no_change: Reason = Reason.NO_CODE_CHANGE

    @property
    @abstractmethod
    def helpers_hash(self) -> str:
        """What the helper files are: part of every measurement's key."""

    #: whether the state's build step must run again in `environment(...)`: coverage that
    #: is compiled in (gcc's --coverage) rather than turned on when the suite runs
    instruments_build: bool = False

    def environment(self, environment: EnvironmentSpec) -> EnvironmentSpec:
        """The environment the coverage run needs (Go and Node bring their own coverage)."""
        return environment

    @abstractmethod
    def analyse(self, tree: Path, reference: bytes) -> tuple[ChangedFile, ...]:
        """What the reference changes, read from the materialised reference `tree`."""

    @abstractmethod
    def helpers(self, suite: Suite, changes: tuple[ChangedFile, ...], tree: Path, work: WorkPaths) -> Path:
        """The helper folder of the suite's runs, mounted read-only (instrument.with_helpers)."""

    @abstractmethod
    def parse(self, report: bytes, tree: Path, changes: tuple[ChangedFile, ...]) -> dict[str, MeasuredFile]:
        """The run's report → measured files; ValueError when there is none to read."""


class PythonToolchain(Toolchain):
    """coverage.py in every Python process (instrument.py)."""

    no_change = Reason.NO_PYTHON_CHANGE
    helpers_hash = HELPERS_HASH

    def environment(self, environment: EnvironmentSpec) -> EnvironmentSpec:
        return coverage_environment(environment)

    def analyse(self, tree: Path, reference: bytes) -> tuple[ChangedFile, ...]:
        return analyse_reference(tree, reference)

    def helpers(self, suite: Suite, changes: tuple[ChangedFile, ...], tree: Path, work: WorkPaths) -> Path:
        return coverage_helpers(suite, changes, work)

    def parse(self, report: bytes, tree: Path, changes: tuple[ChangedFile, ...]) -> dict[str, MeasuredFile]:
        return parse_report(report)


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


_JS_RUNNER = runner_head("with V8 coverage from every Node process") + '''\
(
  export NODE_V8_COVERAGE="$data/v8"
  export TESTPRISM_JUNIT="$data/junit.xml"
  exec bash "$here/entry.sh"
)
status=$?
collecting
node "$here/collect.cjs" "$report" "$data/v8" "$root" "$here/files"
hand_back
exit "$status"
'''

_JS_COLLECTOR = '''\
'use strict';
// testprism coverage pass: the changed files' V8 coverage, one list of functions per process.
const fs = require('fs');
const path = require('path');
const { fileURLToPath } = require('url');

const [report, data, root, list] = process.argv.slice(2);
const wanted = new Set(fs.readFileSync(list, 'utf8').split('\\n').filter(Boolean));
const roots = [path.resolve(root)];
try { roots.push(fs.realpathSync(root)); } catch (e) { /* the plain root is enough */ }
const out = { data_files: 0, files: {}, error: null };
try {
  const names = fs.existsSync(data) ? fs.readdirSync(data).filter((n) => n.endsWith('.json')).sort() : [];
  for (const name of names) {
    out.data_files += 1;
    const parsed = JSON.parse(fs.readFileSync(path.join(data, name), 'utf8'));
    for (const script of parsed.result || []) {
      if (typeof script.url !== 'string' || !script.url.startsWith('file:')) continue;
      const file = fileURLToPath(script.url);
      const rel = roots.map((base) => path.relative(base, file).split(path.sep).join('/')).find((r) => wanted.has(r));
      if (rel !== undefined) (out.files[rel] = out.files[rel] || []).push(script.functions);
    }
  }
} catch (e) {
  out.error = String(e);
}
fs.writeFileSync(report, JSON.stringify(out));
'''

_JS_FILES = re.compile(r"\.(js|mjs|cjs)$")


class JavaScriptToolchain(Toolchain):
    """V8 block coverage through NODE_V8_COVERAGE."""

    helpers_hash = digest("coverage-helpers-javascript", _JS_RUNNER, _JS_COLLECTOR)

    def analyse(self, tree: Path, reference: bytes) -> tuple[ChangedFile, ...]:
        """Changed .js/.mjs/.cjs files (what Node runs untransformed)."""
        return analyse_reference(tree, reference, lambda path: _JS_FILES.search(path) is not None)

    def helpers(self, suite: Suite, changes: tuple[ChangedFile, ...], tree: Path, work: WorkPaths) -> Path:
        return with_helpers({
            "run.sh": _JS_RUNNER,
            "entry.sh": suite.entry + "\n",
            "collect.cjs": _JS_COLLECTOR,
            "files": "".join(f"{c.path}\n" for c in changes),
        }, work)

    def parse(self, report: bytes, tree: Path, changes: tuple[ChangedFile, ...]) -> dict[str, MeasuredFile]:
        sources = {c.path: (tree / c.path).read_bytes().decode("utf-8", errors="replace") for c in changes}
        return parse_v8_report(report, sources)


_TS_RUNNER = runner_head("with V8 coverage from every Node process, mapped through vite-node's source maps") + '''\
case "$here" in *[[:space:]]*) echo "testprism coverage: NODE_OPTIONS cannot hold the path $here (a space)" >&2; exit 2;; esac
mkdir -p "$data/scripts"
(
  export NODE_V8_COVERAGE="$data/v8"
  export NODE_OPTIONS="--require $here/hook.cjs${NODE_OPTIONS:+ $NODE_OPTIONS}"
  export TESTPRISM_COVERAGE_SCRIPTS="$data/scripts" TESTPRISM_COVERAGE_ROOT="$root" TESTPRISM_COVERAGE_FILES="$here/files"
  export TESTPRISM_JUNIT="$data/junit.xml"
  exec bash "$here/entry.sh"
)
status=$?
collecting
node "$here/collect.cjs" "$report" "$data/v8" "$data/scripts" "$root" "$here/files"
hand_back
exit "$status"
'''

_TS_HOOK = '''\
'use strict';
// testprism coverage pass (tasks/score/coverage/toolchains.py): in every Node process of the run, the
// code that vite-node (Vitest) compiles for a changed file, kept to map V8's ranges back through
// its source map; and V8's coverage written on SIGTERM too (Vitest's pool ends its forks so).
const fs = require('fs');
const path = require('path');
const v8 = require('v8');
const vm = require('vm');

const scripts = process.env.TESTPRISM_COVERAGE_SCRIPTS;
if (scripts) {
  const roots = [path.resolve(process.env.TESTPRISM_COVERAGE_ROOT)];
  try { roots.push(fs.realpathSync(roots[0])); } catch (e) { /* the plain root is enough */ }
  const wanted = new Set(fs.readFileSync(process.env.TESTPRISM_COVERAGE_FILES, 'utf8').split('\\n').filter(Boolean));
  let seq = 0;
  const run = vm.runInThisContext;
  vm.runInThisContext = function runInThisContext(code, options) {
    const file = options && typeof options === 'object' ? options.filename : options;
    if (typeof code === 'string' && typeof file === 'string') {
      const rel = roots.map((base) => path.relative(base, file).split(path.sep).join('/')).find((r) => wanted.has(r));
      if (rel !== undefined) {
        seq += 1;
        fs.writeFileSync(path.join(scripts, `${process.pid}-${seq}.json`), JSON.stringify({
          file, rel, code, lineOffset: Number(options.lineOffset) || 0, columnOffset: Number(options.columnOffset) || 0,
        }));
      }
    }
    return run.apply(this, arguments);
  };
  const flush = () => {
    v8.takeCoverage();
    if (process.listenerCount('SIGTERM') === 1) {
      process.removeListener('SIGTERM', flush);
      process.kill(process.pid, 'SIGTERM');
    }
  };
  process.on('SIGTERM', flush);
}
'''

_TS_COLLECTOR = '''\
'use strict';
// testprism coverage pass: the changed files' lines that ran, mapped from V8's ranges over the code
// vite-node compiled back to the .ts lines through that code's own source map (node:module's SourceMap).
const fs = require('fs');
const path = require('path');
const { SourceMap } = require('module');
const { fileURLToPath } = require('url');

const [report, data, scriptsDir, root, list] = process.argv.slice(2);
const wanted = new Set(fs.readFileSync(list, 'utf8').split('\\n').filter(Boolean));
const roots = [path.resolve(root)];
try { roots.push(fs.realpathSync(root)); } catch (e) { /* the plain root is enough */ }
const relOf = (file) => roots.map((base) => path.relative(base, file).split(path.sep).join('/')).find((r) => wanted.has(r));
const MAP = /\\/\\/# sourceMappingURL=data:application\\/json[^,]*;base64,([A-Za-z0-9+/=]+)\\s*$/;

// The lines of `rel` that a script's characters map to: every non-blank one a statement, a ran
// one (the innermost range holding it has a count) executed. Only a mapping segment on the
// character's own generated line counts (the wrapper, the tail and comments map to none).
function lines(captured, functions) {
  const { code, file } = captured;
  const found = code.split('\\n').map((line) => line.match(MAP)).filter(Boolean).pop();
  if (!found) throw new Error(`${captured.rel}: its compiled code has no inline source map`);
  const map = new SourceMap(JSON.parse(Buffer.from(found[1], 'base64').toString('utf8')));
  const counts = new Array(code.length).fill(0);
  const ranges = functions.flatMap((f) => f.ranges).sort((a, b) => a.startOffset - b.startOffset || b.endOffset - a.endOffset);
  for (const r of ranges) counts.fill(r.count, Math.max(0, r.startOffset), Math.min(code.length, r.endOffset));
  const statements = new Set();
  const executed = new Set();
  let line = 0;
  let column = 0;
  for (let i = 0; i < code.length; i += 1, column += 1) {
    const char = code[i];
    if (char === '\\n') { line += 1; column = -1; continue; }
    if (/\\s/.test(char)) continue;
    const at = line + captured.lineOffset;
    const entry = map.findEntry(at, line === 0 ? column + captured.columnOffset : column);
    if (!entry || entry.generatedLine !== at || entry.originalLine === undefined) continue;
    const source = String(entry.originalSource || '');
    const original = source.startsWith('file:') ? fileURLToPath(source) : path.resolve(path.dirname(file), source);
    if (relOf(original) !== captured.rel) continue;
    statements.add(entry.originalLine + 1);
    if (counts[i]) executed.add(entry.originalLine + 1);
  }
  return { statements: [...statements].sort((a, b) => a - b), executed: [...executed].sort((a, b) => a - b) };
}

const out = { data_files: 0, files: {}, error: null };
try {
  const captured = {};
  for (const name of fs.existsSync(scriptsDir) ? fs.readdirSync(scriptsDir).sort() : []) {
    const script = JSON.parse(fs.readFileSync(path.join(scriptsDir, name), 'utf8'));
    (captured[`${name.split('-')[0]} ${script.rel}`] = captured[`${name.split('-')[0]} ${script.rel}`] || []).push(script);
  }
  const names = fs.existsSync(data) ? fs.readdirSync(data).filter((n) => n.endsWith('.json')).sort() : [];
  for (const name of names) {
    out.data_files += 1;
    const pid = name.split('-')[1];
    for (const script of JSON.parse(fs.readFileSync(path.join(data, name), 'utf8')).result || []) {
      if (typeof script.url !== 'string' || !script.url.startsWith('file:')) continue;
      const rel = relOf(fileURLToPath(script.url));
      if (rel === undefined) continue;
      const extent = Math.max(...script.functions.flatMap((f) => f.ranges.map((r) => r.endOffset)));
      const same = (captured[`${pid} ${rel}`] || []).find((c) => c.code.length === extent);
      if (!same) throw new Error(`${rel}: V8 ran code of it that no vm.runInThisContext of vite-node compiled (another loader?): its lines cannot be mapped`);
      (out.files[rel] = out.files[rel] || []).push(lines(same, script.functions));
    }
  }
} catch (e) {
  out.error = String(e && e.stack || e).slice(0, 2000);
}
fs.writeFileSync(report, JSON.stringify(out));
'''

_TS_FILES = re.compile(r"(?<!\.d)\.(ts|mts|cts)$")


class TypeScriptToolchain(Toolchain):
    """V8 block coverage (NODE_V8_COVERAGE) of the code Vitest runs, mapped back to the .ts
    lines. Vitest's vite-node compiles each module (esbuild) and runs it through
    `vm.runInThisContext`, whose scripts Node's own source-map cache never records; so a
    preloaded hook (`NODE_OPTIONS=--require`) keeps the compiled code of each changed file,
    inline source map included, and the collector maps every non-blank character's count
    through that map with Node's own `module.SourceMap` (a character counts only through a
    mapping on its own generated line: the wrapper and comments map to none). The hook also
    writes V8's coverage on SIGTERM, which is how Vitest's pool ends its forks. A changed file
    that V8 ran in code the hook did not see (another loader: tsx, ts-node, Node's type
    stripping) cannot be mapped: `coverage_failed`."""

    helpers_hash = digest("coverage-helpers-typescript", _TS_RUNNER, _TS_HOOK, _TS_COLLECTOR)

    def analyse(self, tree: Path, reference: bytes) -> tuple[ChangedFile, ...]:
        """Changed .ts/.mts/.cts files (not declaration files: no code runs from them)."""
        return analyse_reference(tree, reference, lambda path: _TS_FILES.search(path) is not None)

    def helpers(self, suite: Suite, changes: tuple[ChangedFile, ...], tree: Path, work: WorkPaths) -> Path:
        return with_helpers({
            "run.sh": _TS_RUNNER,
            "entry.sh": suite.entry + "\n",
            "hook.cjs": _TS_HOOK,
            "collect.cjs": _TS_COLLECTOR,
            "files": "".join(f"{c.path}\n" for c in changes),
        }, work)

    def parse(self, report: bytes, tree: Path, changes: tuple[ChangedFile, ...]) -> dict[str, MeasuredFile]:
        if not report:
            raise ValueError("no TypeScript coverage report: the suite's run left none")
        return parse_mapped_v8_report(report)


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


JACOCO_VERSION = "0.8.15"
"""JaCoCo's agent (`org.jacoco.agent:runtime`) and command line (`org.jacoco.cli:nodeps`):
resolved into the environment's Maven repository by examples/environments/java/maven-seed."""

_JACOCO_ERROR = "testprism jacoco: "

# Where the environment's Maven repository is: the local backend's (bin/mvn's ../m2:
# tasks/sandbox/environment.py), Maven's global settings' localRepository (the docker image's
# /opt/m2), the user's.
_JAVA_RUNNER = runner_head("with JaCoCo's agent in every JVM") + """\
version=__VERSION__
fail() { printf '__ERROR__%s\\n' "$1" > "$report"; }
case "$data" in *[[:space:],=:]*) echo "testprism coverage: JaCoCo's options cannot hold the path $data" >&2; exit 2;; esac
jacoco=""
mvn_bin="$(command -v mvn 2>/dev/null)"
for repository in "${mvn_bin:+$(dirname "$mvn_bin")/../m2}" \\
    "$(sed -n 's:.*<localRepository>\\(.*\\)</localRepository>.*:\\1:p' /usr/share/maven/conf/settings.xml 2>/dev/null | head -n 1)" \\
    "$HOME/.m2/repository"; do
  if [ -n "$repository" ] && [ -f "$repository/org/jacoco/org.jacoco.cli/$version/org.jacoco.cli-$version-nodeps.jar" ]; then
    jacoco="$repository/org/jacoco"; break
  fi
done
if [ -z "$jacoco" ]; then collecting; fail "JaCoCo $version is in no Maven repository of the environment"; hand_back; exit 2; fi
(
  export JAVA_TOOL_OPTIONS="${JAVA_TOOL_OPTIONS:+$JAVA_TOOL_OPTIONS }-javaagent:$jacoco/org.jacoco.agent/$version/org.jacoco.agent-$version-runtime.jar=destfile=$data/jacoco.exec,append=true,includes=$(cat "$here/includes")"
  export TESTPRISM_JUNIT="$data/junit.xml"
  exec bash "$here/entry.sh"
)
status=$?
collecting
classes=()
while IFS= read -r pattern; do classes+=(-o -path "$pattern"); done < "$here/classes"
found=()
while IFS= read -r -d '' file; do found+=(--classfiles "$file"); done < <(find "$root" -type f \\( -false "${classes[@]}" \\) -print0)
if [ ! -f "$data/jacoco.exec" ]; then fail "no JVM wrote JaCoCo data"
elif [ "${#found[@]}" -eq 0 ]; then fail "no compiled class of the changed files under the program"
elif ! java -jar "$jacoco/org.jacoco.cli/$version/org.jacoco.cli-$version-nodeps.jar" report "$data/jacoco.exec" \\
    "${found[@]}" --xml "$report" > "$data/jacoco.log" 2>&1; then
  fail "JaCoCo's report failed: $(tail -c 400 "$data/jacoco.log" | tr '\\n' ' ')"
fi
hand_back
exit "$status"
""".replace("__VERSION__", JACOCO_VERSION).replace("__ERROR__", _JACOCO_ERROR)

_JAVA_PACKAGE = re.compile(rb"^\s*package\s+([\w.]+)\s*;", re.MULTILINE)


def java_class(tree: Path, path: str) -> str:
    """`src/main/java/a/b/C.java` → `a/b/C`: its package (declared in the file) and name."""
    found = _JAVA_PACKAGE.search((tree / path).read_bytes())
    name = PurePosixPath(path).stem
    return f"{found.group(1).decode().replace('.', '/')}/{name}" if found else name


class JavaToolchain(Toolchain):
    """JaCoCo's agent in every JVM of the run (`JAVA_TOOL_OPTIONS`: Maven's, Surefire's
    forks, any other), limited to the changed files' classes (and their nested ones); its
    command line turns the data into its XML report against the classes the build step
    compiled. The agent instruments classes as they load, so the state's built tree is the
    replay's. JaCoCo's jars come from the environment's Maven repository (the bundled Java
    environment's seed resolves them); an environment without them is `coverage_failed`."""

    helpers_hash = digest("coverage-helpers-java", _JAVA_RUNNER)

    def analyse(self, tree: Path, reference: bytes) -> tuple[ChangedFile, ...]:
        """Changed .java files."""
        return analyse_reference(tree, reference, lambda path: syntax.language_of(path) is syntax.JAVA)

    def helpers(self, suite: Suite, changes: tuple[ChangedFile, ...], tree: Path, work: WorkPaths) -> Path:
        classes = sorted({java_class(tree, c.path) for c in changes})
        return with_helpers({
            "run.sh": _JAVA_RUNNER,
            "entry.sh": suite.entry + "\n",
            "includes": ":".join(f"{name.replace('/', '.')}*" for name in classes) + "\n",
            "classes": "".join(f"*/{name}.class\n*/{name}$*.class\n" for name in classes),
        }, work)

    def parse(self, report: bytes, tree: Path, changes: tuple[ChangedFile, ...]) -> dict[str, MeasuredFile]:
        """Each changed file is the report's source file of its package (`a/b/C.java`)."""
        if report.startswith(_JACOCO_ERROR.encode()):
            raise ValueError(report.decode("utf-8", errors="replace").strip()[:500])
        if not report:
            raise ValueError("no JaCoCo report: the suite's run left none")
        sources = parse_jacoco_report(report)
        return {c.path: sources[name] for c in changes
                if (name := f"{PurePosixPath(java_class(tree, c.path)).parent}/{PurePosixPath(c.path).name}".lstrip("./"))
                in sources}


LLVM_VERSION = "14"
"""The LLVM of the runs' rustc (Debian bookworm's 1.63), whose profile format Debian's
llvm-14 tools read and whose compiler-rt profile runtime (libclang-rt-14-dev) the build links."""

PROFILE_RUNTIME = "/usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.profile-x86_64.a"
"""compiler-rt's profile runtime (Debian bookworm's libclang-rt-14-dev), linked into every
instrumented binary in place of the `profiler_builtins` crate Debian's rustc is built without."""

_LLVM_COV_ERROR = "testprism llvm-cov: "

# The binaries llvm-cov reads are the executables cargo left in the target folder's deps/ (every
# test binary, the suite's included); the profile of a binary that did not run is empty.
_RUST_RUNNER = runner_head("with an LLVM profile from every process built with -C instrument-coverage") + """\
llvm=__LLVM__
fail() { printf '__ERROR__%s\\n' "$1" > "$report"; }
mkdir -p "$data/profraw"
(
  export LLVM_PROFILE_FILE="$data/profraw/%p-%m.profraw"
  export TESTPRISM_JUNIT="$data/junit.xml"
  exec bash "$here/entry.sh"
)
status=$?
collecting
target="${CARGO_TARGET_DIR:-$root/target}"
rustc_llvm="$(rustc -vV 2>/dev/null | sed -n 's/^LLVM version: \\([0-9]*\\).*/\\1/p')"
first=""
more=()
while IFS= read -r -d '' file; do
  if [ -z "$first" ]; then first="$file"; else more+=(-object "$file"); fi
done < <(find "$target" -path '*/deps/*' -type f -perm -u+x ! -name '*.so' ! -name '*.d' -print0 2>/dev/null | sort -z)
profiles=("$data"/profraw/*.profraw)
real="$(cd "$root" && pwd -P)"
if [ "$rustc_llvm" != "$llvm" ]; then fail "rustc's LLVM is ${rustc_llvm:-unknown}, not $llvm: llvm-profdata-$llvm cannot read its profiles"
elif [ ! -f "${profiles[0]}" ]; then fail "no process wrote an LLVM profile: nothing built with -C instrument-coverage ran to its exit"
elif [ -z "$first" ]; then fail "no test binary under $target"
elif ! llvm-profdata-$llvm merge -sparse "${profiles[@]}" -o "$data/merged.profdata" > "$data/llvm.log" 2>&1; then
  fail "llvm-profdata failed: $(tail -c 400 "$data/llvm.log" | tr '\\n' ' ')"
elif ! llvm-cov-$llvm export --format=lcov --instr-profile="$data/merged.profdata" "$first" "${more[@]}" \\
    > "$data/lcov.info" 2> "$data/llvm.log"; then
  fail "llvm-cov failed: $(tail -c 400 "$data/llvm.log" | tr '\\n' ' ')"
else
  {
    printf '# testprism llvm-cov\\n'
    awk -v root="$root" -v real="$real" 'NR == FNR { if ($0 != "") { want[root "/" $0] = $0; want[real "/" $0] = $0 }; next }
      /^SF:/ { name = substr($0, 4); keep = (name in want); if (keep) print "SF:" want[name]; next }
      keep' "$here/files" "$data/lcov.info"
  } > "$report"
fi
hand_back
exit "$status"
""".replace("__LLVM__", LLVM_VERSION).replace("__ERROR__", _LLVM_COV_ERROR)


class RustToolchain(Toolchain):
    """LLVM's source-based coverage (`-C instrument-coverage`), compiled in: the state is built
    again with it in `RUSTFLAGS`. Debian's rustc 1.63 lacks the `profiler_builtins` crate
    that flag links, so the build says `-Z no-profiler-runtime` (the environment's
    `RUSTC_BOOTSTRAP=1` allows it) and links compiler-rt's profile runtime of the same LLVM
    (Debian's libclang-rt-14-dev) itself; every instrumented process writes its profile at
    exit under `LLVM_PROFILE_FILE`, and Debian's llvm-14 tools merge them and export the
    changed files' line counts (lcov) against the test binaries of the target folder."""

    instruments_build = True
    helpers_hash = digest("coverage-helpers-rust", _RUST_RUNNER, PROFILE_RUNTIME)

    def environment(self, environment: EnvironmentSpec) -> EnvironmentSpec:
        variables = dict(environment.variables)
        # link-args come after the libraries: the runtime's atexit (libc_nonshared) needs -lc again
        flags = f"-C instrument-coverage -Z no-profiler-runtime -C link-arg={PROFILE_RUNTIME} -C link-arg=-lc"
        variables["RUSTFLAGS"] = f"{variables['RUSTFLAGS']} {flags}" if variables.get("RUSTFLAGS") else flags
        variables["RUSTC_BOOTSTRAP"] = "1"
        tools = tuple(t for t in (f"llvm-profdata-{LLVM_VERSION}", f"llvm-cov-{LLVM_VERSION}")
                      if t not in environment.toolchains)
        return environment.model_copy(update={"variables": tuple(sorted(variables.items())),
                                              "toolchains": environment.toolchains + tools})

    def analyse(self, tree: Path, reference: bytes) -> tuple[ChangedFile, ...]:
        """Changed .rs files."""
        return analyse_reference(tree, reference, lambda path: path.endswith(".rs"))

    def helpers(self, suite: Suite, changes: tuple[ChangedFile, ...], tree: Path, work: WorkPaths) -> Path:
        return with_helpers({
            "run.sh": _RUST_RUNNER,
            "entry.sh": suite.entry + "\n",
            "files": "".join(f"{c.path}\n" for c in changes),
        }, work)

    def parse(self, report: bytes, tree: Path, changes: tuple[ChangedFile, ...]) -> dict[str, MeasuredFile]:
        if report.startswith(_LLVM_COV_ERROR.encode()):
            raise ValueError(report.decode("utf-8", errors="replace").strip()[:500])
        if not report:
            raise ValueError("no llvm-cov report: the suite's run left none")
        return parse_lcov_report(report)


_RUBY_RUNNER = runner_head("with Ruby's Coverage (lines) in every Ruby process") + """\
case "$here" in *[[:space:]]*) echo "testprism coverage: RUBYOPT cannot hold the path $here (a space)" >&2; exit 2;; esac
mkdir -p "$data/ruby"
(
  export RUBYOPT="-r$here/cover.rb${RUBYOPT:+ $RUBYOPT}"
  export TESTPRISM_COVERAGE_DATA="$data/ruby" TESTPRISM_COVERAGE_ROOT="$root" TESTPRISM_COVERAGE_FILES="$here/files"
  export TESTPRISM_JUNIT="$data/junit.xml"
  exec bash "$here/entry.sh"
)
status=$?
collecting
ruby --disable=gems "$here/collect.rb" "$report" "$data/ruby"
hand_back
exit "$status"
"""

# Loaded by RUBYOPT's -r before any of the suite's code: Coverage counts only what is loaded
# after it starts. at_exit handlers run last-registered first, so this one (the first) runs
# after RSpec's and minitest's own. A fork keeps the handler and writes its own file.
_RUBY_COVER = """\
# testprism coverage pass (tasks/score/coverage/toolchains.py): Ruby's Coverage in this process.
require "coverage"
Coverage.start(lines: true) unless Coverage.running?
at_exit do
  data = ENV["TESTPRISM_COVERAGE_DATA"]
  if data
    require "json"
    out = {}
    begin
      root = ENV.fetch("TESTPRISM_COVERAGE_ROOT")
      wanted = File.readlines(ENV.fetch("TESTPRISM_COVERAGE_FILES"), chomp: true).reject(&:empty?)
      roots = [File.expand_path(root)]
      roots << File.realpath(root) rescue nil
      Coverage.peek_result.each do |name, entry|
        rel = roots.map { |base| name.start_with?(base + "/") ? name[(base.size + 1)..] : nil }
                   .find { |r| r && wanted.include?(r) }
        (out[rel] ||= []) << (entry.is_a?(Hash) ? entry[:lines] : entry) if rel
      end
    rescue StandardError => e
      out = { "error" => "#{e.class}: #{e.message}" }
    end
    File.write(File.join(data, "#{Process.pid}.json"), JSON.generate(out))
  end
end
"""

_RUBY_COLLECTOR = """\
# testprism coverage pass (tasks/score/coverage/toolchains.py): every Ruby process's counts in one report.
require "json"
report, data = ARGV
out = { "data_files" => 0, "files" => {}, "error" => nil }
begin
  Dir.glob(File.join(data, "*.json")).sort.each do |name|
    out["data_files"] += 1
    parsed = JSON.parse(File.read(name))
    raise parsed["error"].to_s if parsed.key?("error")
    parsed.each { |rel, runs| (out["files"][rel] ||= []).concat(runs) }
  end
rescue StandardError => e
  out["error"] = "#{e.class}: #{e.message}"
end
File.write(report, JSON.generate(out))
"""


class RubyToolchain(Toolchain):
    """Ruby's own `Coverage` module (lines mode) in every Ruby process of the run, started by
    `RUBYOPT=-r<helper>` before the suite's code loads; each process writes the changed
    files' counts at exit, and the run gathers them into one report. A process that ends
    without running its at_exit handlers (`exit!`, a signal) writes none."""

    helpers_hash = digest("coverage-helpers-ruby", _RUBY_RUNNER, _RUBY_COVER, _RUBY_COLLECTOR)

    def analyse(self, tree: Path, reference: bytes) -> tuple[ChangedFile, ...]:
        """Changed .rb files."""
        return analyse_reference(tree, reference, lambda path: path.endswith(".rb"))

    def helpers(self, suite: Suite, changes: tuple[ChangedFile, ...], tree: Path, work: WorkPaths) -> Path:
        return with_helpers({
            "run.sh": _RUBY_RUNNER,
            "entry.sh": suite.entry + "\n",
            "cover.rb": _RUBY_COVER,
            "collect.rb": _RUBY_COLLECTOR,
            "files": "".join(f"{c.path}\n" for c in changes),
        }, work)

    def parse(self, report: bytes, tree: Path, changes: tuple[ChangedFile, ...]) -> dict[str, MeasuredFile]:
        if not report:
            raise ValueError("no Ruby coverage report: the suite's run left none")
        return parse_ruby_report(report)


_PHP_RUNNER = runner_head("with PCOV in every PHP process") + """\
case "$here" in *[[:space:]:]*) echo "testprism coverage: PHP_INI_SCAN_DIR cannot hold the path $here" >&2; exit 2;; esac
mkdir -p "$data/php"
(
  export PHP_INI_SCAN_DIR="${PHP_INI_SCAN_DIR:-}:$here/php"
  export TESTPRISM_COVERAGE_DATA="$data/php" TESTPRISM_COVERAGE_ROOT="$root" TESTPRISM_COVERAGE_FILES="$here/files"
  export TESTPRISM_COVERAGE_PREPEND="$here/prepend.php"
  export TESTPRISM_JUNIT="$data/junit.xml"
  exec bash "$here/entry.sh"
)
status=$?
collecting
php -n "$here/collect.php" "$report" "$data/php"
hand_back
exit "$status"
"""

# PHP_INI_SCAN_DIR's empty first entry keeps the scan of PHP's own folder (where php-pcov's
# ini loads the extension); this one adds PCOV's settings and the prepended file, ${...}
# being read from the environment by PHP's ini parser.
_PHP_INI = """\
; testprism coverage pass (tasks/score/coverage/toolchains.py): PCOV over the program, started in every script
pcov.enabled = 1
pcov.directory = "${TESTPRISM_COVERAGE_ROOT}"
auto_prepend_file = "${TESTPRISM_COVERAGE_PREPEND}"
"""

# Runs before each script's own code. PCOV reports the executable lines of the files it
# instrumented: 1 ran, -1 did not. The collection is itself a shutdown function registered
# from one, so it runs after every other (PHPUnit's, destructors' code included).
_PHP_PREPEND = """\
<?php
// testprism coverage pass (tasks/score/coverage/toolchains.py): PCOV in this process, the changed files' lines at exit.
(static function (): void {
    $data = getenv('TESTPRISM_COVERAGE_DATA');
    if ($data === false) {
        return;
    }
    $out = $data . '/' . getmypid() . '.json';
    if (!extension_loaded('pcov')) {
        file_put_contents($out, json_encode(['error' => 'PCOV is not loaded in this PHP (Debian: php-pcov)']));
        return;
    }
    \\pcov\\start();
    register_shutdown_function(static function () use ($out): void {
        register_shutdown_function(static function () use ($out): void {
            \\pcov\\stop();
            $root = (string) getenv('TESTPRISM_COVERAGE_ROOT');
            $wanted = file((string) getenv('TESTPRISM_COVERAGE_FILES'), FILE_IGNORE_NEW_LINES | FILE_SKIP_EMPTY_LINES) ?: [];
            $files = [];
            foreach (array_unique([rtrim($root, '/'), rtrim((string) realpath($root), '/')]) as $base) {
                foreach ($wanted as $rel) {
                    $files[$base . '/' . $rel] = $rel;
                }
            }
            $found = [];
            foreach (\\pcov\\collect(\\pcov\\all) as $name => $lines) {
                if (isset($files[$name])) {
                    $found[$files[$name]][] = (object) $lines;
                }
            }
            file_put_contents($out, json_encode((object) $found));
        });
    });
})();
"""

_PHP_COLLECTOR = """\
<?php
// testprism coverage pass (tasks/score/coverage/toolchains.py): every PHP process's lines in one report.
[, $report, $data] = $argv;
$out = ['data_files' => 0, 'files' => new stdClass(), 'error' => null];
try {
    $names = glob($data . '/*.json') ?: [];
    sort($names);
    foreach ($names as $name) {
        $out['data_files'] += 1;
        $parsed = json_decode((string) file_get_contents($name), true, 64, JSON_THROW_ON_ERROR);
        if (isset($parsed['error'])) {
            throw new RuntimeException((string) $parsed['error']);
        }
        foreach ($parsed as $rel => $runs) {
            $out['files']->$rel = array_merge($out['files']->$rel ?? [], array_map(fn ($lines) => (object) $lines, $runs));
        }
    }
} catch (Throwable $e) {
    $out['error'] = get_class($e) . ': ' . $e->getMessage();
}
file_put_contents($report, json_encode($out));
"""


class PhpToolchain(Toolchain):
    """PCOV (Debian's php-pcov, in the PHP environment and .ci/setup) in every PHP process of
    the run: `PHP_INI_SCAN_DIR` adds an ini file that points PCOV at the program and
    prepends a helper to every script, which starts PCOV and, at shutdown, writes the
    changed files' executable lines and whether each ran. A process that ends without its
    shutdown functions (killed, a fatal error in PCOV's absence) writes none; an
    environment without PCOV is `coverage_failed`."""

    helpers_hash = digest("coverage-helpers-php", _PHP_RUNNER, _PHP_INI, _PHP_PREPEND, _PHP_COLLECTOR)

    def analyse(self, tree: Path, reference: bytes) -> tuple[ChangedFile, ...]:
        """Changed .php files."""
        return analyse_reference(tree, reference, lambda path: path.endswith(".php"))

    def helpers(self, suite: Suite, changes: tuple[ChangedFile, ...], tree: Path, work: WorkPaths) -> Path:
        return with_helpers({
            "run.sh": _PHP_RUNNER,
            "entry.sh": suite.entry + "\n",
            "php/zz-testprism-coverage.ini": _PHP_INI,
            "prepend.php": _PHP_PREPEND,
            "collect.php": _PHP_COLLECTOR,
            "files": "".join(f"{c.path}\n" for c in changes),
        }, work)

    def parse(self, report: bytes, tree: Path, changes: tuple[ChangedFile, ...]) -> dict[str, MeasuredFile]:
        if not report:
            raise ValueError("no PCOV report: the suite's run left none")
        return parse_pcov_report(report)


TOOLCHAINS: dict[str, Toolchain] = {
    "python": PythonToolchain(),
    "go": GoToolchain(),
    "javascript": JavaScriptToolchain(),
    "typescript": TypeScriptToolchain(),
    "java": JavaToolchain(),
    "c": GccToolchain(),
    "cpp": GccToolchain(),
    "ruby": RubyToolchain(),
    "rust": RustToolchain(),
    "php": PhpToolchain(),
}


#: why a language's rows say `not_measured` (logged with them; docs/languages.md)
NOT_MEASURED_WHY: dict[str, str] = {
    "tsx": "the TypeScript toolchain's source-map route is untested on .tsx (JSX): no bundled tsx instance",
}


def toolchain_for(language: str) -> Toolchain | None:
    """The toolchain measuring `language`, None when coverage is not measured for it."""
    return TOOLCHAINS.get(language)
