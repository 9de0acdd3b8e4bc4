"""Each row's gate verdict, from the gold runs collect already makes (tasks/collect/label.py).

The gate is gold validation read more strictly, not a second mechanism: the same plan
(`gold_plan`: buggy and reference, GOLD_REPEATS times each, under GOLD_POLICY), run by the
same batch executor into the same `verifications` rows (so a `check` followed by a
`collect` runs nothing twice), judged by `gold_verdict` plus what a release gate adds:

- each PASS_TO_PASS check passes on the buggy program too (gold validation asks it of the
  reference only);
- the empty patch resolves nothing. Its state *is* the buggy state by content: `states_of`
  hashes `patch or b""`, and the checked tree of an empty patch is the program untouched,
  with the checks patch over it — for an image instance as well, whose program is read out
  of its image either way. So its verifications have the buggy state's keys and are the
  buggy runs (`empty_plan`); were a key ever to differ, the flow runs it like any other.
  It "resolves" by SWE-bench's rule (`label_of`: every official check passes);
- a row that does not load is a verdict of its own (`load_failed`, with the file and field),
  not an error that stops the others; so is a row an import refused (`refused`, with its
  rows file and line, field and reason: tasks/importing/refusals.py), though it has no
  instance folder, so that the gate's table over an imported file shows every row of it.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from testprism.tasks.collect.label import GOLD_REPEATS, gold_verdict, label_of, unread_before_fix
from testprism.tasks.collect.verification import Verification, candidate_states, plan
from testprism.tasks.execution.batch import ExecutionOptions
from testprism.tasks.execution.junit import select
from testprism.tasks.importing.refusals import read_refusals
from testprism.tasks.model.benchmark import BenchmarkError, Instance, load_instance
from testprism.tasks.model.outcome import Reason, TestResult

#: the empty patch's candidate id in `empty_plan`
EMPTY = "empty-patch"


class GateVerdict(StrEnum):
    """A row's verdict: `ok`, or why it fails the gate (docs/gate.md)."""

    OK = "ok"
    LOAD_FAILED = "load_failed"  #: the instance folder does not load (its file and field in the detail)
    ENV_BUILD_FAILED = "env_build_failed"  #: its environment (or image) could not be had
    BUILD_FAILED = "build_failed"  #: the `[build]` step failed on buggy or reference
    PARSE_FAILED = "parse_failed"  #: no results could be read: the `[checks] parser` read no test out of
    #: a check run's log, or its JUnit report was unreadable (report_unreadable)
    REFERENCE_PATCH_FAILED = "reference_patch_failed"  #: the reference does not apply
    CHECKS_PATCH_FAILED = "checks_patch_failed"  #: the checks patch does not apply
    UNRESOLVED = "unresolved"  #: a gold run timed out, overflowed or lost its sandbox
    UNSTABLE = "unstable"  #: the repeats of a state disagree
    GOLD_FAILS = "gold_fails"  #: a check does not pass on the reference (ids in the detail)
    EMPTY_RESOLVES = "empty_resolves"  #: every check passes on the buggy program: the empty patch resolves it
    F2P_PASSES_BEFORE = "fail_to_pass_passes_before"  #: some FAIL_TO_PASS checks pass on buggy (ids)
    P2P_FAILS_BEFORE = "pass_to_pass_fails_before"  #: some PASS_TO_PASS checks fail on buggy (ids)
    REFUSED = "refused"  #: the importer refused the row (its row, field and reason in the detail)


@dataclass(frozen=True)
class RowVerdict:
    instance_id: str
    source: str
    language: str
    verdict: GateVerdict
    detail: str = ""


@dataclass(frozen=True)
class Rows:
    """A benchmark's instance folders: those that load, and a verdict for each that does not;
    and a verdict for each row its imports refused (tasks/importing/refusals.py)."""

    instances: dict[str, Instance]
    unloadable: list[RowVerdict]
    refused: list[RowVerdict] = field(default_factory=list)


