"""ΔC beyond Python (tasks/score/coverage/toolchains/): Go cover profiles and V8 coverage
made on this host by gotestsum and `node --test`, gcov's, JaCoCo's, llvm-cov's, PCOV's, Ruby's
and Vitest's (V8 through source maps) on the bundled instances, read back against lines known
to have run or not; the helper scripts of each toolchain run as the sandbox would run them; a
language without a toolchain is not measured."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from testprism.tasks.model.bundled import BUNDLED
from testprism.tasks.model.benchmark import Suite, load_benchmark
from testprism.tasks.model.changes import ChangedFile
from testprism.tasks.model.state import apply_patch
from testprism.tasks.model.workdir import WorkPaths
from testprism.tasks.score.coverage.probe import measure_coverage
from testprism.tasks.score.coverage.reports import parse_gcov_report, parse_go_profile, parse_jacoco_report, parse_lcov_report, parse_mapped_v8_report, parse_pcov_report, parse_ruby_report, parse_v8_report, score_changes, v8_executed
from testprism.tasks.score.coverage.toolchains import Toolchain, toolchain_for
from testprism.tasks.score.coverage.toolchains.gcc import GccToolchain
from testprism.tasks.score.coverage.toolchains.go import GoToolchain, go_modules
from testprism.tasks.score.coverage.toolchains.java import JavaToolchain
from testprism.tasks.score.coverage.toolchains.javascript import JavaScriptToolchain
from testprism.tasks.score.coverage.toolchains.php import PhpToolchain
from testprism.tasks.score.coverage.toolchains.ruby import RubyToolchain
from testprism.tasks.score.coverage.toolchains.rust import RustToolchain
from testprism.tasks.score.coverage.toolchains.typescript import TypeScriptToolchain
from tests.benchfixture import CHECKS, diff, make_benchmark
from tests.coveragefixture import run_helpers as run_suite_helpers
from tests.langfixture import GO_RUN, JS_RUN, make_language_benchmark

needs_go = needs_node = needs_gcc = pytest.mark.requires("toolchains")

CALC_GO = textwrap.dedent('''\
    package calc

    // Abs returns |x|.
    func Abs(x int) int {
    	if x < 0 {
    		return -x
    	}
    	return x
    }

    func Never() int {
    	return 42
    }
    ''')
CALC_GO_BEFORE = CALC_GO.replace("\tif x < 0 {\n\t\treturn -x\n\t}\n", "")
TEXT_GO = textwrap.dedent('''\
    package text

    import "example.com/mini/calc"

    func Shout(s string, n int) string {
    	if calc.Abs(n) > 2 {
    		return s + "!!!"
    	}
    	return s + "!"
    }
    ''')
GO_TESTS = {
    "calc/calc_test.go": 'package calc\n\nimport "testing"\n\nfunc TestAbs(t *testing.T) {\n'
                         '\tif Abs(3) != 3 {\n\t\tt.Fatal("abs")\n\t}\n}\n',
    "text/text_test.go": 'package text\n\nimport "testing"\n\nfunc TestShout(t *testing.T) {\n'
                         '\tif Shout("a", 1) != "a!" {\n\t\tt.Fatal("shout")\n\t}\n}\n',
}


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def go_module(root: Path) -> Path:
    """Two tested packages (text calls calc) and one without tests."""
    return write_tree(root, {"go.mod": "module example.com/mini\n\ngo 1.19\n", "calc/calc.go": CALC_GO,
                             "text/text.go": TEXT_GO, "unused/unused.go": "package unused\n\nfunc Lonely() int {\n"
                             "\treturn 1\n}\n", **GO_TESTS})


def host_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The host's environment (go's caches under HOME) plus `extra`."""
    return {**os.environ, "GOFLAGS": "", "GOPROXY": "off", **extra}


