"""Peer cross-validation (TestHelix's PCV): K agents each wrote a test and a repair for an
instance; every test runs on the buggy program, the reference and every agent's repair, and
the disagreements say which tests to distrust.

Without a panel of labelled candidates, the evidence is the peers and the instance's
official checks (its reference tests):
- a repair is *accepted by consensus* when every other test that is itself sound (fails
  on the buggy program, passes on the reference) accepts it and the official checks pass
  on it; *rejected by consensus* when those tests all reject it and the checks fail on it;
- a test that rejects a repair accepted by consensus is **over-restrictive** (solution
  bias: it rejects a correct fix written differently), one that accepts a repair rejected
  by consensus is **weak** (it lets a wrong fix through); a test that passes on the buggy
  program is weak as well, one that fails on the reference over-restrictive;
- the others are **validated**: their instance's final suite merges them.

The runs are replay's runs (tasks/replay/runs.py `run_spec`: same keys, reuse and store;
a repair is a state of kind `repair`, unlabelled, so scoring never counts it), and the
checks on repairs are collect's verifications.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path

import polars as pl

from testprism.storage import Store
from testprism.tasks.collect.label import label_of
from testprism.tasks.collect.verification import Verification, candidate_states
from testprism.tasks.collect.verification import plan as verification_plan
from testprism.tasks.execution.batch import ExecutionOptions
from testprism.tasks.generate.generation import GenerationSpec
from testprism.tasks.generate.strategy import Caps
from testprism.tasks.generate.outputs import generated_folder
from testprism.tasks.generate.review import Review, ReviewItem, described, shown
from testprism.tasks.model.benchmark import Instance, Suite, load_suite
from testprism.tasks.model.state import State, states_of
from testprism.tasks.replay.runs import RunSpec, run_spec

#: how much of the disagreeing run's output a feedback round is shown
FEEDBACK_OUTPUT_CHARS = 4_000


class Verdict(StrEnum):
    VALIDATED = "validated"
    OVER_RESTRICTIVE = "over_restrictive"
    WEAK = "weak"


@dataclass(frozen=True)
class Peer:
    """One agent's output on one instance: its test and, when it wrote one, its repair."""

    spec: GenerationSpec
    suite: Suite
    repair: State | None
    repair_diff: bytes

    @property
    def name(self) -> str:
        return self.spec.configuration


def kept_keys(specs: Sequence[GenerationSpec], settled: Mapping[str, dict]) -> dict[str, dict[str, str]]:
    """configuration → instance id → key of its kept generation."""
    kept: dict[str, dict[str, str]] = {}
    for spec in specs:
        kept.setdefault(spec.configuration, {})
        row = settled.get(spec.key)
        if row is not None and row["reason"] is None and row["suite_hash"]:
            kept[spec.configuration][spec.instance.id] = spec.key
    return kept


def peers_of(store: Store, specs: Sequence[GenerationSpec], kept: Mapping[str, Mapping[str, str]]
             ) -> dict[str, list[Peer]]:
    """instance id → its peers (the agents whose suite the store keeps), in `specs` order.
    `kept` is configuration → instance id → generation key."""
    peers: dict[str, list[Peer]] = {}
    for spec in specs:
        key = kept.get(spec.configuration, {}).get(spec.instance.id)
        if key is None:
            continue
        folder = generated_folder(store, key)
        suite = load_suite(folder / "suite", spec.configuration, spec.instance.id)
        diff = (folder / "repair.diff").read_bytes() if (folder / "repair.diff").is_file() else b""
        state = None
        if diff:
            made = candidate_states(spec.instance, {spec.configuration: diff.decode(errors="replace")})
            state = _as_repair(made[spec.configuration])
        peers.setdefault(spec.instance.id, []).append(Peer(spec, suite, state, diff))
    return peers


def _as_repair(state: State) -> State:
    """A candidate state re-kinded: same patch and hash (so the same work is reused), but
    unlabelled and never mistaken for a panel candidate."""
    return State(state.instance_id, "repair", state.candidate_id, None, state.patch, state.hash)


