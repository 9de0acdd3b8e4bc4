"""ΔC and EC (tasks/score/coverage/): changed lines from hand-made diffs, statements and
functions from the syntax tree, scores from hand-made and real coverage data, the helper
scripts with coverage in every Python process, and the whole pass in the sandbox."""

from __future__ import annotations

import logging
import shutil
import sys
import textwrap
from contextlib import contextmanager
from pathlib import Path

import polars as pl
import pytest
from scipy.stats import pearsonr, spearmanr

from testprism.tasks.model.benchmark import load_benchmark
from testprism.tasks.model.benchmark_format import EnvironmentSpec
from testprism.tasks.score.coverage import probe
from testprism.tasks.score.coverage.probe import measure_coverage
from testprism.tasks.score.coverage.summary import coverage_summary
from testprism.tasks.score.coverage.instrument import (COVERAGE_REQUIREMENT, HELPER_AT, SEAL, Placement, coverage_environment,
                                                      coverage_helpers, new_nonce, placement, runner_head, unseal,
                                                      with_helpers)
from testprism.tasks.sandbox import local
from testprism.tasks.sandbox.base import Limits, Mount, RunRequest
from testprism.tasks.model.changes import ChangedFile, ChangedFunction, analyse_file, analyse_reference, changed_lines
from testprism.tasks.score.coverage.reports import MeasuredFile, parse_report, score_changes
from testprism.tasks.model.workdir import WorkPaths
from tests.benchfixture import BUGGY, CHECKS, REFERENCE, WEAK, diff, make_benchmark
from tests.conftest import open_backend
from tests.coveragefixture import run_helpers
from tests.reportfixture import reports_as_files

OLD = textwrap.dedent('''\
    """Module."""
    import os


    def keep(x):
        return x


    def change(x):
        y = x + 1
        z = y * 2
        return z


    def drop_tail(x):
        a = x
        b = a
        return b
    ''')
NEW = textwrap.dedent('''\
    """Module."""
    import os


    def keep(x):
        return x


    def change(x):
        y = x + 2
        # a comment the reference adds

        return y * 2


    def drop_tail(x):
        a = x
        return a
    ''')


def test_changed_lines_counts_additions_and_stands_in_for_deletions():
    patch = diff("pkg/mod.py", OLD, NEW)
    patch += diff("pkg/new.py", "", "def fresh():\n    return 1\n")
    patch += diff("README.md", "old\n", "new\n")
    patch += "--- a/pkg/gone.py\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-x = 1\n"
    found = changed_lines(patch.encode())
    # `y = x + 2`, the comment, the blank line and `return y * 2` are added; the deletion
    # of `b = a` (replaced by `return a`) is a replacement, so the added line stands for it.
    assert found["pkg/mod.py"] == {10, 11, 12, 13, 18}
    assert found["pkg/new.py"] == {1, 2}
    assert set(found) == {"pkg/mod.py", "pkg/new.py"}  # not README.md, not a removed file


def test_a_pure_deletion_is_stood_for_by_the_next_line_else_the_previous_one():
    before = "def f(x):\n    a = x\n    log(a)\n    return a\n"
    middle = "def f(x):\n    a = x\n    return a\n"
    assert changed_lines(diff("m.py", before, middle).encode()) == {"m.py": {3}}  # `return a` now stands there
    tail_before = "def f(x):\n    a = x\n    return a\nprint('bye')\n"
    tail_after = "def f(x):\n    a = x\n    return a\n"
    assert changed_lines(diff("m.py", tail_before, tail_after).encode()) == {"m.py": {3}}


SOURCE = textwrap.dedent('''\
    """Docstring of the module."""
    import functools


    @functools.cache
    def decorated(
        value,
        scale=2,
    ):
        """Docstring."""
        total = (value
                 * scale)
        if total > 10:
            return total
        else:
            return -total


    class Box:
        def method(self):
            def inner():
                return 1
            return inner()
    ''')


