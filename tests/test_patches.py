"""The one diff reader (tasks/model/patches.py) and the one TOML writer (tasks/model/toml_writer.py)."""

import tomllib

from testprism.tasks.model import patches, toml_writer

DIFF = """\
diff --git a/m.py b/m.py
--- a/m.py
+++ b/m.py
@@ -1,6 +1,5 @@
 def f():
-    return 1
+    return 2
 
 def g():
-    x = 1
     return 0
"""


def test_relative_path_strips_prefixes_and_knows_dev_null():
    assert patches.relative_path("a/src/m.py") == "src/m.py"
    assert patches.relative_path("b/m.py") == "m.py"
    assert patches.relative_path("m.py") == "m.py"
    assert patches.relative_path("/dev/null") is None
    assert patches.escapes_program("a/../x") and patches.escapes_program("/etc/passwd")
    assert not patches.escapes_program("/dev/null") and not patches.escapes_program("b/ok/x.py")


def test_parse_reads_bytes_with_replacement_and_names_touched_files():
    parsed = patches.parse(DIFF.replace("return 2", "return '\udcff'").encode("utf-8", "surrogateescape"))
    assert [p.path for p in parsed] == ["m.py"]
    added = """--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+x = 1\n"""
    assert patches.touched_files(patches.parse(DIFF + added)) == {"m.py", "new.py"}


def test_changed_lines_by_each_rule():
    (patched,) = patches.parse(DIFF)
    # the replacement on line 2 counts as its added line; the deletion after `def g():` (target 4)
    assert patches.changed_lines(patched, removals="following") == {2, 5}  # next line stands in
    assert patches.changed_lines(patched, removals="previous") == {1, 2, 4}  # the line above
    assert patches.changed_lines(patched, removals="previous-or-hunk-start") == {1, 2, 4}


def test_previous_rules_differ_only_before_a_hunks_first_target_line():
    (patched,) = patches.parse("--- a/m.py\n+++ b/m.py\n@@ -5,2 +4,0 @@\n-a\n-b\n")
    assert patches.changed_lines(patched, removals="previous") == {3}
    assert patches.changed_lines(patched, removals="previous-or-hunk-start") == {4}
    assert patches.changed_lines(patched, removals="following") == set()


def test_toml_writer_round_trips_with_comments():
    doc = {"id": "x", "s": 'q " \x7f \t', "t": {"l": ["a", "b"]}}
    text = toml_writer.dumps(doc, ["made here"])
    assert text.startswith("# made here\n") and tomllib.loads(text) == doc
    assert toml_writer.value(["checks"]) == '[\n    "checks",\n]'
