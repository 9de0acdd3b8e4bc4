"""Why a configuration failed an instance jointly (S_i = 0), decided from stored data.

TestPrism annotates failed trajectories by hand into coverage gaps, faulty checks and
execution-logic errors; here the same three kinds are assigned automatically, one row per
(configuration, instance) with S_i = 0, by the first rule that matches (docs/report.md,
"Failure taxonomy"):

1. `execution_logic_error`: the reference run is not `P` and one of its failing cases is an
   error of the suite's own code (a JUnit `error` case, or a message naming NameError,
   ImportError, SyntaxError, a missing fixture, a Go build failure, a JavaScript
   ReferenceError...); or, when its report holds no failing case (a suite that reports by
   its exit status), its output shows a collection error or a traceback whose innermost
   frame lies in the suite's own files (tasks/score/rejection.py) — by that evidence, never
   by the missing report;
2. `coverage_gap`: the buggy program passes and the suite executed none of the reference's
   changed lines on the reference (ΔC = 0); or an invalid candidate passes and the suite,
   run on that candidate's state, did not execute a code line where the candidate differs
   from the reference (`scores/candidate_coverage`: `evidence_basis = candidate_coverage`).
   Where that was not measured (an unmeasured language, a failed run, no code line
   differs), the approximation decides instead: a reference-changed line of a reference
   hunk the candidate also changes was not executed on the reference
   (`evidence_basis = reference_coverage`);
3. `faulty_check`: the suite ran the changed lines but judged wrongly: it rejects the
   reference or a valid candidate (the failing test and its message are the evidence; with
   no failing case, an assertion in its output, or for a valid candidate any crash of it),
   lets the buggy program pass although ΔC > 0, or accepts an invalid candidate every line
   of whose difference from the reference it executed on the candidate's state (or, by the
   approximation, whose overlapping reference-changed lines it executed on the reference).

What none of these can decide stays visible instead of being guessed: `unresolved` (no
disagreement but unresolved or missing runs) and `unclassified` (an accepted invalid
candidate or a passing buggy program without the coverage the rule needs, or a rejection
without a failing case whose output tells a crash from a rejection by nothing).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

import polars as pl
from unidiff.errors import UnidiffParseError

from testprism.storage import SCHEMAS, Store
from testprism.tasks.model import patches
from testprism.storage.readers import latest_runs
from testprism.tasks.score.rejection import EXECUTION_LOGIC_ERROR, FAULTY_CHECK, UNCLASSIFIED, read_rejection

log = logging.getLogger(__name__)

#: The kinds, in the order their rules are tried; the last two are what no rule decided.
KINDS = ("execution_logic_error", "coverage_gap", "faulty_check", "unresolved", "unclassified")

#: A failing case's message that names an error of the suite's own code rather than an
#: assertion on the program: Python (pytest), Go (go test / gotestsum), JavaScript (node).
OWN_CODE_ERROR = (
    r"(?i:\bfixture '[^']*' not found)"
    r"|\b(NameError|ImportError|ModuleNotFoundError|SyntaxError|IndentationError|TabError|UnboundLocalError)\b"
    r"|AttributeError: module '(tmp\.|tests?\.)?test_\w*'"
    r"|\[build failed\]|\bsetup failed\b|\bundefined: \w|\bcannot use \S+ .* as |\bimported and not used\b"
    r"|\bReferenceError\b|\bCannot find module\b|\bERR_MODULE_NOT_FOUND\b"
)

#: Each finding, in the order its states are looked at within a kind.
FINDINGS = ("reference_not_accepted", "buggy_not_rejected", "valid_rejected", "invalid_accepted")

EVIDENCE_CHARS = 500


def _conform(name: str, frame: pl.DataFrame) -> pl.DataFrame:
    schema = SCHEMAS[name]
    return pl.from_arrow(frame.to_arrow().select(schema.names).cast(schema))


def _empty_taxonomy() -> pl.DataFrame:
    return pl.from_arrow(SCHEMAS["failure_taxonomy"].empty_table())


# -- which reference-changed lines a candidate's hunks overlap ----------------------------------


def overlapping_reference_lines(reference: bytes | str, candidate: bytes | str) -> list[str] | None:
    """The reference-changed lines (`path:line`, reference numbering, as coverage's
    `missed_lines`) of the reference hunks a candidate's hunks overlap on the buggy side
    (both diffs are against the buggy program; a hunk's extent includes its context).
    None when either diff cannot be read."""
    try:
        ref, cand = patches.hunks(reference, "following"), patches.hunks(candidate, "following")
    except (UnidiffParseError, ValueError):
        return None
    lines: set[str] = set()
    for hunk in ref:
        if any(c.path == hunk.path and c.source.start < hunk.source.stop and hunk.source.start < c.source.stop
               for c in cand):
            lines.update(f"{hunk.path}:{n}" for n in hunk.lines)
    return sorted(lines, key=lambda s: (s.rsplit(":", 1)[0], int(s.rsplit(":", 1)[1])))


def candidate_overlaps(benchmark_root: Path | str, instance_ids: Iterable[str] | None = None) -> pl.DataFrame:
    """`instance_id, candidate_id, overlap` for every candidate of the benchmark's instances:
    the reference-changed lines its hunks overlap (overlapping_reference_lines)."""
    from testprism.tasks.model.benchmark import BenchmarkError, load_instance

    root = Path(benchmark_root)
    wanted = sorted(set(instance_ids)) if instance_ids is not None else sorted(
        p.name for p in (root / "instances").iterdir() if p.is_dir())
    rows = []
    for instance_id in wanted:
        try:
            instance = load_instance(root / "instances" / instance_id)
        except (BenchmarkError, OSError) as exc:
            log.warning("taxonomy: no diffs for %s: %s", instance_id, exc)
            continue
        for candidate in instance.candidates:
            rows.append({"instance_id": instance_id, "candidate_id": candidate.id,
                         "overlap": overlapping_reference_lines(instance.reference, candidate.patch)})
    return pl.DataFrame(rows, schema={"instance_id": pl.String, "candidate_id": pl.String,
                                      "overlap": pl.List(pl.String)})


# -- the rules ---------------------------------------------------------------------------------


def _failing_case(tests: pl.Expr, own_code: bool) -> pl.Expr:
    """The first failing case (`name: message`) that is (own_code) or is not an error of
    the suite's own code; null when there is none."""
    case = pl.element()
    failing = case.struct.field("outcome").is_in(["failed", "error"])
    message = case.struct.field("message").fill_null("")
    own = (case.struct.field("outcome") == "error") | message.str.contains(OWN_CODE_ERROR)
    picked = tests.list.eval(
        pl.when(failing & (own if own_code else ~own))
        .then(pl.concat_str(case.struct.field("name").fill_null("?"), pl.lit(": "), message))
    ).list.drop_nulls()
    return picked.list.first()


#: a disagreement's row: which run of which cell
KEYS = ["configuration", "instance_id", "state", "candidate_id"]
CELL = ["configuration", "instance_id"]
_OUTCOME, _STATE, _LABEL, _FINDING = pl.col("outcome"), pl.col("state"), pl.col("label"), pl.col("finding")
#: the runs whose details (JUnit cases, output) are read: rejections of the reference or of a
#: valid candidate. As a filter on the scan it is pushed into the Parquet reader, which then
#: decodes the heavy columns of those rows only, not of the million others
_REJECTED = (_OUTCOME != "P") & ((_STATE == "reference") | (_LABEL == "valid"))
_TESTS = pl.col("tests").fill_null([])
_OWN_ERROR = _failing_case(_TESTS, own_code=True)
_FAILING = _TESTS.list.eval(pl.element().struct.field("outcome").is_in(["failed", "error"])).list.any()
_REJECTIONS = ["reference_not_accepted", "valid_rejected"]
_COMPLETED = pl.col("reason").is_null()
#: coverage of the accepted invalid candidate measured on its own state, with at least one
#: differing code line counted
_OWN = ((_FINDING == "invalid_accepted") & (pl.col("own_changed") > 0)).fill_null(False)
_OWN_MISSED = pl.col("own_missed").fill_null([])
_DELTA_C = pl.col("delta_c")
_COVERED = _DELTA_C.is_not_null()
_MISSED_HERE = pl.col("overlap").list.set_intersection(pl.col("missed_lines").fill_null([]))


def failure_taxonomy(store: Store, instance_scores: pl.DataFrame, coverage: pl.DataFrame | None = None,
                     overlaps: pl.DataFrame | None = None,
                     candidate_coverage: pl.DataFrame | None = None, latest: pl.DataFrame | None = None) -> pl.DataFrame:
    """`scores/failure_taxonomy`: one row per (configuration, instance) with S_i = 0.

    `coverage` is `scores/coverage` (None: not measured, so the coverage rules cannot
    decide); `candidate_coverage` is `scores/candidate_coverage` (the accepted invalid
    candidates measured on their own states; None or a missing row: the approximation
    from `coverage` and `overlaps` decides); `overlaps` is candidate_overlaps' table
    (None: no diffs, so an accepted invalid candidate without candidate coverage cannot be
    placed). `latest` is `latest_runs(store)` when the caller has it already.

    The module docstring's rules, each a function below: the disagreements (`_findings`),
    rule 1 and the rejections' part of rule 3 (`_rejection_kinds`), the coverage the others
    read (`_with_coverage`), rules 2 and 3 (`_KIND`), the deciding disagreement of each cell
    (`_deciding`), and its evidence (`_EVIDENCE`, `_BASIS`)."""
    cells = instance_scores.filter(pl.col("s") == 0).select(*CELL)
    if cells.is_empty():
        return _empty_taxonomy()
    found = _findings(latest_runs(store) if latest is None else latest, cells)
    rejections = _rejection_kinds(_details(store, found.filter(_FINDING.is_in(_REJECTIONS))))
    runs = _with_coverage(found.join(rejections, on=KEYS, how="left", nulls_equal=True),
                          coverage, candidate_coverage, overlaps)
    picked = _deciding(runs)
    decided = picked.with_columns(evidence=_EVIDENCE, evidence_basis=_BASIS).select(
        *CELL, "kind", "finding", "state", "candidate_id", "evidence", "evidence_basis")
    table = (
        instance_scores.filter(pl.col("s") == 0).select(*CELL, "source")
        .join(decided, on=CELL, how="left")
        .with_columns(
            kind=pl.col("kind").fill_null("unresolved"),
            evidence=pl.col("evidence").fill_null("no disagreement: unresolved (E) or missing runs"),
            evidence_basis=pl.col("evidence_basis").fill_null("run_reason"),
        )
        .sort(*CELL)
    )
    return _conform("failure_taxonomy", table)


def _findings(latest: pl.DataFrame, cells: pl.DataFrame) -> pl.DataFrame:
    """Every run of a failed cell that disagrees with its state's expected outcome, named
    by its finding."""
    finding = (
        pl.when((_STATE == "reference") & (_OUTCOME != "P")).then(pl.lit("reference_not_accepted"))
        .when((_STATE == "buggy") & (_OUTCOME == "P")).then(pl.lit("buggy_not_rejected"))
        .when((_LABEL == "valid") & (_OUTCOME == "F")).then(pl.lit("valid_rejected"))
        .when((_LABEL == "invalid") & (_OUTCOME == "P")).then(pl.lit("invalid_accepted"))
    )
    return (
        latest.lazy()
        .with_columns(finding=finding)
        .filter(_FINDING.is_not_null())
        .join(cells.lazy(), on=CELL, how="semi")
        .select(*KEYS, "finding", "outcome", "started_at")
        .collect()
    )


def _details(store: Store, rows: pl.DataFrame) -> pl.DataFrame:
    """The heavy columns (reason, exit code, JUnit cases, output) of the runs in `rows`,
    which are rejections: read for those only."""
    match = [*KEYS, "started_at", "outcome"]
    return (
        store.scan("runs")
        .filter(_REJECTED)
        .select(*match, "reason", "exit_code", "tests", "stdout_tail")
        .join(rows.lazy().select(match), on=match, how="semi", nulls_equal=True)
        .unique(KEYS, keep="any")
        .collect()
        .drop("started_at", "outcome")
    )


def _rejection_kinds(details: pl.DataFrame) -> pl.DataFrame:
    """Rule 1 on the reference's rejections, and rule 3's on a valid candidate's. A failing
    JUnit case decides: the suite's own error on the reference is an execution-logic error,
    any other failing case a faulty check. Without one, the run's output does
    (rejection.read_rejection, its deciding line kept as `reading`): on the reference its
    kind as read; on a valid candidate a faulty check whatever it shows (a suite that runs
    on the reference and breaks on a correct rewrite judges the rewrite), `unclassified`
    when it shows nothing. A run that did not complete leaves it unresolved."""
    judged = details.with_columns(
        rejection_kind=pl.when(~_COMPLETED).then(pl.lit("unresolved"))
        .when(_OWN_ERROR.is_not_null() & (_STATE == "reference")).then(pl.lit(EXECUTION_LOGIC_ERROR))
        .when(_FAILING).then(pl.lit(FAULTY_CHECK)),
        reading=pl.lit(None, pl.String))
    by_output = judged.filter(pl.col("rejection_kind").is_null())
    outputs = by_output["stdout_tail"].fill_null("").to_list()
    read = {output: read_rejection(output) for output in set(outputs)}  # a store repeats its outputs
    readings = [read[output] for output in outputs]
    kinds = [r.kind if state == "reference" or r.kind == UNCLASSIFIED else FAULTY_CHECK
             for r, state in zip(readings, by_output["state"].to_list(), strict=True)]
    by_output = by_output.with_columns(rejection_kind=pl.Series(kinds, dtype=pl.String),
                                       reading=pl.Series([r.why for r in readings], dtype=pl.String))
    return pl.concat([judged.filter(pl.col("rejection_kind").is_not_null()), by_output])


def _with_coverage(runs: pl.DataFrame, coverage: pl.DataFrame | None, candidate_coverage: pl.DataFrame | None,
                   overlaps: pl.DataFrame | None) -> pl.DataFrame:
    """The disagreements with what rules 2 and 3 read: the suite's coverage of the reference
    change (ΔC, missed lines), the accepted candidate's coverage on its own state, and its
    hunks' overlap with the reference's; each absent table read as not measured."""
    if coverage is None or coverage.is_empty():
        coverage = pl.DataFrame(schema={"configuration": pl.String, "instance_id": pl.String,
                                        "delta_c": pl.Float64, "missed_lines": pl.List(pl.String)})
    runs = runs.join(coverage.select(*CELL, "delta_c", "missed_lines"), on=CELL, how="left")
    if candidate_coverage is None or candidate_coverage.is_empty():
        candidate_coverage = pl.DataFrame(schema={
            "configuration": pl.String, "instance_id": pl.String, "candidate_id": pl.String, "changed_lines": pl.Int32,
            "executed_lines": pl.List(pl.String), "missed_lines": pl.List(pl.String), "reason": pl.String,
            "coverage_key": pl.String})
    runs = runs.join(
        candidate_coverage.select(*CELL, "candidate_id", own_changed="changed_lines", own_executed="executed_lines",
                                  own_missed="missed_lines", own_reason="reason", own_key="coverage_key"),
        on=[*CELL, "candidate_id"], how="left")
    if overlaps is None:
        return runs.with_columns(overlap=pl.lit(None, dtype=pl.List(pl.String)))
    return runs.join(overlaps.select("instance_id", "candidate_id", "overlap"), on=["instance_id", "candidate_id"],
                     how="left")


#: rules 2 and 3 (and the rejections' kinds, rule 1's for the reference): a disagreement's kind
_KIND = (
    pl.when(_FINDING.is_in(_REJECTIONS)).then(pl.col("rejection_kind"))
    .when((_FINDING == "buggy_not_rejected") & (_DELTA_C == 0)).then(pl.lit("coverage_gap"))
    .when((_FINDING == "buggy_not_rejected") & (_DELTA_C > 0)).then(pl.lit("faulty_check"))
    .when(_OWN).then(pl.when(_OWN_MISSED.list.len() > 0).then(pl.lit("coverage_gap"))
                     .otherwise(pl.lit("faulty_check")))
    .when((_FINDING == "invalid_accepted") & _COVERED & (pl.col("overlap").list.len() > 0))
    .then(pl.when(_MISSED_HERE.list.len() > 0).then(pl.lit("coverage_gap")).otherwise(pl.lit("faulty_check")))
    .otherwise(pl.lit("unclassified"))
)


def _deciding(runs: pl.DataFrame) -> pl.DataFrame:
    """Each cell's one deciding disagreement: the first kind in KINDS' order, then the first
    finding in FINDINGS' order, then the first candidate."""
    rank = (pl.col("kind").replace_strict({k: i for i, k in enumerate(KINDS)}, return_dtype=pl.Int32) * 8
            + _FINDING.replace_strict({k: i for i, k in enumerate(FINDINGS)}, return_dtype=pl.Int32))
    ranked = (
        runs.lazy()
        .with_columns(kind=_KIND)
        .with_columns(rank=rank)
        .filter(pl.col("rank") == pl.col("rank").min().over(CELL))
        .collect()
    )
    return ranked.sort(*CELL, "candidate_id", nulls_last=True).unique(CELL, keep="first", maintain_order=True)


def _evidence() -> pl.Expr:
    """What the deciding run shows, in a line: the failing case or the output for a
    rejection, the lines (not) executed for an acceptance, and why an accepted invalid
    candidate fell back on the approximation (shown, not hidden)."""
    tail = pl.col("stdout_tail").fill_null("").str.slice(-EVIDENCE_CHARS)
    exit_code = pl.col("exit_code").cast(pl.String).fill_null("?")
    rejection = (
        pl.when(~_COMPLETED).then(pl.concat_str(pl.lit("unresolved: "), pl.col("reason")))
        .when(_OWN_ERROR.is_not_null() & (pl.col("kind") == "execution_logic_error")).then(_OWN_ERROR)
        .when(pl.col("reading").is_not_null()).then(pl.concat_str(
            pl.lit("no failing JUnit case, exit "), exit_code, pl.lit(": "), pl.col("reading"), pl.lit("; output: "), tail))
        .otherwise(pl.coalesce(_failing_case(_TESTS, own_code=False), _OWN_ERROR))
    )
    fallback = (
        pl.when((_FINDING == "invalid_accepted") & ~_OWN & pl.col("own_key").is_not_null())
        .then(pl.concat_str(pl.lit(" (its own state: "), pl.coalesce(
            pl.col("own_reason"), pl.lit("no executable line differs from the reference")), pl.lit(")")))
        .otherwise(pl.lit(""))
    )
    evidence = (
        pl.when(_FINDING.is_in(_REJECTIONS)).then(rejection)
        .when(_OWN & (pl.col("kind") == "coverage_gap")).then(pl.concat_str(
            pl.lit("accepted; lines where it differs from the reference, never executed on its own state: "),
            _OWN_MISSED.list.join(", ")))
        .when(_OWN).then(pl.concat_str(
            pl.lit("accepted although it executed, on its own state, every line where it differs from the "
                   "reference: "), pl.col("own_executed").list.join(", ")))
        .when(~_COVERED).then(pl.lit("passed; coverage of the reference change is not measured"))
        .when(_FINDING == "buggy_not_rejected").then(pl.concat_str(
            pl.lit("passed on buggy; ΔC on the reference = "), _DELTA_C.round(3).cast(pl.String),
            pl.lit("; never executed: "), pl.col("missed_lines").list.join(", ")))
        .when(pl.col("overlap").is_null()).then(pl.lit("accepted; its diff is not available"))
        .when(pl.col("overlap").list.len() == 0)
        .then(pl.lit("accepted; its hunks overlap no reference hunk, so reference coverage says nothing of its lines"))
        .when(pl.col("kind") == "coverage_gap").then(pl.concat_str(
            pl.lit("accepted; reference-changed lines it also changes, never executed on the reference: "),
            _MISSED_HERE.list.join(", ")))
        .otherwise(pl.concat_str(pl.lit("accepted although the reference-changed lines it also changes were "
                                        "executed on the reference: "), pl.col("overlap").list.join(", ")))
    )
    return pl.concat_str(evidence, fallback).str.slice(0, 2 * EVIDENCE_CHARS)


_EVIDENCE = _evidence()
#: what the evidence rests on
_BASIS = (
    pl.when(_FINDING.is_in(_REJECTIONS))
    .then(pl.when(~_COMPLETED).then(pl.lit("run_reason")).when(pl.col("reading").is_not_null()).then(pl.lit("output"))
          .otherwise(pl.lit("junit")))
    .when(_OWN).then(pl.lit("candidate_coverage"))
    .when(~_COVERED).then(pl.lit("no_coverage"))
    .when(_FINDING == "buggy_not_rejected").then(pl.lit("reference_delta_c"))
    .when(pl.col("overlap").is_null()).then(pl.lit("no_diff"))
    .otherwise(pl.lit("reference_coverage"))
)


def taxonomy_shares(taxonomy: pl.DataFrame) -> pl.DataFrame:
    """`scores/failure_taxonomy_shares`: per configuration and kind, the count and its share
    of the configuration's S_i = 0 instances; every kind is listed, at 0 when absent."""
    configurations = taxonomy.select("configuration").unique()
    kinds = pl.DataFrame({"kind": list(KINDS)})
    counts = taxonomy.group_by("configuration", "kind").agg(count=pl.len().cast(pl.Int64))
    table = (
        configurations.join(kinds, how="cross")
        .join(counts, on=["configuration", "kind"], how="left")
        .with_columns(pl.col("count").fill_null(0))
        .with_columns(share=pl.col("count") / pl.col("count").sum().over("configuration"))
        .with_columns(kind_order=pl.col("kind").replace_strict({k: i for i, k in enumerate(KINDS)}))
        .sort("configuration", "kind_order")
        .drop("kind_order")
    )
    return _conform("failure_taxonomy_shares", table)


def pooled_shares(taxonomy: pl.DataFrame) -> pl.DataFrame:
    """The shares over every configuration (the report's pooled line)."""
    return taxonomy_shares(taxonomy.with_columns(configuration=pl.lit("(all)")))


