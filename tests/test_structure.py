"""Code structure per language (tasks/model/syntax/): AST distance of panels, tokens of
near duplicates, changed functions for coverage and test discovery, for Python (whose
numbers must not move) and the tree-sitter languages."""

from __future__ import annotations

import shutil
from itertools import combinations
from pathlib import Path

from collections import Counter

import pytest

from testprism.tasks.collect.candidate import changed_tokens, normalise_patch, set_aside_near_duplicates
from testprism.tasks.collect.panel import TreeNode, ast_distance, patch_tree
from testprism.tasks.curate import signals
from testprism.tasks.model import syntax
from testprism.tasks.model.benchmark import Instance, load_benchmark
from testprism.tasks.model.outcome import Reason
from testprism.tasks.model.pytest_ids import find_test_functions
from testprism.tasks.model.state import apply_patch
from testprism.tasks.model.changes import ChangedFile, analyse_file, changed_lines
from tests.benchfixture import diff
from tests.test_collect import candidate

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

# -- Python: the bundled benchmark's distances, as computed before tree-sitter came in ----------

#: ast_distance of every pair of valid candidates of three bundled instances, computed on
#: the code before this module existed (commit ca9656e): Python's path must not move.
PYTHON_DISTANCES = {
    ("algokit__bisect-past-end", "closed-interval", "galloping"): 0.4797297297297297,
    ("algokit__bisect-past-end", "closed-interval", "recursive-halving"): 0.5645161290322581,
    ("algokit__bisect-past-end", "closed-interval", "stdlib-bisect"): 0.780952380952381,
    ("algokit__bisect-past-end", "galloping", "recursive-halving"): 0.6081081081081081,
    ("algokit__bisect-past-end", "galloping", "stdlib-bisect"): 0.831081081081081,
    ("algokit__bisect-past-end", "recursive-halving", "stdlib-bisect"): 0.7983870967741935,
    ("calkit__merge-touching", "event-sweep", "prefix-max-split"): 1.0,
    ("calkit__merge-touching", "event-sweep", "reduce-fold"): 1.0,
    ("calkit__merge-touching", "event-sweep", "tuple-sweep"): 0.9101123595505618,
    ("calkit__merge-touching", "prefix-max-split", "reduce-fold"): 1.0,
    ("calkit__merge-touching", "prefix-max-split", "tuple-sweep"): 0.9795918367346939,
    ("calkit__merge-touching", "reduce-fold", "tuple-sweep"): 0.8641975308641975,
    ("textkit__wrap-exact-width", "index-slices", "regex-findall"): 0.875,
    ("textkit__wrap-exact-width", "index-slices", "string-accumulator"): 0.6826923076923077,
    ("textkit__wrap-exact-width", "index-slices", "textwrap-stdlib"): 0.875,
    ("textkit__wrap-exact-width", "regex-findall", "string-accumulator"): 0.84,
    ("textkit__wrap-exact-width", "regex-findall", "textwrap-stdlib"): 0.4489795918367347,
    ("textkit__wrap-exact-width", "string-accumulator", "textwrap-stdlib"): 0.8133333333333334,
}


def _valid_trees(instance: Instance, tmp_path: Path) -> dict[str, TreeNode]:
    """The panel tree of each valid candidate, read from the program with it applied."""
    trees = {}
    for cand in instance.candidates:
        if cand.label != "valid":
            continue
        patch = normalise_patch(cand.patch.decode())
        tree = tmp_path / instance.id / cand.id
        shutil.copytree(instance.program, tree)
        assert apply_patch(tree, patch.encode()).applied
        trees[cand.id] = patch_tree(patch, lambda rel, t=tree: (t / rel).read_text() if (t / rel).is_file() else None)
    return trees


@pytest.mark.slow  # ~12 s of pure-Python APTED
def test_python_distances_on_the_bundled_benchmark_are_unchanged(tmp_path):
    bench = load_benchmark(EXAMPLES)
    found = {}
    for instance_id in sorted({key[0] for key in PYTHON_DISTANCES}):
        trees = _valid_trees(bench.instances[instance_id], tmp_path)
        for a, b in combinations(sorted(trees), 2):
            found[(instance_id, a, b)] = ast_distance(trees[a], trees[b])
    assert found == PYTHON_DISTANCES


# -- tree-sitter languages: one small program each -------------------------------------------

