"""End to end on the real git fixture (tests/gitfixture.py), through the command line users
run: import swebench → collect (labels in the sandbox, duplicates, panels) → import suites →
replay the panel folder → score, with every number checked against what can be worked out
by hand from the candidates below.

The fixture's row has the rich official checks: 3 FAIL_TO_PASS (digits kept in "Top 10
Widgets", in "2024", inside "mp3") and 4 PASS_TO_PASS (lower case, punctuation dropped, the
empty title, underscores split). The prediction file holds, for `acme__widgets-1`:

| candidate | what it does | official checks it fails |
| --- | --- | --- |
| sub-regex, char-loop, blank-split, group-runs | four different correct fixes | none: valid |
| char-loop-tidy | char-loop with other spacing | none: near duplicate of char-loop |
| sub-regex-resubmitted | sub-regex with trailing blanks and an index line | exact duplicate of sub-regex |
| reference-copy | the reference, byte for byte | set aside, never labelled |
| digit-words | `[A-Za-z]+|[0-9]+`: "mp3" → "mp-3" | digit_inside_word |
| split-spaces | splits on blanks and `_` only | drops_punctuation |
| word-chars | `\\w+` keeps `_` | splits_underscores |
| first-word | `words[0]`: IndexError on "" | empty |
| letter-first | words must start with a letter: "10" is lost | keeps_digits, digits_only |
| docstring-only | edits the docstring, fixes nothing | all three FAIL_TO_PASS |
| stale | context that is not in the program | does not apply: patch_failed |

plus a row that is no diff and a row for an unknown instance. The suites:

| configuration | tests | rejects |
| --- | --- | --- |
| agent-x__model-1 (the fixture's) | "Route 66 ahead" keeps 66, "ABC" → "abc" | buggy, letter-first, docstring-only |
| agent-y__strong | mp3, punctuation, `_`, "", "Top 10" | buggy and every invalid candidate |
| agent-z__biased | "İstanbul" → "stanbul" (the reference's quirk), "Route 66" | buggy, sub-regex, group-runs, every invalid one but digit-words |

agent-z__biased shows solution bias: sub-regex and group-runs lower-case before they split,
and "İ".lower() is "i" plus a combining dot, so they give "i-stanbul" where the reference
drops the "İ"; the suite rejects two correct fixes for a behaviour the issue never asked for.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from testprism.flows.cli import app
from testprism.storage import Store
from testprism.tasks.model.benchmark import load_benchmark
from tests.gitfixture import INSTANCE_ID, RICH_FAIL_TO_PASS, RICH_PASS_TO_PASS, GitFixture, build_git_fixture

pytestmark = [
    pytest.mark.slow,
    pytest.mark.requires("sandbox"),
]

HEAD = 'import re\n\n\ndef slugify(title: str) -> str:\n    """Lower-case words of `title` joined by hyphens."""\n'
JOIN = '    return "-".join(word.lower() for word in words)\n'
CHAR_LOOP = HEAD + '''\
    words, current = [], ""
    for char in title:
        if char.isascii() and char.isalnum():
            current += char.lower()
        elif current:
            words.append(current)
            current = ""
    if current:
        words.append(current)
    return "-".join(words)
'''
VALID = {
    "sub-regex": HEAD + '    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")\n',
    "char-loop": CHAR_LOOP,
    "blank-split": HEAD + '''\
    kept = "".join(c.lower() if c.isascii() and c.isalnum() else " " for c in title)
    return "-".join(kept.split())
''',
    "group-runs": HEAD.replace("import re\n", "import re\nfrom itertools import groupby\n") + '''\
    runs = groupby(title.lower(), key=lambda c: c.isascii() and c.isalnum())
    return "-".join("".join(chars) for keep, chars in runs if keep)
''',
}
INVALID = {
    "digit-words": HEAD + '    words = re.findall(r"[A-Za-z]+|[0-9]+", title)\n' + JOIN,
    "split-spaces": HEAD + '    words = re.split(r"[\\s_]+", title.strip())\n' + JOIN,
    "word-chars": HEAD + '    words = re.findall(r"\\w+", title)\n' + JOIN,
    "first-word": HEAD + '''\
    words = re.findall(r"[A-Za-z0-9]+", title.lower())
    slug = words[0]
    for word in words[1:]:
        slug += "-" + word
    return slug
''',
    "letter-first": HEAD + '    words = re.findall(r"[A-Za-z][A-Za-z0-9]*", title)\n' + JOIN,
    "docstring-only": (HEAD.replace("joined by", "(digits too) joined by")
                       + '    words = re.findall(r"[A-Za-z]+", title)\n' + JOIN),
}


def check(name: str) -> str:
    return f"tests/test_text.py::test_slugify_{name}"


FAILS = {
    "digit-words": (check("digit_inside_word"),),
    "split-spaces": (check("drops_punctuation"),),
    "word-chars": (check("splits_underscores"),),
    "first-word": (check("empty"),),
    "letter-first": (check("keeps_digits"), check("digits_only")),
    "docstring-only": RICH_FAIL_TO_PASS,
}
#: the testprism panel: the 4 valid ones (exactly 4), and the 5 invalid ones of pairwise
#: disjoint failures, fewest failures first, so docstring-only (overlapping letter-first and
#: digit-words) is left out; the pool panel keeps it
TESTPRISM_INVALID = {"digit-words", "split-spaces", "word-chars", "first-word", "letter-first"}

STRONG_TESTS = '''

def test_slug_edge_cases():
    assert slugify("mp3 Player") == "mp3-player"
    assert slugify("Hello, World!") == "hello-world"
    assert slugify("snake_case name") == "snake-case-name"
    assert slugify("") == ""
    assert slugify("Top 10") == "top-10"
'''
BIASED_TESTS = '''

def test_slug_like_the_reference():
    assert slugify("İstanbul") == "stanbul"
    assert slugify("Route 66") == "route-66"
'''
#: (configuration, state or candidate) → outcome, as the table in the module docstring says
REJECTS = {
    "agent-x__model-1": {"buggy", "letter-first"},
    "agent-y__strong": {"buggy"} | TESTPRISM_INVALID,
    "agent-z__biased": {"buggy", "sub-regex", "group-runs"} | (TESTPRISM_INVALID - {"digit-words"}),
}
#: the leaderboard by hand (one instance: every interval is the point): a = share of the 4
#: valid accepted, r = share of the 5 invalid rejected, f1 = 2ar/(a+r), jvr = 1 iff a = r = 1
LEADERBOARD = {
    "agent-y__strong": dict(grr=1.0, car=1.0, wdr=1.0, f1=1.0, ct_car=1.0, ct_wdr=1.0, ct_f1=1.0, jvr=1.0),
    "agent-x__model-1": dict(grr=1.0, car=1.0, wdr=0.2, f1=2 * 0.2 / 1.2, ct_car=1.0, ct_wdr=0.0, ct_f1=0.0, jvr=0.0),
    "agent-z__biased": dict(grr=1.0, car=0.5, wdr=0.8, f1=2 * 0.5 * 0.8 / 1.3, ct_car=0.0, ct_wdr=0.0, ct_f1=0.0,
                            jvr=0.0),
}


def stale_patch(fx: GitFixture) -> str:
    """A patch whose removed line is not in the program: it applies nowhere."""
    return fx.reference.replace('-    words = re.findall(r"[A-Za-z]+", title)',
                                '-    words = re.findall(r"[A-Za-z]+", title, re.ASCII)')


def prediction_rows(fx: GitFixture) -> list[dict | str]:
    def row(model: str, patch: str, **extra) -> dict:
        return {"instance_id": INSTANCE_ID, "model_name_or_path": model, "model_patch": patch, **extra}

    diffs = {name: fx.diff({"widgets/text.py": text}) for name, text in {**VALID, **INVALID}.items()}
    tidy = fx.diff({"widgets/text.py": CHAR_LOOP.replace("current += char", "current+=char")
                    .replace('words, current = [], ""', 'words,current = [],""')})
    resubmitted = diffs["sub-regex"].replace('"-", title.lower()).strip("-")\n', '"-", title.lower()).strip("-")  \t\n')
    resubmitted = re.sub(r"(?m)^index .*$", "index 0123456..89abcde 100644", resubmitted).rstrip("\n")
    assert resubmitted != diffs["sub-regex"]
    return [
        # official_resolved where a source gave one: digit-words "resolved" is label noise
        row("acme-agents/sub-regex", diffs["sub-regex"], official_resolved=True),
        *(row(f"acme-agents/{name}", diffs[name]) for name in ("char-loop", "blank-split", "group-runs")),
        row("acme-agents/char-loop-tidy", tidy),
        row("acme-agents/digit-words", diffs["digit-words"], official_resolved=True),
        *(row(f"acme-agents/{name}", diffs[name]) for name in ("split-spaces", "word-chars", "first-word")),
        row("acme-agents/letter-first", diffs["letter-first"], official_resolved=False),
        row("acme-agents/docstring-only", diffs["docstring-only"]),
        row("acme-agents/stale", stale_patch(fx)),
        row("other-agents/sub-regex-resubmitted", resubmitted),
        row("copycat/reference-copy", fx.reference),
        row("acme-agents/prose", "I changed the regex in widgets/text.py to keep digits."),
        {"instance_id": "acme__gadgets-7", "model_name_or_path": "acme-agents/sub-regex",
         "model_patch": diffs["sub-regex"]},
    ]


def suite_patch(fx: GitFixture, tests: str) -> str:
    base = (fx.repo / "tests" / "test_text.py").read_text()
    return fx.diff({"tests/test_text.py": base + tests})


class Pipeline:
    """The whole command sequence, run once for the module's tests."""

    def __init__(self, root: Path, work: Path) -> None:
        self.fx = build_git_fixture(root / "fixture", rich_checks=True)
        self.bench, self.store = root / "bench", root / "store"
        self.panel, self.pool, self.strict = root / "panel", root / "pool-panel", root / "strict-panel"
        self.work = work
        self.preds = root / "preds.jsonl"
        self.preds.write_text("".join(json.dumps(r) + "\n" for r in prediction_rows(self.fx)))
        self.suites = root / "suites.jsonl"
        mine = {"agent-y/strong": STRONG_TESTS, "agent-z/biased": BIASED_TESTS}
        self.suites.write_text("".join(json.dumps(r) + "\n" for r in [
            json.loads(self.fx.predictions.read_text()),  # agent-x/model-1: the fixture's generated test patch
            *({"instance_id": INSTANCE_ID, "model_name_or_path": model, "model_patch": suite_patch(self.fx, tests)}
              for model, tests in mine.items()),
        ]))
        self.runner = CliRunner()
        self.flow_runs: dict[str, str] = {}

    def cli(self, *args: str | Path) -> str:
        result = self.runner.invoke(app, [str(a) for a in args])
        assert result.exit_code == 0, f"testprism {' '.join(map(str, args))}:\n{result.output}\n{result.exception!r}"
        return result.output

    def collect(self, label: str, *args: str | Path) -> None:
        before = self.latest_flow_run()
        self.cli("collect", self.bench, "--store", self.store, "--predictions", self.preds, "--work", self.work, *args)
        self.flow_runs[label] = self.latest_flow_run()
        assert self.flow_runs[label] != before

    def latest_flow_run(self) -> str | None:
        return Store(self.store).scan("funnel").select(pl.col("flow_run").max()).collect().item()

    def run(self) -> Pipeline:
        self.cli("import", "swebench", self.fx.rows, "--out", self.bench, "--recipes", self.fx.recipes,
                 "--repos", self.fx.repos)
        self.collect("testprism", "--panel", "testprism", "--out", self.panel)
        self.verifications_first = Store(self.store).scan("verifications").collect().height
        self.collect("pool", "--panel", "pool", "--out", self.pool)
        self.collect("strict", "--panel", "testprism", "--out", self.strict, "--min-valid-distance", "0.99")
        self.verifications_after = Store(self.store).scan("verifications").collect().height
        self.cli("import", "suites", self.suites, "--out", self.panel)
        self.cli("replay", self.panel, "--store", self.store, "--work", self.work)
        self.score_output = self.cli("score", self.store)
        return self

    def candidates(self, label: str) -> dict[str, dict]:
        frame = Store(self.store).scan("candidates").filter(pl.col("flow_run") == self.flow_runs[label]).collect()
        return {r["candidate_id"]: r for r in frame.iter_rows(named=True)}

    def funnel(self, label: str) -> list[dict]:
        frame = Store(self.store).scan("funnel").filter(pl.col("flow_run") == self.flow_runs[label]).collect()
        return frame.sort("step").to_dicts()


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory, work_root) -> Pipeline:
    return Pipeline(tmp_path_factory.mktemp("pipeline"), work_root).run()


