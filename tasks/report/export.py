"""A scored store's results in the formats other tools read (docs/export.md).

Two per-configuration report layouts, each the one its harness writes, so that the tooling
around those benchmarks' leaderboards reads testprism's results as it reads theirs:

- `swt-bench` (SWT-bench, test generation): `<configuration>/<instance_id>/report.json`
  holding `{instance_id: {patch_is_None, patch_exists, patch_successfully_applied,
  resolved, coverage_pred, coverage_gold, coverage_base, coverage_delta_pred,
  coverage_delta_gold, added_f2p, tests_base, tests_pred, tests_gold}}`, and the run's
  summary `<configuration>.testprism.json` (total/completed/resolved/unresolved/error
  counts and ids, "Mean coverage", "Mean coverage delta"). `resolved` and `added_f2p` are
  SWT-bench's (src/grading.py get_resolution_success) on the classes the entry reports, so a
  harness that re-derives them agrees. A suite whose runs name no test (it reports by exit
  status alone) is graded as SWT-bench's `reproduction_script` mode grades one: a single test
  `reproduction_script`, passed when the run passed (src/log_parsers.py
  parse_log_reproduction_script).
- `swe-bench` (SWE-bench's harness): `<configuration>/<instance_id>/report.json` holding
  `{instance_id: {patch_is_None, patch_exists, patch_successfully_applied, resolved,
  tests_status: {FAIL_TO_PASS, PASS_TO_PASS, FAIL_TO_FAIL, PASS_TO_FAIL: {success,
  failure}}}}`, and the summary `<configuration>.testprism.json` (schema_version 2:
  total/submitted/completed/resolved/unresolved/empty_patch/error counts and ids).
  `resolved` is the joint success S (the suite is right on buggy, reference and every
  candidate of the panel), so a leaderboard's "% resolved" is the configuration's JVR.

A configuration is the harnesses' model (`model_name_or_path`), an instance's suite its
prediction: a suite the store records as absent is an empty patch, a suite whose buggy or
reference run did not settle (E, or no run) an error. testprism replays the suite's own
tests, not the repository's, so SWT-bench's base is no test at all: `coverage_base` is 0,
`coverage_delta_pred` equals `coverage_pred` (ΔC, tasks/score/coverage), `tests_base` is
empty, and the gold columns, which need the benchmark's own tests run, are null.

And the leaderboard with its 95% intervals as a table: csv and json (every column of
`scores/leaderboard`), markdown and latex (each metric as `point [lo, hi]`, best JVR first).
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import polars as pl

from testprism.storage import Store
from testprism.storage.schema import METRICS
from testprism.tasks.report.data import scored_store
from testprism.tasks.report.formats import ExportFormat

log = logging.getLogger(__name__)

#: the run name both harnesses put between the model and `.json` in the summary's file name
RUN_ID = "testprism"
#: the transitions both harnesses report, in their order
TRANSITIONS = ("FAIL_TO_PASS", "PASS_TO_PASS", "FAIL_TO_FAIL", "PASS_TO_FAIL")
#: the one test SWT-bench's reproduction_script mode makes of a script's exit status
#: (src/log_parsers.py parse_log_reproduction_script): what an exit-status-only suite exports as
EXIT_STATUS_TEST = "reproduction_script"


# -- per instance: what the suite did on the buggy program and the reference fix -----------------


def suite_outcomes(store: Store) -> pl.DataFrame:
    """One row per (configuration, instance) the store owes a suite for: `present`, the
    newest buggy and reference runs' outcome and tests (null without a run), the joint
    indicator s (`scores/instance_scores`) and ΔC (`scores/coverage`, null when not
    measured). Newest: the run the leaderboard scored (storage/readers.py, latest_runs)."""
    keys = ["configuration", "instance_id"]
    suites = store.scan("suites").select(*keys, "present").unique(keys, keep="last").collect()
    runs = (store.scan("runs").filter(pl.col("state").is_in(["buggy", "reference"]))
            .select(*keys, "state", "outcome", "tests", "started_at", "run_key").collect()
            .sort("started_at", "run_key").unique([*keys, "state"], keep="last"))
    wide = suites
    for state in ("buggy", "reference"):
        side = runs.filter(pl.col("state") == state).select(
            *keys, pl.col("outcome").alias(f"{state}_outcome"), pl.col("tests").alias(f"{state}_tests"))
        wide = wide.join(side, on=keys, how="left")
    scores = store.read_table("instance_scores").select(*keys, "s")
    wide = wide.join(scores, on=keys, how="left")
    coverage = (store.read_table("coverage").select(*keys, "delta_c") if store.paths.score_table("coverage").is_file()
                else pl.DataFrame(schema={"configuration": pl.String, "instance_id": pl.String, "delta_c": pl.Float64}))
    return wide.join(coverage, on=keys, how="left").sort(keys)


def _statuses(tests: list[dict] | None) -> dict[str, str]:
    """A run's tests as the harnesses' status map: name → PASSED or FAILED (an error is a
    failure; skipped tests are left out, as their parsers leave them out of both lists)."""
    found: dict[str, str] = {}
    for test in tests or ():
        if test["outcome"] == "passed":
            found[test["name"]] = "PASSED"
        elif test["outcome"] in ("failed", "error"):
            found[test["name"]] = "FAILED"
    return found


def transitions(pre: list[dict] | None, post: list[dict] | None) -> dict[str, list[str]]:
    """Each test by its status on the buggy program (pre) and the reference fix (post), in
    SWT-bench's classes (src/grading.py get_eval_report): x→P with F→P, x→F with F→F, P→x
    with P→F, and F→x in UNMATCHED (x: the test is missing on that side)."""
    before, after = _statuses(pre), _statuses(post)
    found: dict[str, list[str]] = {name: [] for name in (*TRANSITIONS, "UNMATCHED")}
    for name in sorted(before.keys() | after.keys()):
        was, now = before.get(name), after.get(name)
        if was == "FAILED" and now is None:
            found["UNMATCHED"].append(name)
        else:
            found[("PASS_TO_" if was == "PASSED" else "FAIL_TO_") + ("PASS" if now == "PASSED" else "FAIL")].append(name)
    return found


def _as_script(outcome: str) -> list[dict]:
    """A run that names no test as SWT-bench's reproduction_script test: passed on exit 0."""
    return [{"name": EXIT_STATUS_TEST, "outcome": "passed" if outcome == "P" else "failed"}]