#: (path, program, a fix, the same fix written another way, an unrelated rewrite of the
#: function, the fix reformatted with a comment): the fix and its other way share the
#: function's shape, the rewrite does not.
PROGRAMS = {
    "go": ("clamp/clamp.go", """\
package clamp

func Helper() int {
	return 1
}

func Clamp(x, lo, hi int) int {
	if x < lo {
		return lo
	}
	if x > hi {
		return x
	}
	return x
}
""", ("\t\treturn x\n\t}\n\treturn x", "\t\treturn hi\n\t}\n\treturn x"),
        ("\t\treturn x\n\t}\n\treturn x", "\t\treturn hi + 0\n\t}\n\treturn x"),
        ("\tif x < lo {\n\t\treturn lo\n\t}\n\tif x > hi {\n\t\treturn x\n\t}\n\treturn x",
         "\tvals := []int{lo, x, hi}\n\tsort.Ints(vals)\n\tfor i := range vals {\n\t\t_ = i\n\t}\n\treturn vals[1]"),
        ("\t\treturn x\n\t}\n\treturn x", "\t\t// the upper bound\n\t\treturn   hi\n\t}\n\treturn x")),
    "javascript": ("src/clamp.js", """\
function helper() {
  return 1;
}

function clamp(x, lo, hi) {
  if (x < lo) {
    return lo;
  }
  if (x > hi) {
    return x;
  }
  return x;
}
""", ("    return x;\n  }\n  return x;", "    return hi;\n  }\n  return x;"),
        ("    return x;\n  }\n  return x;", "    return hi + 0;\n  }\n  return x;"),
        ("  if (x < lo) {\n    return lo;\n  }\n  if (x > hi) {\n    return x;\n  }\n  return x;",
         "  const sorted = [lo, x, hi].sort((a, b) => a - b);\n  for (const v of sorted) { void v; }\n  return sorted[1];"),
        ("    return x;\n  }\n  return x;", "    /* the upper bound */\n    return   hi;\n  }\n  return x;")),
    "typescript": ("src/clamp.ts", """\
export function helper(): number {
  return 1;
}

export class Range {
  clamp(x: number, lo: number, hi: number): number {
    if (x < lo) {
      return lo;
    }
    if (x > hi) {
      return x;
    }
    return x;
  }
}
""", ("      return x;\n    }\n    return x;", "      return hi;\n    }\n    return x;"),
        ("      return x;\n    }\n    return x;", "      return hi + 0;\n    }\n    return x;"),
        ("    if (x < lo) {\n      return lo;\n    }\n    if (x > hi) {\n      return x;\n    }\n    return x;",
         "    const sorted: number[] = [lo, x, hi].sort((a, b) => a - b);\n    for (const v of sorted) { void v; }\n"
         "    return sorted[1];"),
        ("      return x;\n    }\n    return x;", "      // the upper bound\n      return   hi;\n    }\n    return x;")),
    "java": ("src/Range.java", """\
class Range {
    int helper() {
        return 1;
    }

    int clamp(int x, int lo, int hi) {
        if (x < lo) {
            return lo;
        }
        if (x > hi) {
            return x;
        }
        return x;
    }
}
""", ("            return x;\n        }\n        return x;", "            return hi;\n        }\n        return x;"),
        ("            return x;\n        }\n        return x;", "            return hi + 0;\n        }\n        return x;"),
        ("        if (x < lo) {\n            return lo;\n        }\n        if (x > hi) {\n            return x;\n        }\n"
         "        return x;",
         "        int[] sorted = {lo, x, hi};\n        java.util.Arrays.sort(sorted);\n"
         "        for (int v : sorted) { v++; }\n        return sorted[1];"),
        ("            return x;\n        }\n        return x;",
         "            // the upper bound\n            return   hi;\n        }\n        return x;")),
    "rust": ("src/range.rs", """\
fn helper() -> i32 {
    1
}

pub fn clamp(x: i32, lo: i32, hi: i32) -> i32 {
    if x < lo {
        return lo;
    }
    if x > hi {
        return x;
    }
    x
}
""", ("        return x;\n    }\n    x", "        return hi;\n    }\n    x"),
        ("        return x;\n    }\n    x", "        return hi + 0;\n    }\n    x"),
        ("    if x < lo {\n        return lo;\n    }\n    if x > hi {\n        return x;\n    }\n    x",
         "    let mut sorted = [lo, x, hi];\n    sorted.sort();\n    for v in sorted.iter() {\n        let _ = v;\n    }\n"
         "    sorted[1]"),
        ("        return x;\n    }\n    x", "        // the upper bound\n        return   hi;\n    }\n    x")),
}


