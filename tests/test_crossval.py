"""`testprism crossval` on a designed example: three agents write a test and a repair per
instance; one test is over-restrictive (it demands the exact text of its own fix), one is
weak (it only checks the bug is gone, and its agent's repair is wrong). Cross-validation
flags exactly those two, the feedback round fixes them, and the merged suite of validated
tests rejects every invalid candidate and accepts every valid one."""

from __future__ import annotations

import polars as pl
import pytest
from typer.testing import CliRunner

from testprism.flows.cli import app
from testprism.storage import Store
from tests.benchfixture import diff
from tests.synthbench import make_synthetic

pytestmark = [pytest.mark.slow, pytest.mark.requires("sandbox")]

AGENTS = {
    # test, the test after feedback, repair (synthetic programs hold impl.txt = "bug";
    # the official checks and a correct fix: it starts with "fixed")
    "good": ("grep -q '^fixed' impl.txt", "grep -q '^fixed' impl.txt", "fixed-by-good"),
    "strict": ("grep -qx fixed impl.txt", "grep -q '^fixed' impl.txt", "fixed"),
    "lax": ("! grep -q '^bug' impl.txt", "grep -q '^fixed' impl.txt", "broken-by-lax"),
}
AGENT = """import pathlib
feedback = pathlib.Path("tmp/.task/feedback.md").is_file()
pathlib.Path("tmp/run_tests.sh").write_text(({after!r} if feedback else {test!r}) + "\\n")
pathlib.Path("impl.txt").write_text({repair!r} + "\\n")
"""


#: official checks that report in JUnit (the synthetic ones only exit), so that repairs get labels
CHECK = ("""if grep -q '^fixed' impl.txt; then r=""; else r='<failure message="not fixed"/>'; fi\n"""
         """printf '<testsuite><testcase classname="checks" name="check">%s</testcase></testsuite>' "$r" """
         """> "$TESTPRISM_JUNIT"\ntest -z "$r"\n""")


def cli(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_crossval_flags_an_over_restrictive_and_a_weak_test_and_the_feedback_round_fixes_them(tmp_path, work_root):
    bench = make_synthetic(tmp_path / "bench", 2)
    for checks in bench.glob("instances/*/checks.diff"):
        checks.write_text(diff("check.sh", "", CHECK))
    lines = ['benchmark = "bench"', 'out = "hs"', 'merged = "testhelix"', "feedback_rounds = 1"]
    for name, (test, after, repair) in AGENTS.items():
        (tmp_path / f"{name}.py").write_text(AGENT.format(test=test, after=after, repair=repair))
        lines += ["[[agents]]", f'name = "{name}"', f'command = "python tmp/.task/tools/{name}.py"',
                  f'tools = ["{name}.py"]']
    config = tmp_path / "crossval.toml"
    config.write_text("\n".join(lines) + "\n")
    store = tmp_path / "store"
    cli("crossval", str(config), "--store", str(store), "--work", str(work_root))

    flags = Store(store).read_table("crossval_flags")
    first = {(r["instance_id"], r["test"]): (r["verdict"], r["evidence"])
             for r in flags.filter(pl.col("round") == 0).iter_rows(named=True)}
    for instance in ("synth__0000", "synth__0001"):
        assert first[(instance, "good")] == ("validated", None)
        assert first[(instance, "strict")] == ("over_restrictive", "good")  # rejects good's correct fix
        assert first[(instance, "lax")] == ("weak", "lax")  # accepts its own wrong fix, which the others reject
    assert set(flags.filter(pl.col("round") == 1)["verdict"]) == {"validated"}
    matrix = Store(store).read_table("crossval_matrix").filter(pl.col("round") == 0)
    assert matrix.height == 2 * 3 * 5  # per instance: 3 tests × (buggy, reference, 3 repairs)
    generations = Store(store).scan("generations").collect()
    assert sorted(generations["round"].to_list()) == [0] * 6 + [1] * 4  # strict and lax asked again
    feedback_runs = generations.filter(pl.col("round") == 1)
    assert set(feedback_runs["configuration"]) == {"strict", "lax"}

    hs = tmp_path / "hs"
    assert sorted(p.name for p in (hs / "suites").iterdir()) == ["good", "lax", "strict", "testhelix"]
    merged = hs / "suites" / "testhelix" / "synth__0000"
    assert sorted(p.name for p in (merged / "suites").iterdir()) == ["good", "lax", "strict"]
    cli("replay", str(hs), "--store", str(store), "--work", str(work_root))
    cli("score", str(store))
    board = {r["configuration"]: r for r in Store(store).read_table("leaderboard").iter_rows(named=True)}
    assert board["testhelix"]["jvr"] == 1.0  # the validated tests together accept every valid, reject every invalid
    scores = Store(store).read_table("instance_scores")
    assert set(scores["n_valid"]) == {4} and set(scores["n_invalid"]) == {5}  # repairs are never panel candidates

    cli("report", str(store), "--out", str(tmp_path / "report.html"))
    page = (tmp_path / "report.html").read_text()
    section = page[page.index('<section id="crossval">'):]
    assert "over_restrictive" in section and "<h3>synth__0000</h3>" in section
    assert "rejects good&#x27;s repair" in section  # the why, beside the matrix
