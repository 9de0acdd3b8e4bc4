"""Tiny Go and JavaScript benchmarks built in a test's temporary folder: one instance each
(`Clamp` returns the lower bound for values above the upper one), its reference, a valid
and an invalid candidate, official checks and a suite; the Go one has a build step whose
output its suite reads, so a run that did not start from the built tree fails."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

from tests.benchfixture import diff, write

ENVIRONMENTS = Path(__file__).resolve().parents[1] / "examples" / "environments"

GO_BUGGY = """\
package calc

// Clamp limits x to [lo, hi].
func Clamp(x, lo, hi int) int {
	if x < lo {
		return lo
	}
	if x > hi {
		return lo
	}
	return x
}
"""
GO_REFERENCE = GO_BUGGY.replace("\tif x > hi {\n\t\treturn lo", "\tif x > hi {\n\t\treturn hi")
GO_VALID = """\
package calc

// Clamp limits x to [lo, hi].
func Clamp(x, lo, hi int) int {
	return max(lo, min(x, hi))
}

func min(a, b int) int {
	if a < b {
		return a
	}
	return b
}

func max(a, b int) int {
	if a > b {
		return a
	}
	return b
}
"""
GO_INVALID = GO_BUGGY.replace("\tif x > hi {\n\t\treturn lo", "\tif x >= hi {\n\t\treturn hi - 1")
GO_CHECKS = """\
package calc

import "testing"

func TestClampHigh(t *testing.T) {
	if got := Clamp(9, 0, 5); got != 5 {
		t.Fatalf("Clamp(9, 0, 5) = %d", got)
	}
}

func TestClampInside(t *testing.T) {
	for _, x := range []int{0, 3, 5} {
		if got := Clamp(x, 0, 5); got != x {
			t.Run("keeps", func(t *testing.T) { t.Fatalf("Clamp(%d, 0, 5) = %d", x, got) })
		}
	}
}
"""
GO_SUITE = """\
package tmp_test

import (
	"os"
	"testing"

	"example.com/calc/calc"
)

func TestBuiltTree(t *testing.T) {
	if _, err := os.Stat("../BUILT"); err != nil {
		t.Fatalf("the run did not start from the built tree: %v", err)
	}
}

func TestAboveUpperBound(t *testing.T) {
	if got := calc.Clamp(9, 0, 5); got != 5 {
		t.Fatalf("got %d", got)
	}
}

func TestAtUpperBound(t *testing.T) {
	if got := calc.Clamp(5, 0, 5); got != 5 {
		t.Fatalf("got %d", got)
	}
}
"""
GO_RUN = 'exec gotestsum --junitfile "$TESTPRISM_JUNIT" -- -count=1 ./tmp/\n'

JS_BUGGY = """\
'use strict';

/** Clamp x to [lo, hi]. */
function clamp(x, lo, hi) {
  if (x < lo) return lo;
  if (x > hi) return lo;
  return x;
}

module.exports = { clamp };
"""
JS_REFERENCE = JS_BUGGY.replace("if (x > hi) return lo;", "if (x > hi) return hi;")
JS_VALID = """\
'use strict';

/** Clamp x to [lo, hi]. */
function clamp(x, lo, hi) {
  return Math.min(Math.max(x, lo), hi);
}

module.exports = { clamp };
"""
JS_INVALID = JS_BUGGY.replace("if (x > hi) return lo;", "if (x >= hi) return hi - 1;")
JS_CHECKS = """\
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { clamp } = require('../src/clamp.js');

test('clamps above the upper bound', () => { assert.equal(clamp(9, 0, 5), 5); });
test.describe('inside', () => {
  test('keeps values inside', () => { for (const x of [0, 3, 5]) assert.equal(clamp(x, 0, 5), x); });
});
"""
JS_SUITE = """\
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { clamp } = require('../src/clamp.js');