def _declared(folder: Path) -> tuple[str, str]:
    """The source and language an unloadable instance.toml declares, where it can be read."""
    try:
        data = tomllib.loads((folder / "instance.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return "?", "?"
    source, language = data.get("source"), data.get("language", "python")
    return (source if isinstance(source, str) else "?"), (language if isinstance(language, str) else "?")


def load_rows(root: Path) -> Rows:
    """Every folder of `root/instances/`, one by one: the loader refuses a whole benchmark
    for one bad row, the gate gives that row its verdict and judges the others."""
    folder = root / "instances"
    if not folder.is_dir():
        raise BenchmarkError(folder, "(folder)", "missing: a benchmark holds instances/<id>/")
    instances: dict[str, Instance] = {}
    unloadable: list[RowVerdict] = []
    for inst in sorted(p for p in folder.iterdir() if p.is_dir()):
        try:
            instances[inst.name] = load_instance(inst)
        except BenchmarkError as exc:
            unloadable.append(RowVerdict(inst.name, *_declared(inst), GateVerdict.LOAD_FAILED, str(exc)))
    refusals = read_refusals(root)
    refused = [RowVerdict(key, entry.get("source", "?"), entry.get("language", "?"), GateVerdict.REFUSED,
                          f"{entry.get('row', key)}: field {entry.get('field', '?')}: {entry.get('reason', '')}")
               for key, entry in sorted(refusals.items()) if key not in instances
               and key not in {v.instance_id for v in unloadable}]
    return Rows(instances, unloadable, refused)


def empty_plan(instance: Instance, options: ExecutionOptions) -> list[Verification]:
    """The empty patch's verifications, GOLD_REPEATS times: by content the buggy state's
    (module docstring), so their keys are those of `gold_plan`'s buggy runs."""
    empty = candidate_states(instance, {EMPTY: ""})[EMPTY]
    return plan(instance, [empty], options, GOLD_REPEATS)


def _results(row: Mapping, ids: Sequence[str]) -> dict[str, str]:
    cases = tuple(TestResult(t["name"], t["outcome"], t["message"] or "") for t in row["tests"] or ())
    return select(cases, tuple(ids))


#: run reasons that are a verdict of their own, ahead of what gold validation makes of them
_RUN_VERDICTS = {Reason.ENVIRONMENT_FAILED: GateVerdict.ENV_BUILD_FAILED, Reason.BUILD_FAILED: GateVerdict.BUILD_FAILED,
                 Reason.PARSE_FAILED: GateVerdict.PARSE_FAILED,
                 Reason.REPORT_UNREADABLE: GateVerdict.PARSE_FAILED}
_GOLD_VERDICTS = {Reason.REFERENCE_PATCH_FAILED: GateVerdict.REFERENCE_PATCH_FAILED,
                  Reason.CHECKS_PATCH_FAILED: GateVerdict.CHECKS_PATCH_FAILED, Reason.UNRESOLVED: GateVerdict.UNRESOLVED,
                  Reason.UNSTABLE: GateVerdict.UNSTABLE, Reason.REFERENCE_FAILS: GateVerdict.GOLD_FAILS}


def gate_verdict(instance: Instance, gold_rows: Sequence[dict], empty_rows: Sequence[dict]) -> RowVerdict:
    """The row's verdict from the stored rows of its `gold_plan` and `empty_plan`."""

    def verdict(what: GateVerdict, detail: str = "") -> RowVerdict:
        return RowVerdict(instance.id, instance.source, instance.spec.language, what, detail)

    for row in sorted(gold_rows, key=lambda r: (r["state"] != "buggy", r["repeat"])):
        reason = Reason(row["reason"]) if row["reason"] else None
        if reason in _RUN_VERDICTS and not unread_before_fix(row):
            return verdict(_RUN_VERDICTS[reason], f"on {row['state']}: {(row['stdout_tail'] or '')[-300:]}".strip())
    gold = gold_verdict(instance, gold_rows)
    if gold.reason is Reason.PASSES_BEFORE:
        resolves = all(label_of(instance, row).label == "valid" for row in empty_rows)
        return verdict(GateVerdict.EMPTY_RESOLVES, "every check passes on the buggy program") if resolves \
            else verdict(GateVerdict.F2P_PASSES_BEFORE, gold.detail)
    if gold.reason is not None:
        return verdict(_GOLD_VERDICTS.get(gold.reason, GateVerdict.UNRESOLVED), gold.detail)
    p2p = instance.spec.checks.pass_to_pass
    failing = sorted({i for row in gold_rows if row["state"] == "buggy"
                      for i, outcome in _results(row, p2p).items() if outcome != "passed"})
    if failing:
        return verdict(GateVerdict.P2P_FAILS_BEFORE, ", ".join(failing))
    return verdict(GateVerdict.OK)