@needs_go
def test_go_profile_from_gotestsum_over_two_packages(tmp_path):
    module = go_module(tmp_path / "mini")
    profile = tmp_path / "out" / "cover.out"
    profile.parent.mkdir()
    flags = f"-coverprofile={profile} -coverpkg=example.com/mini/..."
    done = subprocess.run(["gotestsum", "--", "./..."], cwd=module, env=host_env(tmp_path, GOFLAGS=flags),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    measured = parse_go_profile(profile.read_bytes(), go_modules(module, ["calc/calc.go"]))
    assert set(measured) == {"calc/calc.go", "text/text.go", "unused/unused.go"}
    calc = measured["calc/calc.go"]
    # Abs(3) (calc's test) and Abs(1) (through text's test): the negative branch and Never never ran.
    assert calc.executed == {4, 5, 8}
    assert calc.statements == {4, 5, 6, 7, 8, 11, 12, 13}  # not the package clause or the comment
    text = measured["text/text.go"]
    assert text.executed == {5, 6, 9} and 7 in text.statements
    assert measured["unused/unused.go"].executed == frozenset()


def test_go_profile_names_files_by_repository_path_and_refuses_what_is_not_one():
    profile = (b"mode: count\nexample.com/sub/pkg/a.go:3.10,5.1 2 7\nexample.com/sub/pkg/a.go:6.2,6.9 0 1\n"
               b"other.org/x/b.go:1.1,2.3 1 0\n")
    measured = parse_go_profile(profile, {"example.com/sub": "services/sub", "example.com": ""})
    # A block ending at column 1 does not reach that line; a block of no statement is none.
    assert measured["services/sub/pkg/a.go"].statements == {3, 4} == measured["services/sub/pkg/a.go"].executed
    assert measured["other.org/x/b.go"].executed == frozenset()
    with pytest.raises(ValueError):
        parse_go_profile(b"<testsuite/>", {})
    with pytest.raises(ValueError, match="line 2"):
        parse_go_profile(b"mode: set\nrm -rf /\n", {})


def test_go_modules_finds_the_nearest_go_mod(tmp_path):
    write_tree(tmp_path, {"go.mod": "module example.com/top // root\n", "tools/go.mod": 'module "example.com/tools"\n'})
    assert go_modules(tmp_path, ["a/b.go", "tools/x/y.go"]) == {"example.com/top": "", "example.com/tools": "tools"}


CALC_JS = textwrap.dedent('''\
    // calc
    function abs(x) {
      if (x < 0) {
        return -x;
      }
      return x;
    }

    /* never
       called */
    function never() {
      return 42;
    }

    module.exports = { abs, never };
    ''')
ESM_JS = textwrap.dedent('''\
    export function twice(x) {
      return x * 2;
    }
    export const unused = () => {
      return 0;
    };
    ''')
JS_TEST = textwrap.dedent('''\
    const test = require('node:test');
    const assert = require('node:assert');
    const { abs } = require('../src/calc.js');
    test('abs', async () => {
      assert.strictEqual(abs(3), 3);
      const { twice } = await import('../src/esm.mjs');
      assert.strictEqual(twice(2), 4);
    });
    ''')


def js_module(root: Path) -> Path:
    return write_tree(root, {"package.json": '{"name": "mini", "version": "1.0.0", "type": "module"}\n',
                             "src/calc.js": CALC_JS.replace("module.exports = { abs, never };",
                                                            "export { abs, never };"),
                             "src/calc.cjs": CALC_JS, "src/esm.mjs": ESM_JS,
                             "test/calc.test.cjs": JS_TEST.replace("calc.js", "calc.cjs")})


@needs_node
def test_v8_coverage_from_node_test_to_lines(tmp_path):
    module = js_module(tmp_path / "mini")
    data = tmp_path / "v8"
    done = subprocess.run(["node", "--test", "test/"], cwd=module, env=host_env(tmp_path, NODE_V8_COVERAGE=str(data)),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    scripts: dict[str, list] = {}
    for name in data.glob("*.json"):
        for script in json.loads(name.read_text())["result"]:
            if script["url"].startswith(f"file://{module}/src/"):
                scripts.setdefault(script["url"].rsplit("/", 1)[1], []).append(script["functions"])
    assert set(scripts) == {"calc.cjs", "esm.mjs"}  # calc.js (ESM) was never loaded
    calc = v8_executed(CALC_JS, scripts["calc.cjs"])
    # abs(3): not the negative branch (4, and the brace closing it), never() not at all.
    assert {2, 3, 6, 7, 15} <= calc.executed
    assert calc.executed.isdisjoint({4, 5, 11, 12, 13})
    assert {4, 5, 11, 12, 13} <= calc.statements and 8 not in calc.statements
    esm = v8_executed(ESM_JS, scripts["esm.mjs"])
    assert {1, 2, 3, 4} <= esm.executed and 5 not in esm.executed
    # The same offsets on another text (a transformed script) are refused, not mapped.
    with pytest.raises(ValueError, match="transformed"):
        v8_executed(CALC_JS + "\n// more\n", scripts["calc.cjs"])
    with pytest.raises(ValueError, match="no Node process"):
        parse_v8_report(b'{"data_files": 0, "files": {}, "error": null}', {})


def run_helpers(program: Path, toolchain: Toolchain, suite: Suite, changes: tuple[ChangedFile, ...], tmp_path: Path,
                **env: str):
    """`toolchain`'s helpers for `suite` run as a backend runs them (tests/coveragefixture.py)."""
    helpers = toolchain.helpers(suite, changes, program, WorkPaths(tmp_path / "work"))
    return run_suite_helpers(program, suite, helpers, tmp_path / "out", host_env(tmp_path, **env))


def suite_of(tmp_path: Path, entry: str):
    bench = make_benchmark(tmp_path / "bench", {"s": {"run_tests.sh": entry}})
    return load_benchmark(bench).suites[("s", "mini__median-even")]


@needs_go
def test_go_helpers_measure_the_suites_own_gotestsum(tmp_path):
    program = go_module(tmp_path / "program")
    reference = diff("calc/calc.go", CALC_GO_BEFORE, CALC_GO) + diff("calc/calc_test.go", "", GO_TESTS["calc/calc_test.go"])
    toolchain = GoToolchain()
    changes = toolchain.analyse(program, reference.encode())
    # not the test file; a closing brace alone is no code line (tree-sitter: tasks/model/syntax/)
    assert [(c.path, sorted(c.lines)) for c in changes] == [("calc/calc.go", [5, 6])]
    suite = suite_of(tmp_path, 'gotestsum --junitfile "$TESTPRISM_JUNIT" -- ./...\n')
    done, report = run_helpers(program, toolchain, suite, changes, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "out" / "coverage" / "junit.xml").is_file()  # the suite's own report, moved aside
    assert all(line.startswith(("mode:", "example.com/mini/calc/calc.go:")) for line in report.read_text().splitlines())
    counts = score_changes(changes, toolchain.parse(report.read_bytes(), program, changes))
    # `if x < 0 {` ran, its body and closing brace did not.
    assert (counts.covered_lines, counts.changed_lines) == (1, 2)
    assert counts.missed_lines == ["calc/calc.go:6"]
    assert (counts.entered_functions, counts.changed_functions, counts.ec) == (1, 1, 1.0)  # the function was entered


@needs_go
def test_go_without_a_profile_is_not_a_zero(tmp_path):
    program = go_module(tmp_path / "program")
    toolchain = GoToolchain()
    changes = toolchain.analyse(program, diff("calc/calc.go", CALC_GO_BEFORE, CALC_GO).encode())
    done, report = run_helpers(program, toolchain, suite_of(tmp_path, "true\n"), changes, tmp_path)
    assert done.returncode == 0 and not report.exists()
    with pytest.raises(ValueError, match="no Go cover profile"):
        toolchain.parse(b"", program, changes)


@needs_node
def test_javascript_helpers_measure_every_node_process(tmp_path):
    program = js_module(tmp_path / "program")
    reference = (diff("src/calc.cjs", CALC_JS.replace("  if (x < 0) {\n    return -x;\n  }\n", ""), CALC_JS)
                 + diff("src/esm.mjs", "", ESM_JS) + diff("src/calc.js", "", CALC_JS))
    toolchain = JavaScriptToolchain()
    changes = toolchain.analyse(program, reference.encode())
    # code lines only: comments, blank lines and lone closing braces are none (tree-sitter)
    assert {c.path: sorted(c.lines) for c in changes} == {"src/calc.cjs": [3, 4], "src/esm.mjs": [1, 2, 4, 5],
                                                         "src/calc.js": [2, 3, 4, 6, 11, 12, 15]}
    # node --test runs each test file in a child process: coverage comes from there.
    done, report = run_helpers(program, toolchain, suite_of(tmp_path, "node --test test/\n"), changes, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    counts = score_changes(changes, toolchain.parse(report.read_bytes(), program, changes))
    never_loaded = next(c for c in changes if c.path == "src/calc.js")
    assert sorted(counts.missed_lines) == sorted(
        ["src/calc.cjs:4", "src/esm.mjs:5"] + [f"src/calc.js:{n}" for n in never_loaded.lines])
    assert counts.changed_lines == 13 and counts.covered_lines == 13 - 9
    # entered: abs (calc.cjs) and twice; not the never-loaded file's nor `unused`, whose
    # declaration line runs when the module loads but whose body never does
    assert sorted(counts.missed_functions) == ["src/calc.js:abs", "src/calc.js:never", "src/esm.mjs:unused"]
    assert (counts.entered_functions, counts.changed_functions) == (2, 5)


def test_each_language_has_its_toolchain_or_none():
    assert toolchain_for("python") is not None and toolchain_for("go") is not None
    assert toolchain_for("javascript") is not None
    assert isinstance(toolchain_for("c"), GccToolchain) and isinstance(toolchain_for("cpp"), GccToolchain)
    assert isinstance(toolchain_for("java"), JavaToolchain)
    assert isinstance(toolchain_for("ruby"), RubyToolchain)
    assert isinstance(toolchain_for("rust"), RustToolchain)
    assert isinstance(toolchain_for("php"), PhpToolchain)
    assert isinstance(toolchain_for("typescript"), TypeScriptToolchain)
    assert toolchain_for("tsx") is None


@pytest.mark.requires("sandbox")
@pytest.mark.parametrize("language", ["tsx"])
def test_an_unmeasured_language_gives_null_with_a_reason(tmp_path, work_root, language):
    bench = make_benchmark(tmp_path / "bench", {"strong": {"test_median.py": CHECKS}})
    toml = bench / "instances" / "mini__median-even" / "instance.toml"
    toml.write_text(toml.read_text().replace('source = "mini"\n', f'source = "mini"\nlanguage = "{language}"\n'))
    assert load_benchmark(bench).instances["mini__median-even"].spec.language == language
    frame = measure_coverage(bench, tmp_path / "store", work_root, "local")
    assert frame.height == 1
    for row in frame.iter_rows(named=True):
        assert row["delta_c"] is None and row["ec"] is None and row["changed_lines"] is None
        assert row["reason"] == "not_measured" and row["exit_code"] is None


GO_WEAK = '''\
package tmp_test

import (
	"testing"

	"example.com/calc/calc"
)

func TestInside(t *testing.T) {
	if got := calc.Clamp(3, 0, 5); got != 3 {
		t.Fatalf("got %d", got)
	}
}
'''
JS_WEAK = '''\
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { clamp } = require('../src/clamp.js');

test('below', () => { assert.equal(clamp(-1, 0, 5), 0); });  // returns before line 6's test
'''


@pytest.mark.requires("sandbox", "toolchains")
def test_measure_coverage_of_go_and_javascript_instances_under_local(tmp_path, work_root):
    """The whole pass on the tiny Go instance (with its build step) and the JavaScript one:
    the strong suites reach the reference's changed line, the weak ones never do (a line
    whose `if` ran but not its `return` counts as run in JavaScript: hence `clamp(-1, ...)`)."""
    bench = make_language_benchmark(tmp_path / "bench")
    write_tree(bench / "suites" / "weak", {"go__clamp/clamp_test.go": GO_WEAK, "go__clamp/run_tests.sh": GO_RUN,
                                           "js__clamp/clamp.test.js": JS_WEAK, "js__clamp/run_tests.sh": JS_RUN})
    frame = measure_coverage(bench, tmp_path / "store", work_root, "local")
    rows = {(r["configuration"], r["instance_id"]): r for r in frame.iter_rows(named=True)}
    assert set(rows) == {(c, i) for c in ("strong", "weak") for i in ("go__clamp", "js__clamp")}
    assert all(r["reason"] is None and r["changed_lines"] == 1 and r["changed_functions"] == 1 for r in rows.values()), rows
    assert rows[("strong", "go__clamp")]["delta_c"] == 1.0 and rows[("strong", "js__clamp")]["delta_c"] == 1.0
    assert rows[("weak", "go__clamp")]["missed_lines"] == ["calc/calc.go:9"]
    assert rows[("weak", "js__clamp")]["missed_lines"] == ["src/clamp.js:6"]
    assert rows[("weak", "go__clamp")]["delta_c"] == 0.0 and rows[("weak", "js__clamp")]["delta_c"] == 0.0


RING = "bytekit__ring-full-reads-empty"
GCOV_DATA = Path(__file__).parent / "data" / "gcov"
#: what the C/C++ toolchain's environment adds (GccToolchain.environment)
COVERAGE_FLAGS = {"CFLAGS": "--coverage", "CXXFLAGS": "--coverage", "LDFLAGS": "--coverage"}


def ring_reference(tmp_path: Path) -> tuple[Path, bytes]:
    """The bundled C instance's reference tree, built by its build step with --coverage on
    this host, as the coverage pass builds it in the sandbox."""
    instance = BUNDLED / "instances" / RING
    program = tmp_path / "program"
    shutil.copytree(instance / "program", program)
    reference = (instance / "reference.diff").read_bytes()
    assert apply_patch(program, reference).applied
    built = subprocess.run(["bash", "-c", load_benchmark(BUNDLED).instances[RING].spec.build.command], cwd=program,
                           env=host_env(tmp_path, **COVERAGE_FLAGS), capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    return program, reference


@needs_gcc
@pytest.mark.parametrize("configuration, missed_lines, missed_functions", [
    ("strong", [], []),
    ("weak", ["src/ringbuf.c:94"], ["src/ringbuf.c:rb_clear"]),  # its one test never clears
])
def test_gcc_helpers_measure_the_c_instances_suites(tmp_path, configuration, missed_lines, missed_functions):
    """The bundled C instance's suites, run as the sandbox runs them, with gcov's counts
    read back: the header's new struct field is no code line; the six changed lines of
    ringbuf.c are, and only the strong suite reaches rb_clear's."""
    program, reference = ring_reference(tmp_path)
    toolchain = GccToolchain()
    changes = toolchain.analyse(program, reference)
    assert {c.path for c in changes} == {"include/ringbuf.h", "src/ringbuf.c"}
    suite = load_benchmark(BUNDLED, (configuration,)).suites[(configuration, RING)]
    done, report = run_helpers(program, toolchain, suite, changes, tmp_path, **COVERAGE_FLAGS)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "out" / "coverage" / "junit.xml").is_file()  # the suite's own report, moved aside
    counts = score_changes(changes, toolchain.parse(report.read_bytes(), program, changes))
    assert (counts.changed_lines, counts.covered_lines) == (6, 6 - len(missed_lines))
    assert counts.missed_lines == missed_lines and counts.missed_functions == missed_functions
    assert counts.changed_functions == 6


@needs_gcc
def test_gcc_without_data_is_not_a_zero(tmp_path):
    """A run in which no instrumented process ran to its exit wrote no .gcda: nothing was
    measured, which is not 0 (the same for a build that ignored CFLAGS)."""
    program, reference = ring_reference(tmp_path)
    toolchain = GccToolchain()
    changes = toolchain.analyse(program, reference)
    done, report = run_helpers(program, toolchain, suite_of(tmp_path, "true\n"), changes, tmp_path, **COVERAGE_FLAGS)
    assert done.returncode == 0 and report.read_text().startswith("# testprism gcov\n")
    with pytest.raises(ValueError, match="no process wrote gcov data"):
        toolchain.parse(report.read_bytes(), program, changes)


def test_gcov_report_made_on_this_host_to_lines():
    """tests/data/gcov/ringbuf-weak.report: the collector's report of the weak suite on the
    C instance's reference (test_gcc_helpers_measure_the_c_instances_suites[weak], gcc 12.2,
    its report copied). gcov names sources by absolute path: those under the run's root are
    the repository's, system headers are dropped; a line's count says whether it ran."""
    measured = parse_gcov_report((GCOV_DATA / "ringbuf-weak.report").read_bytes())
    ring = measured["src/ringbuf.c"]
    assert {91, 92, 93, 94} & ring.statements and not {92, 93, 94} & ring.executed  # rb_clear: never called
    assert {74, 75, 76} <= ring.executed  # rb_read
    assert not any(path.startswith("/") for path in measured)


@pytest.mark.parametrize("report, error", [
    (b"mode: set\n", "not a testprism gcov report"),
    (b"# testprism gcov\n# root relative\n# gcda 1\n", "without its root"),
    (b"# testprism gcov\n# root /w\n# gcda 2\n{\"files\": 3}\n", "line 4 is not gcov's JSON"),
    (b"# testprism gcov\n# root /w\n# gcda 2\n# error build/a.c.gcno\n", "gcov could not read build/a.c.gcno"),
])
def test_gcov_report_refuses_what_is_not_one(report, error):
    with pytest.raises(ValueError, match=error):
        parse_gcov_report(report)


LRU = "cachekit__lru-get-no-refresh"
LRU_NEVER_GETS = '''\
// Looks at the cache, never reads through it: get() never runs.
#include <gtest/gtest.h>

#include "lru/lru_cache.hpp"

TEST(LruSuite, PutAndContains)
{
    lru::LruCache cache(2);
    cache.put("session", "s1");
    EXPECT_TRUE(cache.contains("session"));
    EXPECT_EQ(cache.size(), 1u);
}
'''


def native_part(target: Path) -> Path:
    """The bundled benchmark with only its C and C++ instances and their strong and weak
    suites; the C++ weak suite replaced by one that never calls the fixed `get`."""
    def keep(folder: str, names: list[str]) -> list[str]:
        here = Path(folder)
        if here == BUNDLED / "suites":
            return [n for n in names if n not in ("strong", "weak")]
        if here == BUNDLED / "instances" or here.parent == BUNDLED / "suites":
            return [n for n in names if n not in (RING, LRU)]
        if here == BUNDLED / "environments":
            return [n for n in names if n != "c-cpp"]
        return []
    shutil.copytree(BUNDLED, target, ignore=keep)
    (target / "suites" / "weak" / LRU / "lru_suite_test.cpp").write_text(LRU_NEVER_GETS)
    return target


@pytest.mark.slow
@pytest.mark.polyglot
@pytest.mark.requires("sandbox", "toolchains")
@pytest.mark.timeout(1200)
def test_measure_coverage_of_the_c_and_cpp_instances_under_local(tmp_path, work_root):
    """The whole pass under bubblewrap on the bundled C and C++ instances: each reference
    built again with --coverage, the suites' counts read back. The strong suites run every
    changed line; the C weak suite never clears (rb_clear's line); a C++ suite that never
    calls get() covers none of its one changed line and enters no changed function."""
    bench = native_part(tmp_path / "bench")
    frame = measure_coverage(bench, tmp_path / "store", work_root, "local")
    rows = {(r["configuration"], r["instance_id"]): r for r in frame.iter_rows(named=True)}
    assert set(rows) == {(c, i) for c in ("strong", "weak") for i in (RING, LRU)}
    assert all(r["reason"] is None for r in rows.values()), rows
    assert rows[("strong", RING)]["delta_c"] == 1.0 and rows[("strong", RING)]["changed_lines"] == 6
    assert rows[("strong", LRU)]["delta_c"] == 1.0 and rows[("strong", LRU)]["ec"] == 1.0
    assert rows[("weak", RING)]["missed_lines"] == ["src/ringbuf.c:94"]
    assert rows[("weak", RING)]["missed_functions"] == ["src/ringbuf.c:rb_clear"]
    assert rows[("weak", LRU)]["changed_lines"] == 1 and rows[("weak", LRU)]["delta_c"] == 0.0
    assert rows[("weak", LRU)]["missed_functions"] == ["src/lru_cache.cpp:lru.LruCache.get"]


SIZEKIT = "sizekit__format-shows-1024-kib"
BYTESIZE = "src/main/java/example/bytesize/ByteSize.java"
JAVA_NEVER_FORMATS = '''\
package example.bytesize;

import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class ByteSizeSuiteTest {
    @Test
    void nothingOfByteSize() {
        assertTrue(Math.abs(-1) == 1);
    }
}
'''


def test_jacoco_report_made_on_this_host_to_lines():
    """tests/data/jacoco/bytesize-strong.xml: JaCoCo 0.8.15's XML report of the strong suite
    on the Java instance's reference, made by JavaToolchain's helpers on this host (the
    reference tree built by `mvn -B -o -q test-compile`, its report copied). A line is a
    statement when it holds bytecode (a compile-time constant's does not); it ran when any
    of its instructions did."""
    measured = parse_jacoco_report((Path(__file__).parent / "data" / "jacoco" / "bytesize-strong.xml").read_bytes())
    byte_size = measured["example/bytesize/ByteSize.java"]
    assert 10 not in byte_size.statements  # static final double ROLL_OVER = 1023.95: inlined
    assert {22, 29, 30, 33} <= byte_size.statements
    assert byte_size.executed == byte_size.statements  # the strong suite misses no line of the class


@pytest.mark.parametrize("report, error", [
    (b"<testsuites/>", "not a JaCoCo XML report"),
    (b"<report", "not a JaCoCo XML report"),
    (b'<report><package name="a"><sourcefile name="B.java"><line nr="x" ci="1"/></sourcefile></package></report>',
     "not one"),
])
def test_jacoco_report_refuses_what_is_not_one(report, error):
    with pytest.raises(ValueError, match=error):
        parse_jacoco_report(report)


@pytest.mark.slow
@pytest.mark.polyglot
@pytest.mark.requires("sandbox", "toolchains")
@pytest.mark.timeout(1800)
def test_measure_coverage_of_the_java_instance_under_local(tmp_path, work_root):
    """The whole pass under bubblewrap on the bundled Java instance: JaCoCo's jars resolved
    into the environment by its Maven seed, its agent in Surefire's JVM. The strong suite
    runs the changed loop condition (the new constant is no bytecode line); a suite that
    never calls ByteSize.format covers none of it."""
    def keep(folder: str, names: list[str]) -> list[str]:
        here = Path(folder)
        if here == BUNDLED / "suites":
            return [n for n in names if n not in ("strong", "weak")]
        if here == BUNDLED / "instances" or here.parent == BUNDLED / "suites":
            return [n for n in names if n != SIZEKIT]
        if here == BUNDLED / "environments":
            return [n for n in names if n != "java"]
        return []
    bench = tmp_path / "bench"
    shutil.copytree(BUNDLED, bench, ignore=keep)
    (bench / "suites" / "weak" / SIZEKIT / "ByteSizeSuiteTest.java").write_text(JAVA_NEVER_FORMATS)
    frame = measure_coverage(bench, tmp_path / "store", work_root, "local")
    rows = {r["configuration"]: r for r in frame.iter_rows(named=True)}
    assert all(r["reason"] is None for r in rows.values()), rows
    assert (rows["strong"]["changed_lines"], rows["strong"]["covered_lines"], rows["strong"]["ec"]) == (1, 1, 1.0)
    assert rows["weak"]["missed_lines"] == [f"{BYTESIZE}:29"] and rows["weak"]["delta_c"] == 0.0
    assert rows["weak"]["missed_functions"] == [f"{BYTESIZE}:ByteSize.format"]


LISTKIT = "listkit__two-items-serial-comma"
SENTENCE = "lib/listkit/sentence.rb"
RUBY_DATA = Path(__file__).parent / "data" / "ruby"
RUBY_NEVER_TWO = '''\
# frozen_string_literal: true

# Joins three items only: the changed two-item branch never runs.
RSpec.describe ListKit::Sentence do
  it "joins three items" do
    expect(ListKit::Sentence.join(%w[a b c])).to eq("a, b, and c")
  end
end
'''


def bundled_reference(tmp_path: Path, instance_id: str) -> tuple[Path, bytes]:
    """A bundled instance's program with its reference applied, in `tmp_path/program`."""
    instance = BUNDLED / "instances" / instance_id
    program = tmp_path / "program"
    shutil.copytree(instance / "program", program)
    reference = (instance / "reference.diff").read_bytes()
    assert apply_patch(program, reference).applied
    return program, reference


def bundled_part(target: Path, instance_id: str, environment: str) -> Path:
    """The bundled benchmark with only `instance_id` (its environment `environment`) and its
    strong and weak suites."""
    def keep(folder: str, names: list[str]) -> list[str]:
        here = Path(folder)
        if here == BUNDLED / "suites":
            return [n for n in names if n not in ("strong", "weak")]
        if here == BUNDLED / "instances" or here.parent == BUNDLED / "suites":
            return [n for n in names if n != instance_id]
        if here == BUNDLED / "environments":
            return [n for n in names if n != environment]
        return []
    shutil.copytree(BUNDLED, target, ignore=keep)
    return target


@pytest.mark.requires("toolchains")
@pytest.mark.parametrize("configuration, missed_lines", [("strong", []), ("weak", []), ("never-two", [f"{SENTENCE}:24"])])
def test_ruby_helpers_measure_the_ruby_instances_suites(tmp_path, configuration, missed_lines):
    """The bundled Ruby instance's suites run as the sandbox runs them, Ruby's Coverage
    started by RUBYOPT before RSpec loads the program: the one changed line (`when 2`) runs
    under the strong and weak suites, not under one that never joins two items."""
    program, reference = bundled_reference(tmp_path, LISTKIT)
    toolchain = RubyToolchain()
    changes = toolchain.analyse(program, reference)
    assert [(c.path, sorted(c.lines)) for c in changes] == [(SENTENCE, [24])]
    if configuration == "never-two":
        bench = make_benchmark(tmp_path / "bench", {"s": {"sentence_suite_spec.rb": RUBY_NEVER_TWO, "run_tests.sh":
                               (BUNDLED / "suites" / "weak" / LISTKIT / "run_tests.sh").read_text()}})
        suite = load_benchmark(bench).suites[("s", "mini__median-even")]
    else:
        suite = load_benchmark(BUNDLED, (configuration,)).suites[(configuration, LISTKIT)]
    done, report = run_helpers(program, toolchain, suite, changes, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "out" / "coverage" / "junit.xml").is_file()  # the suite's own report, moved aside
    counts = score_changes(changes, toolchain.parse(report.read_bytes(), program, changes))
    assert (counts.changed_lines, counts.missed_lines) == (1, missed_lines)
    assert (counts.changed_functions, counts.entered_functions) == (1, 1)  # join itself always runs


@pytest.mark.requires("toolchains")
def test_ruby_without_a_process_is_not_a_zero(tmp_path):
    program, reference = bundled_reference(tmp_path, LISTKIT)
    toolchain = RubyToolchain()
    changes = toolchain.analyse(program, reference)
    done, report = run_helpers(program, toolchain, suite_of(tmp_path, "true\n"), changes, tmp_path)
    assert done.returncode == 0
    with pytest.raises(ValueError, match="no Ruby process wrote coverage"):
        toolchain.parse(report.read_bytes(), program, changes)


def test_ruby_report_made_on_this_host_to_lines():
    """tests/data/ruby/listkit-weak.json: the Ruby collector's report of the weak suite on the
    Ruby instance's reference (test_ruby_helpers_measure_the_ruby_instances_suites[weak],
    Ruby 3.1.2, its report copied). Ruby's lines array: null for no statement (a comment,
    `else`, `end`), else the count."""
    measured = parse_ruby_report((RUBY_DATA / "listkit-weak.json").read_bytes())
    sentence = measured[SENTENCE]
    assert {15, 16, 21, 22, 23, 24, 26} <= sentence.statements
    assert not {1, 4, 12, 25, 27, 28} & sentence.statements  # comments, `else`, `end`
    assert {15, 24, 26} <= sentence.executed and not {22, 23} & sentence.executed  # no 0 or 1 items


@pytest.mark.parametrize("report, error", [
    (b"<testsuites/>", "not a testprism Ruby coverage report"),
    (b'{"data_files": 0, "files": {}, "error": null}', "no Ruby process"),
    (b'{"data_files": 1, "files": {}, "error": "JSON::ParserError: x"}', "could not be read"),
    (b'{"data_files": 1, "files": {"a.rb": [[null, "1"]]}, "error": null}', "line 2"),
    (b'{"data_files": 1, "files": {"a.rb": {"lines": []}}, "error": null}', "not lists"),
])
def test_ruby_report_refuses_what_is_not_one(report, error):
    with pytest.raises(ValueError, match=error):
        parse_ruby_report(report)


@pytest.mark.slow
@pytest.mark.polyglot
@pytest.mark.requires("sandbox", "toolchains")
@pytest.mark.timeout(1200)
def test_measure_coverage_of_the_ruby_instance_under_local(tmp_path, work_root):
    """The whole pass under bubblewrap on the bundled Ruby instance: the strong suite runs the
    changed `when 2` line; a suite that never joins two items does not, though it enters join."""
    bench = bundled_part(tmp_path / "bench", LISTKIT, "ruby")
    (bench / "suites" / "weak" / LISTKIT / "sentence_suite_spec.rb").write_text(RUBY_NEVER_TWO)
    frame = measure_coverage(bench, tmp_path / "store", work_root, "local")
    rows = {r["configuration"]: r for r in frame.iter_rows(named=True)}
    assert all(r["reason"] is None for r in rows.values()), rows
    assert (rows["strong"]["changed_lines"], rows["strong"]["delta_c"], rows["strong"]["ec"]) == (1, 1.0, 1.0)
    assert rows["weak"]["missed_lines"] == [f"{SENTENCE}:24"] and rows["weak"]["delta_c"] == 0.0
    assert rows["weak"]["ec"] == 1.0


FMTKIT = "fmtkit__truncate-multibyte"
CELL = "src/cell.rs"
#: a run's PATH on the host: Debian's cargo and rustc (LLVM 14), as the sandbox's uid has them
SYSTEM_PATH = "/usr/bin:/bin"


def rust_reference(tmp_path: Path, toolchain) -> tuple[Path, bytes, dict[str, str]]:
    """The bundled Rust instance's reference tree built by its build step in the coverage
    environment (the instance's variables plus the toolchain's), as the pass builds it."""
    program, reference = bundled_reference(tmp_path, FMTKIT)
    spec = toolchain.environment(load_benchmark(BUNDLED).instances[FMTKIT].spec.environment)
    variables = {**dict(spec.variables), "CARGO_TARGET_DIR": str(program / "target"), "PATH": SYSTEM_PATH,
                 "CARGO_HOME": str(tmp_path / "cargo-home")}
    built = subprocess.run(["bash", "-c", load_benchmark(BUNDLED).instances[FMTKIT].spec.build.command], cwd=program,
                           env=host_env(tmp_path, **variables), capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout + built.stderr
    return program, reference, variables


RUST_DATA = Path(__file__).parent / "data" / "rust"


@pytest.mark.requires("toolchains")
@pytest.mark.parametrize("configuration, missed_lines, missed_functions", [
    ("strong", [], []),
    ("weak", [f"{CELL}:25", f"{CELL}:26", f"{CELL}:28"], [f"{CELL}:pad_right"]),  # it only truncates
])
def test_rust_helpers_measure_the_rust_instances_suites(tmp_path, configuration, missed_lines, missed_functions):
    """The bundled Rust instance's suites, run as the sandbox runs them, on the reference built
    with -C instrument-coverage by Debian's rustc 1.63 and compiler-rt's profile runtime;
    the profiles merged and exported by Debian's llvm-14. Seven changed lines: the strong
    suite runs them all, the weak one never pads (pad_right's three)."""
    toolchain = RustToolchain()
    program, reference, variables = rust_reference(tmp_path, toolchain)
    changes = toolchain.analyse(program, reference)
    assert [c.path for c in changes] == [CELL]
    suite = load_benchmark(BUNDLED, (configuration,)).suites[(configuration, FMTKIT)]
    done, report = run_helpers(program, toolchain, suite, changes, tmp_path, **variables)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "out" / "coverage" / "junit.xml").is_file()  # the suite's own report, moved aside
    counts = score_changes(changes, toolchain.parse(report.read_bytes(), program, changes))
    assert (counts.changed_lines, counts.covered_lines) == (7, 7 - len(missed_lines))
    assert counts.missed_lines == missed_lines and counts.missed_functions == missed_functions
    assert counts.changed_functions == 2


@pytest.mark.requires("toolchains")
def test_rust_without_a_profile_is_not_a_zero(tmp_path):
    """A run in which no instrumented process ran to its exit wrote no profile: nothing was
    measured, which is not 0."""
    toolchain = RustToolchain()
    program, reference, variables = rust_reference(tmp_path, toolchain)
    changes = toolchain.analyse(program, reference)
    done, report = run_helpers(program, toolchain, suite_of(tmp_path, "true\n"), changes, tmp_path, **variables)
    assert done.returncode == 0
    with pytest.raises(ValueError, match="no process wrote an LLVM profile"):
        toolchain.parse(report.read_bytes(), program, changes)


def test_lcov_report_made_on_this_host_to_lines():
    """tests/data/rust/fmtkit-weak.report: the Rust collector's report of the weak suite on the
    Rust instance's reference (test_rust_helpers_measure_the_rust_instances_suites[weak]:
    Debian's rustc 1.63 with -C instrument-coverage, llvm-profdata-14 and llvm-cov-14 14.0.6,
    its report copied). A `DA:` line is a statement, run when its count is non-zero."""
    measured = parse_lcov_report((RUST_DATA / "fmtkit-weak.report").read_bytes())
    assert set(measured) == {CELL}
    cell = measured[CELL]
    assert {10, 16, 17, 18, 25, 26, 28} <= cell.statements and not {1, 7, 22, 23} & cell.statements  # docs, blanks
    assert {10, 16, 17, 18} <= cell.executed and not {11, 14, 24, 25, 26, 28} & cell.executed


@pytest.mark.parametrize("report, error", [
    (b"mode: set\n", "not a testprism llvm-cov report"),
    (b"# testprism llvm-cov\nDA:1,1\n", "line 2 is not a line count"),
    (b"# testprism llvm-cov\nSF:a.rs\nDA:x,1\n", "line 3 is not a line count"),
])
def test_lcov_report_refuses_what_is_not_one(report, error):
    with pytest.raises(ValueError, match=error):
        parse_lcov_report(report)


@pytest.mark.slow
@pytest.mark.polyglot
@pytest.mark.requires("sandbox", "toolchains")
@pytest.mark.timeout(1800)
def test_measure_coverage_of_the_rust_instance_under_local(tmp_path, work_root):
    """The whole pass under bubblewrap on the bundled Rust instance: the reference built again
    with -C instrument-coverage, the suites' profiles read back by llvm-cov. The strong suite
    runs every changed line; the weak one never pads."""
    bench = bundled_part(tmp_path / "bench", FMTKIT, "rust")
    frame = measure_coverage(bench, tmp_path / "store", work_root, "local")
    rows = {r["configuration"]: r for r in frame.iter_rows(named=True)}
    assert all(r["reason"] is None for r in rows.values()), rows
    assert (rows["strong"]["changed_lines"], rows["strong"]["delta_c"], rows["strong"]["ec"]) == (7, 1.0, 1.0)
    assert rows["weak"]["missed_lines"] == [f"{CELL}:25", f"{CELL}:26", f"{CELL}:28"]
    assert rows["weak"]["missed_functions"] == [f"{CELL}:pad_right"] and rows["weak"]["ec"] == 0.5


SIZEKIT_PHP = "sizekit__format-rounds-to-1024"
BYTES_PHP = "src/Bytes.php"
PHP_DATA = Path(__file__).parent / "data" / "pcov"
PHP_SMALL_ONLY = '''\
<?php

declare(strict_types=1);

namespace Sizekit\\Tests;

use PHPUnit\\Framework\\TestCase;
use Sizekit\\Bytes;

// Formats sizes below 1 KiB only: format returns before the changed loop.
final class FormatSuiteTest extends TestCase
{
    public function testWholeBytes(): void
    {
        $this->assertSame('512 B', Bytes::format(512));
    }
}
'''


@pytest.mark.requires("toolchains")
@pytest.mark.parametrize("configuration, missed_lines", [("strong", []), ("weak", []), ("small-only", [f"{BYTES_PHP}:32"])])
def test_php_helpers_measure_the_php_instances_suites(tmp_path, configuration, missed_lines):
    """The bundled PHP instance's suites run as the sandbox runs them, PCOV started in every
    PHP process by the prepended helper: the changed loop condition (the added comment is no
    code line) runs unless every size formatted is below 1 KiB; format is entered either way."""
    program, reference = bundled_reference(tmp_path, SIZEKIT_PHP)
    toolchain = PhpToolchain()
    changes = toolchain.analyse(program, reference)
    assert [(c.path, sorted(c.lines)) for c in changes] == [(BYTES_PHP, [32])]
    if configuration == "small-only":
        bench = make_benchmark(tmp_path / "bench", {"s": {"FormatSuiteTest.php": PHP_SMALL_ONLY, "run_tests.sh":
                               (BUNDLED / "suites" / "weak" / SIZEKIT_PHP / "run_tests.sh").read_text()}})
        suite = load_benchmark(bench).suites[("s", "mini__median-even")]
    else:
        suite = load_benchmark(BUNDLED, (configuration,)).suites[(configuration, SIZEKIT_PHP)]
    done, report = run_helpers(program, toolchain, suite, changes, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "out" / "coverage" / "junit.xml").is_file()  # the suite's own report, moved aside
    counts = score_changes(changes, toolchain.parse(report.read_bytes(), program, changes))
    assert (counts.changed_lines, counts.missed_lines) == (1, missed_lines)
    assert (counts.changed_functions, counts.entered_functions) == (1, 1)


@pytest.mark.requires("toolchains")
def test_php_without_a_process_is_not_a_zero(tmp_path):
    program, reference = bundled_reference(tmp_path, SIZEKIT_PHP)
    toolchain = PhpToolchain()
    changes = toolchain.analyse(program, reference)
    done, report = run_helpers(program, toolchain, suite_of(tmp_path, "true\n"), changes, tmp_path)
    assert done.returncode == 0
    with pytest.raises(ValueError, match="no PHP process wrote coverage"):
        toolchain.parse(report.read_bytes(), program, changes)


def test_pcov_report_made_on_this_host_to_lines():
    """tests/data/pcov/sizekit-small-only.json: the PHP collector's report of a suite formatting
    512 bytes only on the PHP instance's reference
    (test_php_helpers_measure_the_php_instances_suites[small-only], PHP 8.2.36 with Debian's
    PCOV 1.0.11, its report copied). PCOV lists the executable lines: 1 ran, -1 did not."""
    measured = parse_pcov_report((PHP_DATA / "sizekit-small-only.json").read_bytes())
    bytes_php = measured[BYTES_PHP]
    assert {22, 25, 26, 27, 28, 31, 32, 33} <= bytes_php.statements
    assert not {15, 21, 30, 35} & bytes_php.statements  # doc comment, brace, comment, blank
    assert {22, 25, 26, 27, 28} <= bytes_php.executed and not {23, 31, 32, 33} & bytes_php.executed


@pytest.mark.parametrize("report, error", [
    (b"[]", "not a testprism PCOV report"),
    (b'{"data_files": 0, "files": {}, "error": null}', "no PHP process"),
    (b'{"data_files": 1, "files": {}, "error": "RuntimeException: PCOV is not loaded"}', "PCOV is not loaded"),
    (b'{"data_files": 1, "files": {"a.php": [{"x": 1}]}, "error": null}', "is no line"),
    (b'{"data_files": 1, "files": {"a.php": [[1, -1]]}, "error": null}', "not lists of lines"),
])
def test_pcov_report_refuses_what_is_not_one(report, error):
    with pytest.raises(ValueError, match=error):
        parse_pcov_report(report)


@pytest.mark.slow
@pytest.mark.polyglot
@pytest.mark.requires("sandbox", "toolchains")
@pytest.mark.timeout(1200)
def test_measure_coverage_of_the_php_instance_under_local(tmp_path, work_root):
    """The whole pass under bubblewrap on the bundled PHP instance: the strong suite runs the
    changed loop condition; a suite formatting only sizes below 1 KiB enters format but
    returns before it."""
    bench = bundled_part(tmp_path / "bench", SIZEKIT_PHP, "php")
    (bench / "suites" / "weak" / SIZEKIT_PHP / "FormatSuiteTest.php").write_text(PHP_SMALL_ONLY)
    frame = measure_coverage(bench, tmp_path / "store", work_root, "local")
    rows = {r["configuration"]: r for r in frame.iter_rows(named=True)}
    assert all(r["reason"] is None for r in rows.values()), rows
    assert (rows["strong"]["changed_lines"], rows["strong"]["delta_c"], rows["strong"]["ec"]) == (1, 1.0, 1.0)
    assert rows["weak"]["missed_lines"] == [f"{BYTES_PHP}:32"] and rows["weak"]["delta_c"] == 0.0
    assert rows["weak"]["ec"] == 1.0


TSKIT = "tskit__duration-ms-unit"
DURATION = "src/duration.ts"
TS_DATA = Path(__file__).parent / "data" / "v8-typescript"
TS_NEVER_IMPORTS = '''\
// Never imports tskit: the changed module never loads.
import { expect, it } from 'vitest';

it('adds', () => {
  expect(1 + 1).toBe(2);
});
'''


@pytest.mark.requires("toolchains")
@pytest.mark.parametrize("configuration, covered", [("strong", 2), ("weak", 2), ("never-imports", 0)])
def test_typescript_helpers_measure_the_typescript_instances_suites(tmp_path, configuration, covered):
    """The bundled TypeScript instance's suites under Vitest, run as the sandbox runs them: V8's
    counts of the code vite-node compiled, mapped back to the .ts lines through its source map.
    The two changed code lines (the new UNIT_NAMES and PART using it; the doc comment is none)
    run when the module loads, so every suite importing it runs them, one that never imports
    it none."""
    program, reference = bundled_reference(tmp_path, TSKIT)
    toolchain = TypeScriptToolchain()
    changes = toolchain.analyse(program, reference)
    assert [(c.path, sorted(c.lines)) for c in changes] == [(DURATION, [19, 22])]
    if configuration == "never-imports":
        bench = make_benchmark(tmp_path / "bench", {"s": {"durations.test.ts": TS_NEVER_IMPORTS, "run_tests.sh":
                               (BUNDLED / "suites" / "weak" / TSKIT / "run_tests.sh").read_text()}})
        suite = load_benchmark(bench).suites[("s", "mini__median-even")]
    else:
        suite = load_benchmark(BUNDLED, (configuration,)).suites[(configuration, TSKIT)]
    done, report = run_helpers(program, toolchain, suite, changes, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "out" / "coverage" / "junit.xml").is_file()  # the suite's own report, moved aside
    counts = score_changes(changes, toolchain.parse(report.read_bytes(), program, changes))
    assert (counts.changed_lines, counts.covered_lines) == (2, covered), counts


@pytest.mark.requires("toolchains")
def test_typescript_without_a_process_is_not_a_zero(tmp_path):
    program, reference = bundled_reference(tmp_path, TSKIT)
    toolchain = TypeScriptToolchain()
    changes = toolchain.analyse(program, reference)
    done, report = run_helpers(program, toolchain, suite_of(tmp_path, "true\n"), changes, tmp_path)
    assert done.returncode == 0
    with pytest.raises(ValueError, match="no Node process wrote V8 coverage"):
        toolchain.parse(report.read_bytes(), program, changes)


def test_mapped_v8_report_made_on_this_host_to_lines():
    """tests/data/v8-typescript/tskit-weak.json: the TypeScript collector's report of the weak
    suite (parseDuration('250ms'), parseDuration('1s500ms')) on the TypeScript instance's
    reference (test_typescript_helpers_measure_the_typescript_instances_suites[weak]: Node
    20.20.2, Vitest 3.2.4, its report copied). Mapped through vite-node's source map, lines
    are the .ts file's: the branches it never takes and the function it never calls did not
    run, the type-only and comment lines are no statements."""
    measured = parse_mapped_v8_report((TS_DATA / "tskit-weak.json").read_bytes())
    ts_file = measured[DURATION]  # the lines of duration.ts (not a time)
    assert {19, 22, 29, 30, 39, 45, 47} <= ts_file.executed
    assert not {32, 35, 43, 52, 53, 56} & ts_file.executed  # no minus, never empty, no stray text; no formatDuration
    assert {32, 35, 43, 52} <= ts_file.statements
    assert not {1, 9, 10, 18, 21, 24, 25, 50} & ts_file.statements  # comments and blank lines


@pytest.mark.parametrize("report, error", [
    (b"<testsuites/>", "not a testprism TypeScript coverage report"),
    (b'{"data_files": 0, "files": {}, "error": null}', "no Node process"),
    (b'{"data_files": 1, "files": {}, "error": "Error: src/a.ts: V8 ran code of it that no vm.runInThisContext"}',
     "could not be mapped"),
    (b'{"data_files": 1, "files": {"a.ts": [{"statements": [1], "executed": [2]}]}, "error": null}', "not mapped lines"),
    (b'{"data_files": 1, "files": {"a.ts": [{"statements": ["x"], "executed": []}]}, "error": null}', "not mapped lines"),
])
def test_mapped_v8_report_refuses_what_is_not_one(report, error):
    with pytest.raises(ValueError, match=error):
        parse_mapped_v8_report(report)


@pytest.mark.slow
@pytest.mark.polyglot
@pytest.mark.requires("sandbox", "toolchains")
@pytest.mark.timeout(1200)
def test_measure_coverage_of_the_typescript_instance_under_local(tmp_path, work_root):
    """The whole pass under bubblewrap on the bundled TypeScript instance, Vitest's forks
    included: the strong suite runs both changed lines (module-level: no changed function,
    EC null); a suite that never imports the module runs neither."""
    bench = bundled_part(tmp_path / "bench", TSKIT, "typescript")
    (bench / "suites" / "weak" / TSKIT / "durations.test.ts").write_text(TS_NEVER_IMPORTS)
    frame = measure_coverage(bench, tmp_path / "store", work_root, "local")
    rows = {r["configuration"]: r for r in frame.iter_rows(named=True)}
    assert all(r["reason"] is None for r in rows.values()), rows
    assert (rows["strong"]["changed_lines"], rows["strong"]["delta_c"], rows["strong"]["ec"]) == (2, 1.0, None)
    assert rows["weak"]["missed_lines"] == [f"{DURATION}:19", f"{DURATION}:22"] and rows["weak"]["delta_c"] == 0.0


TS_REQUIRE_HOOK = '''\
// A ts-node-like loader: TypeScript's transpileModule through require.extensions, not vite-node.
const fs = require('fs');
const ts = require('/usr/local/lib/testprism-typescript/node_modules/typescript');
require.extensions['.ts'] = (module, filename) => {
  const options = { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 };
  module._compile(ts.transpileModule(fs.readFileSync(filename, 'utf8'), { compilerOptions: options }).outputText, filename);
};
const { parseDuration } = require('../src/duration.ts');
if (parseDuration('250ms') !== 250) process.exit(1);
'''


@pytest.mark.requires("toolchains")
def test_typescript_run_by_another_loader_is_refused_not_mapped(tmp_path):
    """A changed file V8 ran in code that vite-node did not compile (here TypeScript's own
    transpileModule through require.extensions, as ts-node does) has no source map the helper
    saw: the report says so (coverage_failed) rather than mapping offsets onto wrong lines."""
    program, reference = bundled_reference(tmp_path, TSKIT)
    toolchain = TypeScriptToolchain()
    changes = toolchain.analyse(program, reference)
    bench = make_benchmark(tmp_path / "bench", {"s": {"load.cjs": TS_REQUIRE_HOOK, "run_tests.sh": "node tmp/load.cjs\n"}})
    done, report = run_helpers(program, toolchain, load_benchmark(bench).suites[("s", "mini__median-even")], changes, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr  # it ran, and V8 saw src/duration.ts
    with pytest.raises(ValueError, match="could not be mapped.*src/duration.ts: V8 ran code of it that no vm.runInThisContext"):
        toolchain.parse(report.read_bytes(), program, changes)