def left_of(caps: Caps, first: Mapping) -> Caps:
    """What a first run left of its caps: its feedback round spends only that, so the
    round is "within the same budget"."""
    return caps.model_copy(update={"run_tokens": max(1, caps.run_tokens - (first["total_tokens"] or 0)),
                                   "run_steps": max(1, caps.run_steps - (first["requests"] or 0))})


def asked_again(flag: Flag, peers: Sequence[Peer], cells: pl.DataFrame, settled: Mapping[str, Mapping],
                round_: int) -> GenerationSpec:
    """The flagged test's agent, run again with what its test got wrong."""
    peer = next(p for p in peers if p.name == flag.test)
    first = settled[peer.spec.key]
    return replace(peer.spec, caps=left_of(peer.spec.caps, first), feedback=feedback(flag, peers, cells),
                   round=round_)


def revised(store: Store, peers: Mapping[str, list[Peer]], again: Mapping[tuple[str, str], GenerationSpec],
            settled: Mapping[str, Mapping]) -> dict[str, list[Peer]]:
    """The peers after a feedback round: a revised test replaces its agent's first one
    (when the round kept a suite); the repairs stay, so the matrix compares like with like."""
    done = {(i, n): s for (i, n), s in again.items()
            if s.key in settled and settled[s.key]["reason"] is None and settled[s.key]["suite_hash"]}
    out: dict[str, list[Peer]] = {}
    for instance_id, group in peers.items():
        out[instance_id] = []
        for peer in group:
            spec = done.get((instance_id, peer.name))
            if spec is None:
                out[instance_id].append(peer)
                continue
            suite = load_suite(generated_folder(store, spec.key) / "suite", peer.name, instance_id)
            out[instance_id].append(replace(peer, spec=spec, suite=suite))
    return out


def crossval_runs(peers: Mapping[str, list[Peer]], options: ExecutionOptions) -> list[RunSpec]:
    """Every peer's test on the buggy program, the reference and every peer's repair."""
    specs = []
    for group in peers.values():
        instance = group[0].spec.instance
        buggy, reference = states_of(instance)[:2]
        states = [buggy, reference, *(p.repair for p in group if p.repair is not None)]
        specs += [run_spec(p.name, instance, state, p.suite, None, options) for p in group for state in states]
    return specs


def repair_checks(peers: Mapping[str, list[Peer]], options: ExecutionOptions) -> list[Verification]:
    """The official checks on every repair (collect's verification of a candidate)."""
    return [v for group in peers.values() for p in group if p.repair is not None
            for v in verification_plan(p.spec.instance, [p.repair], options)]


def check_labels(instances: Mapping[str, Instance], checks: Sequence[Verification],
                 rows: Mapping[str, dict]) -> dict[tuple[str, str], str | None]:
    """(instance id, repair's agent) → valid | invalid | None (the checks did not settle it)."""
    return {(v.instance.id, v.state.candidate_id): label_of(instances[v.instance.id], rows[v.key]).label
            for v in checks if v.key in rows}


def matrix(specs: Sequence[RunSpec], runs: pl.DataFrame) -> pl.DataFrame:
    """The K×(K+2) matrix per instance: test (configuration) × state (buggy, reference or the
    repair's agent) → outcome, with the run's output tail."""
    newest = (runs.filter(pl.col("run_key").is_in([s.run_key for s in specs])).sort("started_at")
              .unique("run_key", keep="last"))
    by_key = {r["run_key"]: r for r in newest.iter_rows(named=True)}
    cells = []
    for spec in specs:
        row = by_key.get(spec.run_key)
        cells.append({"instance_id": spec.instance.id, "test": spec.configuration,
                      "state": spec.state.candidate_id if spec.state.kind == "repair" else spec.state.kind,
                      "outcome": row["outcome"] if row else "E", "output": (row or {}).get("stdout_tail") or ""})
    return pl.DataFrame(cells, schema={"instance_id": pl.String, "test": pl.String, "state": pl.String,
                                       "outcome": pl.String, "output": pl.String})