test('above the upper bound', () => { assert.equal(clamp(9, 0, 5), 5); });
test('at the upper bound', () => { assert.equal(clamp(5, 0, 5), 5); });
"""
JS_RUN = ('exec node --test --test-reporter=junit --test-reporter-destination="$TESTPRISM_JUNIT" '
          '--test-reporter=spec --test-reporter-destination=stdout tmp/clamp.test.js\n')
JS_CHECKS_COMMAND = ("node --test --test-reporter=junit --test-reporter-destination=$TESTPRISM_JUNIT "
                     "test/official.test.js")


def _instance(root: Path, iid: str, language: str, env: str, program: dict[str, str], source: str,
              states: dict[str, str], checks: tuple[str, str], command: str, tests: tuple[list[str], list[str]],
              build: str | None) -> None:
    folder = root / "instances" / iid
    for rel, text in program.items():
        write(folder / "program" / rel, text)
    write(folder / "instruction.md", "Clamp returns the lower bound for values above the upper bound.\n")
    write(folder / "reference.diff", diff(source, states["buggy"], states["reference"]))
    write(folder / "checks.diff", diff(checks[0], "", checks[1]))
    for cid in ("valid", "invalid"):
        write(folder / "candidates" / f"{cid}.diff", diff(source, states["buggy"], states[cid]))
    tool = {"go": '["go", "gotestsum"]', "javascript": '["node"]'}[language]
    # the bundled instances' own environments (examples/), so their images are shared: the
    # same Dockerfile, toolchains and variables make the same environment key
    variables = ('\nvariables = { GOPROXY = "off", CGO_ENABLED = "0", GOCACHE = "/workspace/program/.cache/go-build" }'
                 if language == "go" else "")
    build_table = f'\n[build]\ncommand = "{build}"\ntimeout_s = 300\n' if build else ""
    write(folder / "instance.toml", textwrap.dedent(f"""\
        id = "{iid}"
        source = "{language}-tiny"
        language = "{language}"

        [environment]
        dockerfile = "../../environments/{env}/Dockerfile"
        toolchains = {tool}{variables}
        {build_table}
        [checks]
        command = "{command}"
        fail_to_pass = {tests[0]!r}
        pass_to_pass = {tests[1]!r}

        [[candidates]]
        id = "valid"
        label = "valid"
        patch = "candidates/valid.diff"

        [[candidates]]
        id = "invalid"
        label = "invalid"
        patch = "candidates/invalid.diff"
        """).replace("'", '"'))
    shutil.copytree(ENVIRONMENTS / env, root / "environments" / env, dirs_exist_ok=True)


def make_language_benchmark(root: Path) -> Path:
    """`go__clamp` (with a build step) and `js__clamp`, each with a `strong` suite."""
    _instance(root, "go__clamp", "go", "go",
              {"go.mod": "module example.com/calc\n\ngo 1.19\n", "calc/calc.go": GO_BUGGY}, "calc/calc.go",
              {"buggy": GO_BUGGY, "reference": GO_REFERENCE, "valid": GO_VALID, "invalid": GO_INVALID},
              ("calc/official_test.go", GO_CHECKS), "gotestsum --junitfile $TESTPRISM_JUNIT -- -count=1 ./calc/",
              (["TestClampHigh"], ["TestClampInside"]), build="go vet ./... && go build testing testing/internal/testdeps ./... && touch BUILT")
    write(root / "suites" / "strong" / "go__clamp" / "clamp_test.go", GO_SUITE)
    write(root / "suites" / "strong" / "go__clamp" / "run_tests.sh", GO_RUN)
    _instance(root, "js__clamp", "javascript", "node",
              {"package.json": '{"name": "clamp", "version": "1.0.0", "type": "commonjs"}\n', "src/clamp.js": JS_BUGGY},
              "src/clamp.js", {"buggy": JS_BUGGY, "reference": JS_REFERENCE, "valid": JS_VALID, "invalid": JS_INVALID},
              ("test/official.test.js", JS_CHECKS), JS_CHECKS_COMMAND,
              (["clamps above the upper bound"], ["keeps values inside"]), build=None)
    write(root / "suites" / "strong" / "js__clamp" / "clamp.test.js", JS_SUITE)
    write(root / "suites" / "strong" / "js__clamp" / "run_tests.sh", JS_RUN)
    return root