def test_analyse_file_maps_lines_to_statements_and_innermost_functions():
    lines = {1, 8, 10, 12, 15, 16, 22, 23}
    change = analyse_file("m.py", SOURCE.encode(), lines)
    # Docstrings (1, 10) and the `else:` line (15) are not statements; a continuation line
    # (12) belongs to its statement (11-12); a signature line (8) to the decorated header.
    assert change.lines == {8: range(5, 10), 12: range(11, 13), 16: range(16, 17), 22: range(22, 23),
                            23: range(23, 24)}
    assert [(f.name, f.line, f.body) for f in change.functions] == [
        ("decorated", 6, range(10, 17)),
        ("Box.method", 20, range(21, 24)),
        ("Box.method.inner", 21, range(22, 23)),
    ]


def test_unparseable_file_counts_changed_code_lines_one_by_one(caplog):
    change = analyse_file("old.py", b"print 'python 2'\n# comment\n\nx = 1\n", {1, 2, 3, 4})
    assert change.lines == {1: range(1, 2), 4: range(4, 5)} and change.functions == ()
    assert "not parseable" in caplog.text


def test_score_changes_from_hand_made_coverage_data():
    change = ChangedFile(
        "pkg/mod.py",
        {10: range(10, 11), 12: range(11, 13), 14: range(14, 15), 20: range(20, 21)},
        (ChangedFunction("f", 9, range(10, 16)), ChangedFunction("g", 19, range(20, 22))),
    )
    # Line 20 is excluded by coverage (pragma: no cover): out of ΔC's denominator.
    measured = {"pkg/mod.py": MeasuredFile(frozenset({9, 10, 11, 14, 19}), frozenset({9, 10, 11}))}
    counts = score_changes([change], measured)
    assert (counts.covered_lines, counts.changed_lines) == (2, 3)  # 10 and 11-12 ran, 14 did not
    assert (counts.entered_functions, counts.changed_functions) == (1, 2)
    assert counts.delta_c == pytest.approx(2 / 3) and counts.ec == 0.5
    assert counts.missed_lines == ["pkg/mod.py:14"] and counts.missed_functions == ["pkg/mod.py:g"]
    # A file coverage never saw was never imported: every changed line and function missed.
    nothing = score_changes([change], {})
    assert (nothing.covered_lines, nothing.changed_lines, nothing.entered_functions) == (0, 4, 0)
    assert nothing.delta_c == 0.0 and nothing.ec == 0.0
    # Reports may name files by a longer path (a file outside the program root).
    longer = score_changes([change], {"/elsewhere/pkg/mod.py": measured["pkg/mod.py"]})
    assert longer.covered_lines == 2
    assert score_changes([], {}).delta_c is None and score_changes([], {}).ec is None


def test_parse_report_refuses_what_is_not_a_report():
    with pytest.raises(ValueError):
        parse_report(b"<testsuite/>")
    with pytest.raises(ValueError, match="could not be combined"):
        parse_report(b'{"files": {}, "error": "DataError: boom", "data_files": 2}')
    assert parse_report(b'{"files": {}, "error": null, "data_files": 0}') == {}


def test_coverage_environment_adds_coverage_once():
    spec = EnvironmentSpec(packages=("pytest>=8,<10",))
    with_coverage = coverage_environment(spec)
    assert with_coverage.packages == ("pytest>=8,<10", COVERAGE_REQUIREMENT)
    assert with_coverage.key != spec.key and with_coverage.python == spec.python
    assert coverage_environment(with_coverage) == with_coverage
    pinned = EnvironmentSpec(packages=("Coverage==7.6.1", "pytest"))
    assert coverage_environment(pinned) == pinned
    assert coverage_environment(EnvironmentSpec(packages=("coveragepy-plugin",))).packages[-1] == COVERAGE_REQUIREMENT


SUBPROCESS_SUITE = '''\
import subprocess
import sys


def test_median_in_a_child_process():
    child = subprocess.run([sys.executable, "-c", "from stats import median; print(median([1, 2, 3, 4]))"],
                           capture_output=True, text=True, check=True)
    assert child.stdout.strip() == "2.5"
'''