def test_the_import_makes_the_rich_checks(pipeline):
    checks = load_benchmark(pipeline.bench).instances[INSTANCE_ID].spec.checks
    assert (checks.fail_to_pass, checks.pass_to_pass) == (RICH_FAIL_TO_PASS, RICH_PASS_TO_PASS)


def test_labels_follow_the_official_checks(pipeline):
    found = pipeline.candidates("testprism")
    for name in VALID:
        assert (found[name]["label"], found[name]["reason"], found[name]["failed_checks"]) == ("valid", None, []), name
    for name, failed in FAILS.items():
        assert (found[name]["label"], found[name]["reason"], tuple(found[name]["failed_checks"])) == (
            "invalid", None, failed), name
    assert (found["stale"]["label"], found["stale"]["reason"]) == (None, "patch_failed")  # unlabelled: does not apply
    # the sources' labels are kept beside ours: digit-words "resolved" is label noise
    official = {cid: (r["official_label"], r["label"]) for cid, r in found.items() if r["official_label"]}
    assert official == {"sub-regex": ("valid", "valid"), "digit-words": ("valid", "invalid"),
                        "letter-first": ("invalid", "invalid")}


def test_duplicates_are_set_aside(pipeline):
    found = pipeline.candidates("testprism")
    dup = found["sub-regex-resubmitted"]
    assert (dup["reason"], dup["duplicate_of"], dup["label"], dup["norm_key"]) == (
        "duplicate", "sub-regex", "valid", found["sub-regex"]["norm_key"])
    copy = found["reference-copy"]
    assert (copy["reason"], copy["label"], copy["in_panel"]) == ("same_as_reference", None, False)
    tidy = found["char-loop-tidy"]
    assert (tidy["reason"], tidy["duplicate_of"], tidy["label"]) == ("near_duplicate", "char-loop", "valid")
    assert len(found) == 14
    assert not any(found[c]["in_panel"] for c in ("sub-regex-resubmitted", "char-loop-tidy", "stale"))