def _variants(language: str) -> tuple[str, str, dict[str, str]]:
    path, base, *edits = PROGRAMS[language]
    after = {}
    for name, (old, new) in zip(("fix", "other", "rewrite", "reformatted"), edits, strict=True):
        assert old in base
        after[name] = base.replace(old, new)
    return path, base, after


def _tree(path: str, before: str, after: str) -> TreeNode:
    return patch_tree(normalise_patch(diff(path, before, after)), {path: after}.get)


@pytest.mark.parametrize("language", sorted(PROGRAMS))
def test_ast_distance_per_language_ranks_a_rewrite_above_a_variant(language):
    path, base, after = _variants(language)
    fix, other, rewrite = (_tree(path, base, after[n]) for n in ("fix", "other", "rewrite"))
    assert syntax.language_of(path).name == language
    assert ast_distance(fix, fix) == 0.0 and ast_distance(fix, _tree(path, base, after["fix"])) == 0.0
    assert 0 < ast_distance(fix, other) < ast_distance(fix, rewrite) <= 1.0
    # a tree-sitter tree of the changed function only, not a token list; `helper` is in no tree
    labels = repr(fix)
    assert "tok:" not in labels and "helper" not in labels and ":clamp" in labels.lower()
    # comments and layout are not structure
    assert ast_distance(fix, _tree(path, base, after["reformatted"])) == 0.0


@pytest.mark.parametrize("language", sorted(PROGRAMS))
def test_near_duplicate_tokens_per_language_ignore_layout_and_comments(language):
    path, base, after = _variants(language)
    pool = [candidate(name, diff(path, base, after[name]), "valid") for name in ("fix", "reformatted", "rewrite")]
    out = {c.candidate_id: (c.reason, c.duplicate_of) for c in set_aside_near_duplicates(pool)}
    assert out == {"fix": (None, None), "reformatted": (Reason.NEAR_DUPLICATE, "fix"), "rewrite": (None, None)}
    added = changed_tokens(pool[1].patch, "+")
    assert "hi" in added and not any("upper" in token for token in added)  # the comment is no token


def test_python_tokens_are_still_words_and_characters():
    patch = normalise_patch(diff("m.py", "x = 1\n", "x = [1]  # one\n"))
    assert changed_tokens(patch, "+") == Counter({"x": 1, "=": 1, "[": 1, "1": 1, "]": 1, "#": 1, "one": 1})


GO_SAMPLE = b"""\
package clamp

// Range is a closed interval.
type Range struct{ lo, hi int }

func (r *Range) Clamp(x int) int {
	// below the range
	if x < r.lo {
		return r.lo
	}

	return x
}
"""
JS_SAMPLE = b"""\
class Range {
  clamp(x) {
    /* below the range */
    if (x < this.lo) {
      return this.lo;
    }
    return x;
  }
}
const twice = (a) => {
  return a * 2;
};
"""
JAVA_SAMPLE = b"""\
class Range {
    class Inner {
        int clamp(int x) {
            // below the range
            return x + 1;
        }
    }
}
"""


#: line → (first, last + 1) of its statement: comments, blank lines and lone braces are none
#: (as Python's `else:`); a statement holding statements is its header up to the first one.
@pytest.mark.parametrize("path, source, lines, functions", [
    ("clamp/range.go", GO_SAMPLE, {4: (4, 5), 6: (6, 8), 8: (8, 9), 9: (9, 10), 12: (12, 13)},
     [("Range.Clamp", 6, range(8, 13))]),
    ("src/range.js", JS_SAMPLE, {1: (1, 2), 2: (2, 4), 4: (4, 5), 5: (5, 6), 7: (7, 8), 10: (10, 11), 11: (11, 12)},
     [("Range.clamp", 2, range(4, 8)), ("twice", 10, range(11, 12))]),
    ("src/range.ts", JS_SAMPLE, {1: (1, 2), 2: (2, 4), 4: (4, 5), 5: (5, 6), 7: (7, 8), 10: (10, 11), 11: (11, 12)},
     [("Range.clamp", 2, range(4, 8)), ("twice", 10, range(11, 12))]),
    ("src/Range.java", JAVA_SAMPLE, {1: (1, 2), 2: (2, 3), 3: (3, 5), 5: (5, 6)},
     [("Range.Inner.clamp", 3, range(5, 6))]),
])
def test_changed_functions_and_code_lines_per_language(path, source, lines, functions):
    change = analyse_file(path, source, range(1, source.count(b"\n") + 1))
    assert {n: (span.start, span.stop) for n, span in change.lines.items()} == lines
    assert [(f.name, f.line, f.body) for f in change.functions] == functions
    # only the changed lines count: a change inside `twice` names `twice` alone
    if path.endswith(".js"):
        assert [f.name for f in analyse_file(path, source, [11, 12]).functions] == ["twice"]


