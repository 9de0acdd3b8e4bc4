"""Rust: `-C instrument-coverage`, compiled in (the state built again), with compiler-rt's
profile runtime in place of the `profiler_builtins` Debian's rustc lacks; the profiles merged
and exported (lcov) by Debian's llvm-14 tools in the run (RustToolchain)."""

from __future__ import annotations

from pathlib import Path

from testprism.tasks.model.benchmark import Suite
from testprism.tasks.model.benchmark_format import EnvironmentSpec
from testprism.tasks.model.changes import ChangedFile, analyse_reference
from testprism.tasks.model.hashing import digest
from testprism.tasks.model.workdir import WorkPaths
from testprism.tasks.score.coverage.instrument import runner_head, with_helpers
from testprism.tasks.score.coverage.reports import MeasuredFile, parse_lcov_report
from testprism.tasks.score.coverage.toolchains.base import Toolchain


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