@pytest.mark.slow
def test_helper_measures_every_python_process_without_a_sandbox(tmp_path):
    """The helper scripts on their own (the backend only copies files and runs the
    command): coverage reaches a child process and the report comes back at
    $TESTPRISM_JUNIT, with the suite's exit status kept."""
    bench = make_benchmark(tmp_path / "bench", {"child": {"test_child.py": SUBPROCESS_SUITE}})
    benchmark = load_benchmark(bench)
    suite = benchmark.suites[("child", "mini__median-even")]
    program = tmp_path / "program"
    program.mkdir()
    (program / "stats.py").write_text(REFERENCE)
    changes = analyse_reference(program, diff("stats.py", BUGGY, REFERENCE).encode())
    helpers = coverage_helpers(suite, changes, WorkPaths(tmp_path / "work"))
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(tmp_path)}
    done, report = run_helpers(program, suite, helpers, tmp_path / "out", env, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "out" / "coverage" / "junit.xml").is_file()  # the suite's own report, moved aside
    counts = score_changes(changes, parse_report(report.read_bytes()))
    # Only the child process ran median([1, 2, 3, 4]): even length, so `return ordered[mid]` never ran.
    assert (counts.covered_lines, counts.changed_lines) == (3, 4)
    assert counts.missed_lines == ["stats.py:6"] and counts.ec == 1.0
    # A failing suite keeps its exit status and is still measured.
    (suite.folder / "test_child.py").write_text(SUBPROCESS_SUITE.replace('"2.5"', '"2"'))
    report.unlink()
    failed, report = run_helpers(program, suite, helpers, tmp_path / "out", env, timeout=120)
    assert failed.returncode == 1
    assert score_changes(changes, parse_report(report.read_bytes())).covered_lines == 3