def test_funnel_rows(pipeline):
    def rows(label: str) -> list[tuple[str, int, int]]:
        return [(r["stage"], r["retained"], r["excluded"]) for r in pipeline.funnel(label)]

    common = [("ingest", 14, 2), ("exact_dedup", 12, 2), ("gold_validation", 1, 0), ("verification", 11, 1),
              ("near_dedup", 10, 1)]
    assert rows("testprism") == [*common, ("panel_testprism", 1, 0)]
    assert rows("pool") == [*common, ("panel_pool", 1, 0)]
    assert rows("strict") == [*common, ("panel_testprism", 0, 1)]
    why = {r["stage"]: sorted((e["item"], e["reason"]) for e in r["exclusions"]) for r in pipeline.funnel("testprism")}
    assert why["ingest"] == [(f"{pipeline.preds}:15", "not_a_diff"), (f"{pipeline.preds}:16", "unknown_instance")]
    assert why["exact_dedup"] == [(f"{INSTANCE_ID}/reference-copy", "same_as_reference"),
                                  (f"{INSTANCE_ID}/sub-regex-resubmitted", "duplicate")]
    assert why["verification"] == [(f"{INSTANCE_ID}/stale", "patch_failed")]
    assert why["near_dedup"] == [(f"{INSTANCE_ID}/char-loop-tidy", "near_duplicate")]


