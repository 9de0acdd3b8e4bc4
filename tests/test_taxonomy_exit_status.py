"""The failure taxonomy on suites that report by their exit status alone (issue 31, item 3):
an execution-logic error is told from a rejection by evidence in the run's output, never by
the missing JUnit report, and `unclassified` where the output cannot tell. The hand-labelled
fixture (tests/data/exit_status_suites/) is replayed for real; the readers of other
runners' output are checked on text as those runners print it."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import polars as pl
import pytest

from testprism.storage import Store
from testprism.tasks.model import toml_writer
from testprism.tasks.replay.settings import ReplaySettings
from testprism.tasks.score.rejection import read_rejection
from testprism.tasks.execution.run_settings import RunSettings

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).with_name("data") / "exit_status_suites"
#: the instance's candidates the replay keeps (fewer runs): one valid, two invalid
CANDIDATES = {"closed-interval", "drops-lo-check", "ignores-hi"}


def _benchmark(root: Path, instance_id: str, suites: list[str]) -> Path:
    instance = root / "instances" / instance_id
    shutil.copytree(ROOT / "examples" / "instances" / instance_id, instance)
    spec = tomllib.loads((instance / "instance.toml").read_text())
    spec["candidates"] = [c for c in spec["candidates"] if c["id"] in CANDIDATES]
    (instance / "instance.toml").write_text(toml_writer.dumps(spec))
    for suite in suites:
        shutil.copytree(FIXTURE / suite, root / "suites" / suite / instance_id, ignore=shutil.ignore_patterns("*.toml"))
    return root


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.requires("sandbox")
def test_the_taxonomy_reproduces_the_hand_labels_of_exit_status_suites(tmp_path, work_root):
    from testprism.flows.replay import replay_flow
    from testprism.tasks.score.scores import score_tables

    fixture = tomllib.loads((FIXTURE / "labels.toml").read_text())
    labels = {label["suite"]: label for label in fixture["label"]}
    bench = _benchmark(tmp_path / "bench", fixture["instance"], sorted(labels))
    store = tmp_path / "store"
    replay_flow(benchmark=str(bench), store=str(store), run=RunSettings(backend="local", work=str(work_root)), settings=ReplaySettings(concurrency=2))
    runs = Store(store).scan("runs").collect()
    assert runs["tests"].list.len().max() == 0  # no suite here reports in JUnit
    reference = runs.filter(pl.col("state") == "reference")
    assert set(reference["outcome"]) == {"F"} and reference.height == len(labels)

    found = {r["configuration"]: r for r in
             score_tables(Store(store), replicates=100, seed=1)["failure_taxonomy"].iter_rows(named=True)}
    reproduced = []
    for suite, label in labels.items():
        row = found[suite]
        assert row["state"] == "reference" and row["evidence_basis"] == "output", row
        if row["kind"] == label["kind"] and label.get("evidence", "") in row["evidence"]:
            reproduced.append(suite)
    assert sorted(reproduced) == sorted(labels), {s: (found[s]["kind"], found[s]["evidence"]) for s in labels}
    kinds = {label["kind"] for label in labels.values()}
    assert kinds == {"execution_logic_error", "faulty_check", "unclassified"}


# -- other runners' output, as they print it -----------------------------------------------------

GO_PANIC = """--- FAIL: TestParse (0.00s)
panic: runtime error: index out of range [3] with length 3 [recovered]
\tpanic: runtime error: index out of range [3] with length 3

goroutine 7 [running]:
testing.tRunner.func1.2({0x51c0a0, 0xc000016168})
\t/usr/lib/go-1.19/src/testing/testing.go:1396 +0x24e
panic({0x51c0a0, 0xc000016168})
\t/usr/lib/go-1.19/src/runtime/panic.go:884 +0x212
example.com/csvkit.TestParse(0x0?)
\t/workspace/program/csvkit/extra_test.go:12 +0x1d
"""
GO_PANIC_IN_PROGRAM = GO_PANIC.replace("csvkit.TestParse(0x0?)\n\t/workspace/program/csvkit/extra_test.go:12",
                                       "csvkit.Parse(...)\n\t/workspace/program/csvkit/parse.go:40")
GO_FAIL = "--- FAIL: TestParse (0.00s)\n    extra_test.go:12: got 1 fields, want 2\nFAIL\nFAIL\texample.com/csvkit\t0.003s\n"
GO_BUILD = "# example.com/csvkit [example.com/csvkit.test]\n./extra_test.go:9:2: undefined: sort\nFAIL\texample.com/csvkit [build failed]\n"
NODE_REFERENCE_ERROR = """/workspace/program/tmp/query.test.js:3
const q = parseQeury('a=1');
          ^

ReferenceError: parseQeury is not defined
    at Object.<anonymous> (/workspace/program/tmp/query.test.js:3:11)
    at Module._compile (node:internal/modules/cjs/loader:1256:14)
"""
NODE_ASSERTION = """node:assert:125
  throw new AssertionError(obj);
  ^

AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:

1 !== 2

    at file:///workspace/program/tmp/query.test.mjs:4:8
"""
NODE_IN_PROGRAM = NODE_REFERENCE_ERROR.replace("ReferenceError: parseQeury is not defined",
                                               "TypeError: Cannot read properties of undefined").replace(
    "(/workspace/program/tmp/query.test.js:3:11)", "(/workspace/program/src/query.js:14:20)")
UNITTEST = "F\n======\nFAIL: test_end (tmp.test_x.T.test_end)\n------\nAssertionError: 2 != 3\n"
CUT_TRACEBACK = '    assert helper() == 3\n  File "/workspace/program/tmp/check.py", line 2, in helper\n    return undefined_name\nNameError: name \'undefined_name\' is not defined\n'
#: a work area under /var/tmp: the program's files are not the suite's for having `tmp/` in their path
UNSAFE_PROGRAM_CRASH = ('Traceback (most recent call last):\n  File "/var/tmp/w/ws/program/pkg/m.py", line 3, in f\n'
                        '    return x[0]\nIndexError: list index out of range\n')


@pytest.mark.parametrize(("output", "kind", "why"), [
    (GO_PANIC, "execution_logic_error", "panic in the suite's own /workspace/program/csvkit/extra_test.go:12"),
    (GO_PANIC_IN_PROGRAM, "unclassified", "nothing"),
    (GO_FAIL, "faulty_check", "--- FAIL: TestParse"),
    (GO_BUILD, "execution_logic_error", "[build failed]"),
    (NODE_REFERENCE_ERROR, "execution_logic_error", "ReferenceError in the suite's own /workspace/program/tmp/query.test.js:3"),
    (NODE_ASSERTION, "faulty_check", "AssertionError"),
    (NODE_IN_PROGRAM, "unclassified", "nothing"),
    (UNITTEST, "faulty_check", "FAIL: test_end"),
    (CUT_TRACEBACK, "execution_logic_error", "NameError in the suite's own /workspace/program/tmp/check.py:2"),
    (UNSAFE_PROGRAM_CRASH, "unclassified", "nothing"),
    ("", "unclassified", "nothing"),
])
def test_each_rule_reads_its_evidence(output, kind, why):
    reading = read_rejection(output)
    assert reading.kind == kind and why in reading.why, reading