def test_coverage_summary_means_and_correlations_with_s():
    coverage = pl.DataFrame({
        "configuration": ["a"] * 5 + ["b"] * 3,
        "instance_id": ["i1", "i2", "i3", "i4", "i5", "i1", "i2", "i3"],
        "delta_c": [1.0, 0.5, 0.25, 0.0, None, 1.0, 1.0, 0.5],
        "ec": [1.0, 1.0, 0.0, 0.0, None, 1.0, 0.5, 1.0],
    })
    scores = pl.DataFrame({
        "configuration": ["a"] * 5 + ["b"] * 3,
        "instance_id": ["i1", "i2", "i3", "i4", "i5", "i1", "i2", "i3"],
        "s": [1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
    })
    summary = {r["configuration"]: r for r in coverage_summary(coverage, scores).iter_rows(named=True)}
    a = summary["a"]
    assert a["n_instances"] == 4 and a["delta_c"] == pytest.approx(0.4375) and a["ec"] == 0.5
    assert a["jvr"] == pytest.approx(0.6)  # over every instance of the configuration
    x, s = [1.0, 0.5, 0.25, 0.0], [1.0, 1.0, 0.0, 0.0]
    assert a["delta_c_spearman"] == pytest.approx(spearmanr(x, s).statistic)
    assert a["delta_c_pearson_p"] == pytest.approx(pearsonr(x, s).pvalue)
    assert a["ec_pearson"] == pytest.approx(1.0)
    # S is constant for b: its correlations are undefined (null), not NaN.
    assert summary["b"]["delta_c_spearman"] is None and summary["b"]["ec_pearson_p"] is None


NOTHING = '''\
def test_arithmetic():
    assert 1 + 1 == 2
'''


@pytest.mark.slow
@pytest.mark.requires("sandbox")
def test_measure_coverage_in_the_sandbox_and_skip_stored_measurements(tmp_path, work_root, caplog):
    bench = make_benchmark(tmp_path / "bench", {
        "strong": {"test_median.py": CHECKS},
        "weak": {"test_median.py": WEAK},
        "child": {"test_child.py": SUBPROCESS_SUITE},
        "idle": {"test_idle.py": NOTHING},
    })
    store = tmp_path / "store"
    frame = measure_coverage(bench, store, work_root, "local", concurrency=2)
    rows = {r["configuration"]: r for r in frame.iter_rows(named=True)}
    assert rows["strong"]["delta_c"] == 1.0 and rows["strong"]["ec"] == 1.0
    assert rows["weak"]["delta_c"] == 0.75 and rows["weak"]["missed_lines"] == ["stats.py:6"]
    assert rows["child"]["delta_c"] == 0.75 and rows["child"]["ec"] == 1.0  # measured in the child process
    assert rows["idle"]["delta_c"] == 0.0 and rows["idle"]["ec"] == 0.0
    assert all(r["reason"] is None and r["changed_lines"] == 4 for r in rows.values())
    stored = pl.read_parquet(store / "scores" / "coverage.parquet")
    assert stored.equals(frame)
    with caplog.at_level(logging.INFO, logger="testprism.tasks.score.coverage"):
        again = measure_coverage(bench, store, work_root, "local")
    assert again.equals(frame)
    assert "0 to run" in caplog.text
    caplog.clear()
    (bench / "suites" / "weak" / "mini__median-even" / "test_median.py").write_text(CHECKS + "\n# edited\n")
    with caplog.at_level(logging.INFO, logger="testprism.tasks.score.coverage"):
        edited = measure_coverage(bench, store, work_root, "local")
    assert "1 to run" in caplog.text
    assert {r["configuration"]: r["delta_c"] for r in edited.iter_rows(named=True)}["weak"] == 1.0


# Two suites that run no program code and claim every changed line: one rewrites the helper's
# collector (found through COVERAGE_PROCESS_START), one writes the report where the harness
# reads it ($TESTPRISM_JUNIT's folder's parent) and locks it so the helper cannot replace it.
FORGED = '{"data_files": 1, "error": null, "files": {"stats.py": {"statements": [1, 2, 3, 4, 5, 6, 7], "missing": []}}}'
FORGING_COLLECTOR = f"import sys\nopen(sys.argv[1], 'w').write({FORGED!r})\n"
REWRITE_HELPER = f'''\
import os
import pathlib


def test_rewrites_the_helper():
    here = pathlib.Path(os.environ["COVERAGE_PROCESS_START"]).parent
    (here / "collect.py").write_text({FORGING_COLLECTOR!r})
'''
FORGE_REPORT = f'''\
import os
import pathlib


def test_forges_the_report():
    out = pathlib.Path(os.environ["TESTPRISM_JUNIT"]).parent.parent
    (out / "junit.xml").write_text({FORGED!r})
    (out / "junit.xml").chmod(0o444)
    out.chmod(0o555)
'''


@contextmanager
def old_placement(suite, helpers: Path, nonce: str, work: WorkPaths):
    """The placement before the read-only mount: the helper folder copied under the suite's
    writable tmp/, run from there."""
    with placement(suite, helpers, nonce, work) as placed:
        shutil.copytree(helpers, placed.suite_folder / "old-helper")
        files = tuple(str(p.relative_to(placed.suite_folder)) for p in (placed.suite_folder / "old-helper").rglob("*")
                      if p.is_file())
        yield Placement(placed.suite_folder, (*placed.suite_files, *files), "bash tmp/old-helper/run.sh", ())


def unsealed_unchecked(report: bytes | None, nonce: str) -> bytes:
    """The harness before the seal: whatever report is there is read."""
    report = report or b""
    return report.split(b"\n", 1)[1] if report.startswith(SEAL) else report


@pytest.mark.slow
@pytest.mark.parametrize("backend", [pytest.param("local", marks=pytest.mark.requires("sandbox")),
                                     pytest.param("docker", marks=pytest.mark.requires("docker"))])
def test_a_suite_cannot_rewrite_the_helper_or_forge_its_report(tmp_path, work_root, backend, monkeypatch):
    bench = make_benchmark(tmp_path / "bench", {
        "strong": {"test_median.py": CHECKS},
        "rewrite": {"test_rewrite.py": REWRITE_HELPER},
        "forge": {"test_forge.py": FORGE_REPORT},
    })

    def rows(store: str) -> dict[str, dict]:
        frame = measure_coverage(bench, tmp_path / store, work_root, backend)
        return {r["configuration"]: r for r in frame.iter_rows(named=True)}

    defended = rows("defended")
    assert defended["strong"]["delta_c"] == 1.0 and defended["strong"]["ec"] == 1.0  # honest: unchanged
    # The helper is read-only: the rewrite fails and the suite is measured for what it ran (nothing).
    assert (defended["rewrite"]["delta_c"], defended["rewrite"]["ec"], defended["rewrite"]["reason"]) == (0.0, 0.0, None)
    assert defended["rewrite"]["exit_code"] == 1  # its test failed: the write was refused
    # The locked report does not carry the run's seal: no figure.
    assert (defended["forge"]["delta_c"], defended["forge"]["reason"]) == (None, "coverage_failed")
    # Control: the helper under the suite's tmp/ and the report read unsealed, as before.
    monkeypatch.setattr(probe, "placement", old_placement)
    monkeypatch.setattr(probe, "unseal", unsealed_unchecked)
    reports_as_files(monkeypatch)  # and the report read as a file after the run: the pipe took the forgery too
    undefended = rows("undefended")
    assert undefended["strong"]["delta_c"] == 1.0
    assert undefended["rewrite"]["exit_code"] == 0  # its write went through
    for attack in ("rewrite", "forge"):
        assert (undefended[attack]["delta_c"], undefended[attack]["ec"]) == (1.0, 1.0), undefended[attack]


# The helper's own end, with a collector that says whether the suite's background processes
# (one in its session, one in a session of its own) are still there when it runs.
LEAVES_PROCESSES = "sleep 300 & echo $! > /tmp/left.pid\nsetsid sleep 300 & echo $! >> /tmp/left.pid\n"
SAYS_WHO_IS_LEFT = '''\
( exec bash "$here/entry.sh" )
status=$?
collecting
for pid in $(cat /tmp/left.pid); do
  state="$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null)"
  if [ -n "$state" ] && [ "$state" != Z ]; then echo alive; else echo gone; fi
done > "$report"
hand_back
exit "$status"
'''


@pytest.mark.parametrize("backend_name", [pytest.param("local", marks=pytest.mark.requires("sandbox")),
                                          pytest.param("docker", marks=pytest.mark.requires("docker"))])
def test_no_process_of_the_suite_is_left_when_the_collector_runs(tmp_path, work, backend_name):
    """`collecting` ends every process the suite left, inside the run's own pid namespace;
    control: the same helper mounted elsewhere than HELPER_AT does not (no sweep outside a
    sandbox), and both processes are still there."""
    backend = open_backend(backend_name, work)
    try:
        environment = backend.prepare(EnvironmentSpec(python="3.11", packages=()))
        bench = make_benchmark(tmp_path / "bench", {"s": {"test_nothing.py": NOTHING}})
        suite = load_benchmark(bench).suites[("s", "mini__median-even")]
        helpers = with_helpers({"run.sh": runner_head("leaving processes") + SAYS_WHO_IS_LEFT,
                                "entry.sh": LEAVES_PROCESSES}, work)
        tree = tmp_path / "tree"
        tree.mkdir()
        (tree / "stats.py").write_text(REFERENCE)

        def who_is_left(at: str) -> list[str]:
            nonce = new_nonce()
            with placement(suite, helpers, nonce, work) as placed:
                result = backend.run(RunRequest(
                    tree=tree, suite_folder=placed.suite_folder, suite_files=placed.suite_files,
                    command=f"bash {at}/run.sh", environment=environment, limits=Limits(timeout_s=60.0),
                    mounts=(Mount(at, helpers),)))
            assert result.exit_code == 0 and not result.timed_out, result.output_tail
            return unseal(result.junit_xml, nonce).decode().split()

        assert who_is_left(HELPER_AT) == ["gone", "gone"]
        assert who_is_left("/elsewhere") == ["alive", "alive"]  # control: no sweep
    finally:
        backend.close()


@pytest.mark.requires("sandbox")
def test_without_a_sandbox_coverage_is_not_measured(tmp_path, work_root, monkeypatch, caplog):
    """`local` without bubblewrap (--unsafe-no-sandbox) cannot mount the helper read-only:
    every row says so, none has a figure."""
    monkeypatch.setattr(local, "bubblewrap_works", lambda: False)
    bench = make_benchmark(tmp_path / "bench", {"strong": {"test_median.py": CHECKS}})
    with caplog.at_level(logging.ERROR, logger="testprism.tasks.score.coverage"):
        row = measure_coverage(bench, tmp_path / "store", work_root, "local", unsafe=True).row(0, named=True)
    assert (row["delta_c"], row["reason"]) == (None, "coverage_failed")
    assert "needs a read-only mount" in caplog.text