@dataclass(frozen=True)
class Flag:
    instance_id: str
    test: str
    verdict: Verdict
    evidence: str | None  #: the state it disagreed on: a repair's agent, buggy or reference
    detail: str


def flags(cells: pl.DataFrame, labels: Mapping[tuple[str, str], str | None]) -> list[Flag]:
    """Each test's verdict by the rules of the module docstring."""
    found: list[Flag] = []
    for (instance_id,), group in cells.group_by(["instance_id"], maintain_order=True):
        outcome = {(r["test"], r["state"]): r["outcome"] for r in group.iter_rows(named=True)}
        tests = list(dict.fromkeys(group["test"]))
        repairs = [s for s in dict.fromkeys(group["state"]) if s not in ("buggy", "reference")]
        sound = {t for t in tests if outcome[(t, "buggy")] == "F" and outcome[(t, "reference")] == "P"}
        for test in tests:
            if outcome[(test, "buggy")] == "P":
                found.append(Flag(instance_id, test, Verdict.WEAK, "buggy", "passes on the buggy program"))
                continue
            if outcome[(test, "reference")] == "F":
                found.append(Flag(instance_id, test, Verdict.OVER_RESTRICTIVE, "reference", "fails on the reference"))
                continue
            flag = Flag(instance_id, test, Verdict.VALIDATED, None, "")
            for repair in repairs:
                peers = [outcome[(t, repair)] for t in sound - {test}]
                label = labels.get((instance_id, repair))
                mine = outcome[(test, repair)]
                if peers and all(o == "P" for o in peers) and label == "valid" and mine == "F":
                    flag = Flag(instance_id, test, Verdict.OVER_RESTRICTIVE, repair,
                                f"rejects {repair}'s repair, which {len(peers)} sound peer test(s) and the checks accept")
                    break
                if peers and all(o == "F" for o in peers) and label == "invalid" and mine == "P":
                    flag = Flag(instance_id, test, Verdict.WEAK, repair,
                                f"accepts {repair}'s repair, which {len(peers)} sound peer test(s) and the checks reject")
                    break
            found.append(flag)
    return found


def flag_table(found: Sequence[Flag], round_: int, reviews: Mapping[tuple[str, str], Review] | None = None,
               final: Mapping[tuple[str, str], str] | None = None) -> pl.DataFrame:
    """A round's `crossval_flags` rows: the verdict `final` gives (execution's without one)
    and, beside it, execution's own and the review's verdict and rationale."""
    rows = []
    for f in found:
        pair = (f.instance_id, f.test)
        review = (reviews or {}).get(pair)
        rows.append({"instance_id": f.instance_id, "test": f.test, "round": round_,
                     "verdict": (final or {}).get(pair, f.verdict.value), "evidence": f.evidence, "detail": f.detail,
                     "execution_verdict": f.verdict.value, "review": review.verdict if review else None,
                     "review_rationale": (review.rationale or review.error) if review else None,
                     "review_model": review.model if review else None})
    return pl.DataFrame(rows, schema={"instance_id": pl.String, "test": pl.String, "round": pl.Int32,
                                      "verdict": pl.String, "evidence": pl.String, "detail": pl.String,
                                      "execution_verdict": pl.String, "review": pl.String,
                                      "review_rationale": pl.String, "review_model": pl.String})


def review_item(flag: Flag, peers: Sequence[Peer], cells: pl.DataFrame) -> ReviewItem:
    """What the semantic review of a flagged test is shown: the instruction, the test, the
    state it disagreed on and both outputs there (its own and the first peer test's that
    disagrees with it)."""
    here = cells.filter((pl.col("instance_id") == flag.instance_id) & (pl.col("state") == flag.evidence))
    outcome = {r["test"]: (r["outcome"], r["output"]) for r in here.iter_rows(named=True)}
    mine = outcome.get(flag.test, ("E", ""))
    other = next((out for test, (o, out) in outcome.items() if test != flag.test and o != mine[0]), "")
    peer = next(p for p in peers if p.name == flag.test)
    instance = peer.spec.instance
    if flag.evidence == "reference":
        diff = instance.reference
    else:
        diff = next((p.repair_diff for p in peers if p.name == flag.evidence), b"")
    files = {rel: (peer.suite.folder / rel).read_text(encoding="utf-8", errors="replace") for rel in peer.suite.files}
    return ReviewItem(flag.instance_id, flag.test, flag.verdict.value, flag.evidence, flag.detail,
                      (instance.folder / "instruction.md").read_text(encoding="utf-8", errors="replace"),
                      described(files), shown(diff.decode(errors="replace")), shown(mine[1]), shown(other))