def test_a_file_of_a_language_without_grammar_is_not_measured():
    assert analyse_file("Main.kt", b"fun main() {\n    val x = 1\n}\n", [1, 2, 3]) == ChangedFile("Main.kt", {}, ())
    # ... and a toolchain measures its own files only: coverage.py's are the Python ones
    patch = diff("m.go", "package m\n", "package m\n\nvar X = 1\n") + diff("m.py", "x = 1\n", "x = 2\n")
    assert set(changed_lines(patch.encode())) == {"m.py"}
    assert set(changed_lines(patch.encode(), lambda path: path.endswith(".go"))) == {"m.go"}


@pytest.mark.parametrize("path, source, expected", [
    ("clamp/clamp_test.go", """\
package clamp

import "testing"

func TestClamp(t *testing.T) {
	if Clamp(5, 0, 3) != 3 {
		t.Fatal("high")
	}
}

func helper(t *testing.T) {}
func Testlower(t *testing.T) {}
func BenchmarkClamp(b *testing.B) {}
func TestNoT() {}
func Test_Under(t *testing.T) {}
""", [("TestClamp", 5, 9), ("Test_Under", 15, 15)]),
    ("src/clamp.test.js", """\
describe('clamp', () => {
  it('keeps values inside', () => {
    expect(clamp(1, 0, 3)).toBe(1);
  });
  describe('bounds', () => {
    test.each([[5, 3]])('caps %i', (x, want) => {});
  });
  const notATest = title(`x`, () => {});
});
test(`top level`, () => {});
it(nameFromVariable, () => {});
""", [("clamp::keeps values inside", 2, 4), ("clamp::bounds::caps %i", 6, 6), ("top level", 10, 10)]),
    ("src/clamp.test.ts", """\
describe("clamp", () => {
  it.only("types", (): void => {
    const x: number = 1;
  });
});
""", [("clamp::types", 2, 4)]),
    ("src/RangeTest.java", """\
import org.junit.jupiter.api.Test;

class RangeTest {
    @Test
    void keepsInside() {
        assertEquals(1, 1);
    }

    void helper() {}

    @Nested
    class Bounds {
        @org.junit.jupiter.api.Test
        void caps() {}
    }
}
""", [("RangeTest::keepsInside", 4, 7), ("RangeTest::Bounds::caps", 13, 14)]),
    ("src/range/tests.rs", """\
use super::*;

#[test]
fn keeps_inside() {
    assert_eq!(clamp(1, 0, 3), 1);
}

fn helper() {}

#[cfg(test)]
mod bounds {
    #[test]
    // caps high values
    #[should_panic]
    fn caps() {}

    #[tokio::test(flavor = "current_thread")]
    async fn on_a_runtime() {}

    #[test_case(1)]
    fn not_libtest(x: i32) {}
}
""", [("keeps_inside", 3, 6), ("bounds::caps", 12, 15), ("bounds::on_a_runtime", 17, 18)]),
])
def test_test_functions_per_language(path, source, expected):
    language = syntax.language_of(path).name
    assert find_test_functions(source, language) == expected
    assert signals.tests_in(path, source) == len(expected)


def test_test_discovery_refuses_what_does_not_parse_and_counts_only_test_files():
    with pytest.raises(SyntaxError):
        find_test_functions("func TestX(t *testing.T) {", "go")
    assert signals.tests_in("clamp/clamp_test.go", "func TestX(t *testing.T) {") == 0  # not a wrong count
    assert signals.tests_in("clamp/clamp.go", "package clamp\n\nfunc TestX(t *testing.T) {}\n") == 0  # go test reads *_test.go
    with pytest.raises(ValueError, match="no syntax record"):
        find_test_functions("", "cobol")