def resolution(pred: dict[str, list[str]], base: dict[str, list[str]]) -> tuple[bool, int]:
    """SWT-bench's resolved and added_f2p (src/grading.py get_resolution_success): the
    suite adds a F→P test over the base, keeps the base's, and adds no P→F or F→F one."""
    pred_f2p, base_f2p = set(pred["FAIL_TO_PASS"]), set(base["FAIL_TO_PASS"])
    added = pred_f2p >= base_f2p and bool(pred_f2p - base_f2p)
    no_new_failure = not (set(pred["PASS_TO_FAIL"]) - set(base["PASS_TO_FAIL"])) and not (
        set(pred["FAIL_TO_FAIL"]) - set(base["FAIL_TO_FAIL"]))
    return added and no_new_failure, len(pred_f2p - base_f2p)


def _settled(row: dict[str, Any]) -> bool:
    return row["buggy_outcome"] in ("P", "F") and row["reference_outcome"] in ("P", "F")


# -- SWT-bench ------------------------------------------------------------------------------------


def swt_instance(row: dict[str, Any]) -> dict[str, Any]:
    """One instance's SWT-bench report entry (src/grading.py get_pred_report's fields)."""
    entry: dict[str, Any] = {
        "patch_is_None": not row["present"], "patch_exists": bool(row["present"]),
        "patch_successfully_applied": False, "resolved": False,
        "coverage_pred": None, "coverage_gold": None, "coverage_base": None,
        "coverage_delta_pred": None, "coverage_delta_gold": None,
    }
    if not (row["present"] and _settled(row)):
        return entry
    pre, post = row["buggy_tests"], row["reference_tests"]
    if not pre and not post:  # reported by exit status alone
        pre, post = _as_script(row["buggy_outcome"]), _as_script(row["reference_outcome"])
    tests = transitions(pre, post)
    base = transitions(None, None)  # testprism's base has no test (the module's docstring)
    resolved, added_f2p = resolution(tests, base)
    coverage = row["delta_c"]
    entry.update(patch_successfully_applied=True, resolved=resolved, added_f2p=added_f2p,
                 tests_base=base, tests_pred=tests, tests_gold=None)
    if coverage is not None:
        entry.update(coverage_pred=coverage, coverage_base=0.0, coverage_delta_pred=coverage)
    return entry