def feedback(flag: Flag, peers: Sequence[Peer], cells: pl.DataFrame) -> bytes:
    """What the flagged test's agent is told in the feedback round: the repair it disagreed
    on (or the buggy/reference state) and its own test's output there."""
    output = cells.filter((pl.col("instance_id") == flag.instance_id) & (pl.col("test") == flag.test)
                          & (pl.col("state") == flag.evidence))["output"].to_list()
    tail = (output[0] if output else "")[-FEEDBACK_OUTPUT_CHARS:]
    lines = [f"# Your test was flagged {flag.verdict.value.replace('_', '-')}", "", flag.detail + ".", ""]
    repair = next((p for p in peers if p.name == flag.evidence), None)
    if flag.verdict is Verdict.OVER_RESTRICTIVE:
        lines.append("A correct fix may be written differently from the one you had in mind; test the behaviour "
                     "the issue asks for, not one implementation of it.")
    else:
        lines.append("Your test lets a wrong fix through; check the behaviour the issue asks for more strictly.")
    if repair is not None:
        lines += ["", "The repair in question:", "", "```diff", repair.repair_diff.decode(errors="replace").rstrip(),
                  "```"]
    lines += ["", "Your test's output on it:", "", "```", tail.rstrip(), "```", ""]
    return "\n".join(lines).encode()


#: the merged suite's entry: each validated test, run as it ran alone (its files at tmp/), its
#: JUnit report kept, and the parts' reports merged into the one at $TESTPRISM_JUNIT (each
#: part a <testsuite> named after its agent; a part whose report is missing or does not
#: start with a testsuite(s) element is left out, so that one broken part keeps the others')
MERGED_ENTRY = """#!/usr/bin/env bash
# testprism crossval: the validated tests of this instance's agents, each run as it ran alone
set -u
cd "$(dirname "$0")/.."
report="${TESTPRISM_JUNIT:-/dev/null}"
parts=$(mktemp -d)
mv tmp .testprism-merged
status=0
for agent in .testprism-merged/suites/*/; do
  name=$(basename "$agent")
  cp -r "$agent" tmp
  TESTPRISM_JUNIT="$parts/$name.xml" bash tmp/run_tests.sh || status=1
  rm -rf tmp
done
mv .testprism-merged tmp
{
  printf '<?xml version="1.0" encoding="utf-8"?>\\n<testsuites>\\n'
  for part in "$parts"/*.xml; do
    [ -f "$part" ] || continue
    body=$(sed -e '1s/^\\xEF\\xBB\\xBF//' -e '1s/^[[:space:]]*<?xml[^>]*?>//' "$part")
    case "$(printf '%s' "$body" | tr -d '[:space:]' | head -c 10)" in
      "<testsuite") printf '<testsuite name="%s">\\n%s\\n</testsuite>\\n' "$(basename "$part" .xml)" "$body" ;;
    esac
  done
  printf '</testsuites>\\n'
} > "$report"
rm -rf "$parts"
exit $status
"""


def write_merged(peers: Sequence[Peer], validated: set[str], target: Path) -> int:
    """The instance's final suite in `target`: the validated peers' suites under
    `suites/<agent>/` and an entry that runs each; how many it merged."""
    chosen = [p for p in peers if p.name in validated]
    if not chosen:
        return 0
    target.mkdir(parents=True)
    (target / "run_tests.sh").write_text(MERGED_ENTRY)
    for peer in chosen:
        for rel in peer.suite.files:
            dest = target / "suites" / peer.name / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes((peer.suite.folder / rel).read_bytes())
    return len(chosen)