def test_verifications_run_once(pipeline):
    # gold: buggy and reference twice each; labels: the 12 candidates left after exact dedup
    # (stale included: its patch fails before any sandbox); the two later collects reuse all
    assert pipeline.verifications_first == 4 + 12
    assert pipeline.verifications_after == pipeline.verifications_first


def test_panels(pipeline):
    found = pipeline.candidates("testprism")
    assert {c for c, r in found.items() if r["in_panel"]} == set(VALID) | TESTPRISM_INVALID
    panel = load_benchmark(pipeline.panel).instances[INSTANCE_ID]
    assert {(c.id, c.label) for c in panel.candidates} == (
        {(c, "valid") for c in VALID} | {(c, "invalid") for c in TESTPRISM_INVALID})
    pool = load_benchmark(pipeline.pool).instances[INSTANCE_ID]
    assert {c.id for c in pool.candidates} == set(VALID) | set(INVALID)
    # thresholds it cannot meet: reported with the reason and the numbers, never padded
    [strict] = pipeline.funnel("strict")[-1]["exclusions"]
    assert (strict["item"], strict["reason"]) == (INSTANCE_ID, "valid_not_diverse")
    assert "mean pairwise AST distance" in strict["detail"] and "≤ 0.99" in strict["detail"]
    assert list((pipeline.strict / "instances").iterdir()) == []


def test_replay_outcomes(pipeline):
    runs = Store(pipeline.store).scan("runs").collect()
    got = {(r["configuration"], r["candidate_id"] or r["state"]): r["outcome"] for r in runs.iter_rows(named=True)}
    states = ["buggy", "reference", *VALID, *TESTPRISM_INVALID]
    assert got == {(config, s): "F" if s in rejected else "P" for config, rejected in REJECTS.items() for s in states}
    assert set(runs["isolation"]) == {"bubblewrap"}  # untrusted suites and patches: never without the sandbox


def test_leaderboard(pipeline):
    board = Store(pipeline.store).read_table("leaderboard")
    got = {r["configuration"]: r for r in board.iter_rows(named=True)}
    assert set(got) == set(LEADERBOARD)
    for config, expected in LEADERBOARD.items():
        assert got[config]["n_instances"] == 1
        for metric, value in expected.items():
            assert got[config][metric] == pytest.approx(value), (config, metric)
        assert got[config]["jvr_lo"] == got[config]["jvr_hi"] == pytest.approx(expected["jvr"])
    assert "agent-y__strong" in pipeline.score_output and "1.000 [1.000, 1.000]" in pipeline.score_output