def swt_summary(rows: list[dict[str, Any]], entries: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The run's summary, as SWT-bench's make_run_report writes it (no container is left:
    the unstopped and unremoved lists are empty)."""
    completed = sorted(iid for iid, e in entries.items() if e["patch_successfully_applied"])
    resolved = sorted(iid for iid in completed if entries[iid]["resolved"])
    covered = [entries[iid] for iid in completed if entries[iid]["coverage_pred"] is not None]
    mean = (lambda key: sum(e[key] for e in covered) / len(covered) if covered else 0)  # noqa: E731
    return {
        "total_instances": len(rows), "completed_instances": len(completed), "resolved_instances": len(resolved),
        "unresolved_instances": len(completed) - len(resolved), "error_instances": len(rows) - len(completed),
        "Mean coverage": mean("coverage_pred"), "Mean coverage delta": mean("coverage_delta_pred"),
        "unstopped_instances": 0, "completed_ids": completed, "resolved_ids": resolved,
        "unresolved_ids": sorted(set(completed) - set(resolved)),
        "error_ids": sorted(iid for iid in entries if iid not in completed),
        "unstopped_containers": [], "unremoved_images": [],
    }


# -- SWE-bench ------------------------------------------------------------------------------------


def swe_instance(row: dict[str, Any]) -> dict[str, Any]:
    """One instance's SWE-bench report entry (swebench/harness/grading.py get_eval_report's
    fields): each test of the suite by its status on the buggy program, `success` when the
    reference fix leaves it passing."""
    entry: dict[str, Any] = {"patch_is_None": not row["present"], "patch_exists": bool(row["present"]),
                             "patch_successfully_applied": False, "resolved": False}
    if not (row["present"] and _settled(row)):
        return entry
    moved = transitions(row["buggy_tests"], row["reference_tests"])
    status = {
        "FAIL_TO_PASS": {"success": moved["FAIL_TO_PASS"], "failure": sorted(moved["FAIL_TO_FAIL"] + moved["UNMATCHED"])},
        "PASS_TO_PASS": {"success": moved["PASS_TO_PASS"], "failure": moved["PASS_TO_FAIL"]},
        "FAIL_TO_FAIL": {"success": [], "failure": []},
        "PASS_TO_FAIL": {"success": [], "failure": []},
    }
    entry.update(patch_successfully_applied=True, resolved=row["s"] == 1.0, tests_status=status)
    return entry


def swe_summary(rows: list[dict[str, Any]], entries: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The run's summary, as SWE-bench's make_run_report writes it (schema_version 2)."""
    submitted = sorted(entries)
    empty = sorted(iid for iid, e in entries.items() if e["patch_is_None"])
    completed = sorted(iid for iid, e in entries.items() if e["patch_successfully_applied"])
    resolved = sorted(iid for iid in completed if entries[iid]["resolved"])
    errors = sorted(set(submitted) - set(completed) - set(empty))
    return {
        "total_instances": len(rows), "submitted_instances": len(submitted), "completed_instances": len(completed),
        "resolved_instances": len(resolved), "unresolved_instances": len(completed) - len(resolved),
        "empty_patch_instances": len(empty), "error_instances": len(errors),
        "completed_ids": completed, "incomplete_ids": [], "empty_patch_ids": empty, "submitted_ids": submitted,
        "resolved_ids": resolved, "unresolved_ids": sorted(set(completed) - set(resolved)), "error_ids": errors,
        "schema_version": 2,
    }


def write_reports(store: Store, out: Path, layout: ExportFormat) -> list[Path]:
    """Write each configuration's per-instance reports and summary under `out`, in
    `layout`'s files; the summaries' paths. A configuration's folder is replaced whole
    (written beside it, then renamed), so a rerun never leaves another run's instances."""
    entry_of, summary_of = ((swt_instance, swt_summary) if layout is ExportFormat.SWT_BENCH
                            else (swe_instance, swe_summary))
    table = suite_outcomes(store)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for (configuration,), group in table.group_by(["configuration"], maintain_order=True):
        rows = group.to_dicts()
        entries = {row["instance_id"]: entry_of(row) for row in rows}
        folder = out / configuration
        staging = out / f".{configuration}.partial"
        _remove(staging)
        for iid, entry in entries.items():
            (staging / iid).mkdir(parents=True)
            (staging / iid / "report.json").write_text(json.dumps({iid: entry}, indent=4) + "\n")
        _remove(folder)
        staging.rename(folder)
        summary = out / f"{configuration}.{RUN_ID}.json"
        summary.write_text(json.dumps(summary_of(rows, entries), indent=4) + "\n")
        written.append(summary)
        log.info("%s: %d instances, %d resolved (%s)", configuration, len(rows),
                 sum(e["resolved"] for e in entries.values()), summary)
    return written


def _remove(folder: Path) -> None:
    if folder.is_dir() and not folder.is_symlink():
        shutil.rmtree(folder)
    elif folder.exists() or folder.is_symlink():
        folder.unlink()


# -- the leaderboard as a table -------------------------------------------------------------------


def _cell(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _ranked(board: pl.DataFrame) -> pl.DataFrame:
    return board.sort(["jvr", "configuration"], descending=[True, False], nulls_last=True)


def _interval_rows(board: pl.DataFrame) -> list[list[str]]:
    return [[rec["configuration"], str(rec["n_instances"]),
             *(f"{_cell(rec[m])} [{_cell(rec[f'{m}_lo'])}, {_cell(rec[f'{m}_hi'])}]" for m in METRICS)]
            for rec in _ranked(board).iter_rows(named=True)]


def leaderboard_markdown(board: pl.DataFrame) -> str:
    """A GitHub-flavoured Markdown table: each metric as `point [lo, hi]` (95% interval)."""
    header = ["configuration", "n", *METRICS]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---", "---:", *("---:" for _ in METRICS)]) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in _interval_rows(board)]
    return "\n".join(lines) + "\n"


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def _latex(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def leaderboard_latex(board: pl.DataFrame) -> str:
    """A booktabs tabular: each metric as `point [lo, hi]` (95% interval), names escaped."""
    header = ["configuration", "$n$", *(m.replace("_", r"\_").upper() for m in METRICS)]
    lines = [r"\begin{tabular}{l" + "r" * (len(METRICS) + 1) + "}", r"\toprule", " & ".join(header) + r" \\",
             r"\midrule"]
    lines += [" & ".join([_latex(row[0]), row[1], *(cell.replace("—", "--") for cell in row[2:])]) + r" \\"
              for row in _interval_rows(board)]
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def leaderboard_text(store: Store, table: ExportFormat) -> str:
    """The leaderboard, best JVR first, as `table` (csv, json, markdown or latex)."""
    board = _ranked(store.read_table("leaderboard"))
    if table is ExportFormat.CSV:
        return board.write_csv()
    if table is ExportFormat.JSON:
        return json.dumps(board.to_dicts(), indent=2) + "\n"
    if table is ExportFormat.MARKDOWN:
        return leaderboard_markdown(board)
    return leaderboard_latex(board)


def export(store_root: Path, layout: ExportFormat, out: Path | None) -> list[Path] | str:
    """Export a scored store: the report layouts write folders under `out` (their summary
    files returned); a table is written to `out`, or returned when `out` is None."""
    store = scored_store(store_root)  # an unscored store ends in one line (flows/errors.py)
    if layout.is_folder:
        return write_reports(store, out or Path(f"{layout.value}-report"), layout)
    text = leaderboard_text(store, layout)
    if out is None:
        return text
    out.write_text(text)
    return [out]
