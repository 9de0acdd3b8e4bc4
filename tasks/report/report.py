"""The HTML report of a scored store: one self-contained file that opens offline.

What it holds (docs/report.md): the leaderboard with 95% intervals, a radar per
configuration, CAR vs WDR and CT-CAR vs CT-WDR scatter plots, JVR bars with interval
whiskers, paired comparisons, per-source tables, coverage (ΔC, EC and their correlation
with JVR), and the disagreement audit: per configuration and instance, the valid candidates
its suite rejected and the invalid ones it accepted, with the failing tests, their messages
and the candidate's diff.

Why it is built this way:

- Everything is read from the store's tables (`scores/*`, `runs`, `panels`, `suites`), so
  a report can be made wherever the store is, long after the replay.
- Suites and patches are untrusted: every piece of text goes through `html.escape`, the
  file carries a Content-Security-Policy that forbids scripts and any network fetch, and
  there is no script at all. Charts are inline SVG built here (no plotting dependency).
- The store does not hold candidate diffs (the benchmark folder does; collect's
  `candidates` dataset holds them for collected panels), so `benchmark` is optional: with
  it the audit shows each candidate's diff and its benchmark note.
- The audit reads the same runs the leaderboard scored: the newest run of each expected
  (configuration, instance, state), ties broken by run key (`tasks.metrics.latest_runs`).
"""

from __future__ import annotations

import html
import logging
import math
import os
import re
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

import polars as pl

from testprism.storage import Store, StoreError
from testprism.tasks.model.benchmark import BenchmarkError, load_instance
from testprism.tasks.score.coverage.summary import summarise
from testprism.tasks.model.hashing import digest
from testprism.tasks.score.metrics import latest_runs

log = logging.getLogger(__name__)

RADAR_METRICS: tuple[str, ...] = ("grr", "car", "wdr", "ct_car", "ct_wdr", "jvr")
LABELS: dict[str, str] = {
    "grr": "GRR", "car": "CAR", "wdr": "WDR", "f1": "F1", "ct_car": "CT-CAR", "ct_wdr": "CT-WDR",
    "ct_f1": "CT-F1", "jvr": "JVR",
}
LEADERBOARD_METRICS: tuple[str, ...] = ("grr", "car", "wdr", "f1", "ct_car", "ct_wdr", "ct_f1", "jvr")

#: Okabe-Ito: distinguishable with the common colour-vision deficiencies.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#999999")

#: Kinds of audit findings, in the order they are shown.
FINDINGS: dict[str, str] = {
    "valid_rejected": "valid candidate rejected",
    "invalid_accepted": "invalid candidate accepted",
    "reference_not_accepted": "reference not accepted",
    "buggy_not_rejected": "buggy program not rejected",
    "unresolved": "candidate unresolved (E)",
}

MAX_TESTS_SHOWN = 20
MAX_TAIL_CHARS = 3000
MAX_PATCH_CHARS = 40_000

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"


# -- reading -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PatchText:
    """A candidate's (or the reference's) diff and its benchmark note, for the audit."""

    patch: str
    note: str = ""


@dataclass(frozen=True)
class ReportData:
    """Everything the report shows, read from one store (and optionally its benchmark)."""

    store: str
    leaderboard: pl.DataFrame
    instance_scores: pl.DataFrame
    per_source: pl.DataFrame | None
    comparisons: pl.DataFrame | None
    rank_stability: pl.DataFrame | None
    coverage: pl.DataFrame | None
    coverage_summary: pl.DataFrame | None
    audit: pl.DataFrame
    patches: dict[tuple[str, str], PatchText]  # (instance_id, candidate_id or "reference")
    patch_origin: str  # where the diffs came from, said in the report


def audit_frame(store: Store) -> pl.DataFrame:
    """Every expected run whose outcome disagrees with its state's label, with its tests.

    One row per finding: `configuration, instance_id, source, state, candidate_id, label,
    finding, outcome, reason, tests, stdout_tail`. The expected runs are suites × panels;
    each is judged by the run the leaderboard scored (`tasks.metrics.latest_runs`), and a
    run missing from the store is `E` with reason `not_run`, as the metrics count it. The
    heavy columns (tests, output) are read for the findings only.
    """
    keys = ["configuration", "instance_id", "state", "candidate_id"]
    scored = latest_runs(store).lazy().select(*keys, "outcome", "started_at")
    panels = (
        store.scan("panels")
        .unique(["instance_id", "state", "candidate_id"])
        .select("instance_id", "source", "state", "candidate_id", "label")
    )
    grid = store.scan("suites").select("configuration", "instance_id").unique().join(panels, on="instance_id")
    outcome = pl.col("outcome").fill_null("E")
    finding = (
        pl.when((pl.col("state") == "buggy") & (outcome != "F")).then(pl.lit("buggy_not_rejected"))
        .when((pl.col("state") == "reference") & (outcome != "P")).then(pl.lit("reference_not_accepted"))
        .when((pl.col("label") == "valid") & (outcome == "F")).then(pl.lit("valid_rejected"))
        .when((pl.col("label") == "invalid") & (outcome == "P")).then(pl.lit("invalid_accepted"))
        .when((pl.col("state") == "candidate") & (outcome == "E")).then(pl.lit("unresolved"))
    )
    findings = (
        grid.join(scored, on=keys, how="left", nulls_equal=True)
        .with_columns(finding=finding)
        .filter(pl.col("finding").is_not_null())
        .collect()
    )
    match = [*keys, "started_at", "outcome"]
    details = (
        store.scan("runs")
        .select(*match, "reason", "tests", "stdout_tail")
        .join(findings.lazy().select(match).drop_nulls("started_at"), on=match, how="semi", nulls_equal=True)
        .unique(keys, keep="any")
        .collect()
    )
    return (
        findings.join(details, on=match, how="left", nulls_equal=True)
        .with_columns(
            reason=pl.when(pl.col("outcome").is_null()).then(pl.lit("not_run")).otherwise(pl.col("reason")),
            outcome=outcome,
        )
        .select("configuration", "instance_id", "source", "state", "candidate_id", "label", "finding", "outcome",
                "reason", "tests", "stdout_tail")
        .sort("configuration", "instance_id", "finding", "candidate_id", nulls_last=True)
    )


def _patches_from_benchmark(root: Path, instance_ids: Iterable[str]) -> dict[tuple[str, str], PatchText]:
    """Diffs and notes of the named instances; an instance that is absent or does not load
    is logged and left out (its findings are still shown, without diffs)."""
    patches: dict[tuple[str, str], PatchText] = {}
    for instance_id in sorted(set(instance_ids)):
        folder = root / "instances" / instance_id
        try:
            instance = load_instance(folder)
        except (BenchmarkError, OSError) as exc:
            log.warning("report: no diffs for %s: %s", instance_id, exc)
            continue
        patches[(instance_id, "reference")] = PatchText(instance.reference.decode("utf-8", errors="replace"),
                                                        instance.spec.summary)
        for candidate in instance.candidates:
            patches[(instance_id, candidate.id)] = PatchText(candidate.patch.decode("utf-8", errors="replace"),
                                                             candidate.note)
    return patches


def _patches_from_store(store: Store) -> dict[tuple[str, str], PatchText]:
    """Diffs of collected candidates (collect's `candidates` dataset), newest collection."""
    frame = (
        store.scan("candidates")
        .sort("flow_run", descending=True)
        .unique(["instance_id", "candidate_id"], keep="first")
        .select("instance_id", "candidate_id", "patch")
        .collect()
    )
    return {(r["instance_id"], r["candidate_id"]): PatchText(r["patch"]) for r in frame.iter_rows(named=True)}


def _optional_table(store: Store, name: str) -> pl.DataFrame | None:
    return store.read_table(name) if store.paths.score_table(name).is_file() else None


def scored_store(store_root: Path | str) -> Store:
    """The store to report on, refused (StoreError) when it is not there or was never
    scored: called by the CLI before the report flow starts, and by the report itself."""
    store = Store.existing(store_root)
    leaderboard = store.paths.score_table("leaderboard")
    if not leaderboard.is_file():
        raise StoreError(f"{leaderboard}: field (file): missing; run `testprism score {store_root}` first")
    return store


def load_report_data(store_root: Path | str, benchmark_root: Path | str | None = None) -> ReportData:
    """Read what the report needs."""
    store = scored_store(store_root)
    audit = audit_frame(store)
    if benchmark_root is not None:
        patches = _patches_from_benchmark(Path(benchmark_root), audit["instance_id"].to_list())
        origin = f"benchmark {benchmark_root}"
    else:
        patches = _patches_from_store(store)
        origin = "the store's collected candidates" if patches else ""
    return ReportData(
        store=str(store_root),
        leaderboard=store.read_table("leaderboard"),
        instance_scores=store.read_table("instance_scores"),
        per_source=_optional_table(store, "per_source"),
        comparisons=_optional_table(store, "comparisons"),
        rank_stability=_optional_table(store, "rank_stability"),
        coverage=_optional_table(store, "coverage"),
        coverage_summary=_optional_table(store, "coverage_summary"),
        audit=audit,
        patches=patches,
        patch_origin=origin,
    )


# -- small pieces --------------------------------------------------------------------------------


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _defined(value: float | None) -> bool:
    return value is not None and not math.isnan(value)


def _num(value: float | None, digits: int = 3) -> str:
    return f"{value:.{digits}f}" if _defined(value) else "—"


def _p(value: float | None) -> str:
    if not _defined(value):
        return "—"
    return "< 0.001" if value < 0.001 else f"{value:.3f}"


def anchor(*parts: str) -> str:
    """A stable element id for a configuration, instance or patch: readable when the names
    are plain ([A-Za-z0-9_.-]), otherwise made safe and suffixed with a short hash."""
    joined = "--".join(parts)
    if re.fullmatch(r"[A-Za-z0-9_.-]+", joined):
        return joined
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", joined).strip("-") or "x"
    return f"{safe}-{digest('anchor', *parts)[:8]}"


def _ordered(board: pl.DataFrame) -> pl.DataFrame:
    return board.sort(["jvr", "configuration"], descending=[True, False], nulls_last=True)


def _colours(configurations: Sequence[str]) -> dict[str, str]:
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(configurations)}


# -- charts (inline SVG) ---------------------------------------------------------------------------


def _svg(width: int, height: int, body: str, label: str) -> str:
    return (f'<svg viewBox="0 0 {width} {height}" width="{width}" '
            f'height="{height}" role="img" aria-label="{_e(label)}"><title>{_e(label)}</title>{body}</svg>')


def radar_svg(configuration: str, values: dict[str, float | None], colour: str) -> str:
    """One configuration's six rates on six axes (0 at the centre, 1 at the rim); an
    undefined rate is drawn at 0 and labelled n/a."""
    width, height, centre_x, centre_y, radius = 340, 250, 170, 125, 84
    n = len(RADAR_METRICS)

    def point(index: int, r: float) -> tuple[float, float]:
        angle = -math.pi / 2 + 2 * math.pi * index / n
        return centre_x + r * math.cos(angle), centre_y + r * math.sin(angle)

    parts = []
    for level in (0.25, 0.5, 0.75, 1.0):
        ring = " ".join(f"{x:.1f},{y:.1f}" for x, y in (point(i, radius * level) for i in range(n)))
        parts.append(f'<polygon points="{ring}" class="grid"/>')
    for i, metric in enumerate(RADAR_METRICS):
        x, y = point(i, radius)
        parts.append(f'<line x1="{centre_x}" y1="{centre_y}" x2="{x:.1f}" y2="{y:.1f}" class="axis"/>')
        lx, ly = point(i, radius + 20)
        anchor_ = "middle" if abs(lx - centre_x) < 5 else ("start" if lx > centre_x else "end")
        value = values.get(metric)
        text = f"{LABELS[metric]} {_num(value, 2) if _defined(value) else 'n/a'}"
        parts.append(f'<text x="{lx:.1f}" y="{ly + 4:.1f}" text-anchor="{anchor_}" class="label">{_e(text)}</text>')
    rates = [values.get(m) if _defined(values.get(m)) else 0.0 for m in RADAR_METRICS]
    shape = [point(i, radius * rate) for i, rate in enumerate(rates)]
    parts.append(f'<polygon points="{" ".join(f"{x:.1f},{y:.1f}" for x, y in shape)}" fill="{colour}" '
                 f'fill-opacity="0.25" stroke="{colour}" stroke-width="2"/>')
    for (x, y), metric in zip(shape, RADAR_METRICS, strict=True):
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"><title>'
                     f'{_e(f"{configuration} {LABELS[metric]} {_num(values.get(metric))}")}</title></circle>')
    return _svg(width, height, "".join(parts), f"radar of {configuration}")


@dataclass(frozen=True)
class Point:
    label: str
    x: float | None
    y: float | None
    x_lo: float | None = None
    x_hi: float | None = None
    y_lo: float | None = None
    y_hi: float | None = None


def scatter_svg(points: Sequence[Point], x_label: str, y_label: str, colours: dict[str, str]) -> str:
    """Rates on [0, 1]², with 95% interval whiskers on both axes; a configuration whose
    rates are undefined (an empty pool) has no point."""
    width, height, left, right, top, bottom = 420, 360, 56, 20, 20, 48
    plot_w, plot_h = width - left - right, height - top - bottom

    def sx(v: float) -> float:
        return left + v * plot_w

    def sy(v: float) -> float:
        return top + (1 - v) * plot_h

    parts = [f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" class="frame"/>']
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(f'<line x1="{sx(tick):.1f}" y1="{top}" x2="{sx(tick):.1f}" y2="{top + plot_h}" class="grid"/>')
        parts.append(f'<line x1="{left}" y1="{sy(tick):.1f}" x2="{left + plot_w}" y2="{sy(tick):.1f}" class="grid"/>')
        parts.append(f'<text x="{sx(tick):.1f}" y="{top + plot_h + 16}" text-anchor="middle" '
                     f'class="tick">{tick:g}</text>')
        parts.append(f'<text x="{left - 6}" y="{sy(tick) + 4:.1f}" text-anchor="end" class="tick">{tick:g}</text>')
    parts.append(f'<text x="{left + plot_w / 2:.1f}" y="{height - 8}" text-anchor="middle" '
                 f'class="label">{_e(x_label)}</text>')
    parts.append(f'<text x="14" y="{top + plot_h / 2:.1f}" text-anchor="middle" class="label" '
                 f'transform="rotate(-90 14 {top + plot_h / 2:.1f})">{_e(y_label)}</text>')
    stacked: dict[tuple[float, float], int] = {}
    for p in points:
        if not (_defined(p.x) and _defined(p.y)):
            continue
        colour = colours.get(p.label, PALETTE[-1])
        x, y = sx(p.x), sy(p.y)
        if _defined(p.x_lo) and _defined(p.x_hi):
            parts.append(f'<line x1="{sx(p.x_lo):.1f}" y1="{y:.1f}" x2="{sx(p.x_hi):.1f}" y2="{y:.1f}" '
                         f'stroke="{colour}" class="whisker"/>')
        if _defined(p.y_lo) and _defined(p.y_hi):
            parts.append(f'<line x1="{x:.1f}" y1="{sy(p.y_lo):.1f}" x2="{x:.1f}" y2="{sy(p.y_hi):.1f}" '
                         f'stroke="{colour}" class="whisker"/>')
        tip = (f"{p.label}: {x_label} {_num(p.x)} [{_num(p.x_lo)}, {_num(p.x_hi)}], "
               f"{y_label} {_num(p.y)} [{_num(p.y_lo)}, {_num(p.y_hi)}]")
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="{colour}"><title>{_e(tip)}</title></circle>')
        spot = (round(p.x, 2), round(p.y, 2))
        offset = stacked.get(spot, 0)
        stacked[spot] = offset + 1
        text_anchor, dx = ("end", -8) if p.x > 0.7 else ("start", 8)
        parts.append(f'<text x="{x + dx:.1f}" y="{y - 6 + 14 * offset:.1f}" text-anchor="{text_anchor}" '
                     f'class="point-label" fill="{colour}">{_e(p.label)}</text>')
    return _svg(width, height, "".join(parts), f"{x_label} against {y_label}")


def bars_svg(rows: Sequence[Point], label: str, colours: dict[str, str]) -> str:
    """Horizontal bars of one rate per configuration (`x`), with its interval whisker."""
    row_h, left, right, top = 28, 150, 70, 10
    width = 560
    plot_w = width - left - right
    height = top + row_h * len(rows) + 30

    def sx(v: float) -> float:
        return left + v * plot_w

    parts = []
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = sx(tick)
        parts.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{height - 24}" class="grid"/>')
        parts.append(f'<text x="{x:.1f}" y="{height - 8}" text-anchor="middle" class="tick">{tick:g}</text>')
    for i, row in enumerate(rows):
        y = top + i * row_h
        colour = colours.get(row.label, PALETTE[-1])
        parts.append(f'<text x="{left - 8}" y="{y + row_h / 2 + 4:.1f}" text-anchor="end" '
                     f'class="label">{_e(row.label)}</text>')
        value = row.x if _defined(row.x) else 0.0
        tip = f"{row.label}: {label} {_num(row.x)} [{_num(row.x_lo)}, {_num(row.x_hi)}]"
        parts.append(f'<rect x="{left}" y="{y + 5}" width="{value * plot_w:.1f}" height="{row_h - 10}" '
                     f'fill="{colour}" fill-opacity="0.8"><title>{_e(tip)}</title></rect>')
        if _defined(row.x_lo) and _defined(row.x_hi):
            mid = y + row_h / 2
            parts.append(f'<line x1="{sx(row.x_lo):.1f}" y1="{mid:.1f}" x2="{sx(row.x_hi):.1f}" y2="{mid:.1f}" '
                         'class="ci"/>')
            for end in (row.x_lo, row.x_hi):
                parts.append(f'<line x1="{sx(end):.1f}" y1="{mid - 6:.1f}" x2="{sx(end):.1f}" y2="{mid + 6:.1f}" '
                             'class="ci"/>')
        parts.append(f'<text x="{width - right + 6}" y="{y + row_h / 2 + 4:.1f}" class="tick">{_e(_num(row.x))}</text>')
    return _svg(width, height, "".join(parts), f"{label} per configuration")


# -- sections ------------------------------------------------------------------------------------------


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], css: str = "") -> str:
    """A table from already-escaped cells."""
    head = "".join(f"<th>{h}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _with_interval(row: dict, metric: str) -> str:
    value = _num(row.get(metric))
    lo, hi = row.get(f"{metric}_lo"), row.get(f"{metric}_hi")
    if not (_defined(lo) and _defined(hi)):
        return value
    return f'{value}<br><span class="ci">[{_num(lo)}, {_num(hi)}]</span>'


def _leaderboard_section(data: ReportData, counts: dict[str, dict[str, int]]) -> str:
    stability = {}
    if data.rank_stability is not None:
        stability = {r["configuration"]: r for r in data.rank_stability.iter_rows(named=True)}
    header = ["configuration", "n"] + [LABELS[m] for m in LEADERBOARD_METRICS] + ["P(first)", "audit"]
    rows = []
    for row in _ordered(data.leaderboard).iter_rows(named=True):
        name = row["configuration"]
        found = counts.get(name, {})
        audit = (f'<a href="#{_e(anchor("audit", name))}">{found.get("valid_rejected", 0)} valid rejected, '
                 f'{found.get("invalid_accepted", 0)} invalid accepted</a>')
        rows.append([f'<a href="#{_e(anchor("audit", name))}">{_e(name)}</a>', _e(row["n_instances"])]
                    + [_with_interval(row, m) for m in LEADERBOARD_METRICS]
                    + [_num(stability.get(name, {}).get("first_place_probability"), 2), audit])
    return (
        '<section id="leaderboard"><h2>Leaderboard</h2>'
        '<p>Point estimates with 95% percentile intervals of a paired, source-stratified bootstrap; '
        'best JVR first. P(first) is the share of bootstrap replicates in which the configuration has '
        'the highest JVR (ties split). Each configuration links to its disagreement audit.</p>'
        + _table(header, rows, "leaderboard") + "</section>"
    )


def _charts_section(data: ReportData, colours: dict[str, str]) -> str:
    board = _ordered(data.leaderboard)
    radars = "".join(
        f'<figure class="radar"><figcaption>{_e(r["configuration"])}</figcaption>'
        f'{radar_svg(r["configuration"], {m: r.get(m) for m in RADAR_METRICS}, colours[r["configuration"]])}</figure>'
        for r in board.iter_rows(named=True)
    )

    def points(x: str, y: str) -> list[Point]:
        return [Point(r["configuration"], r.get(x), r.get(y), r.get(f"{x}_lo"), r.get(f"{x}_hi"), r.get(f"{y}_lo"),
                      r.get(f"{y}_hi")) for r in board.iter_rows(named=True)]

    bars = [Point(r["configuration"], r.get("jvr"), None, r.get("jvr_lo"), r.get("jvr_hi"))
            for r in board.iter_rows(named=True)]
    return (
        '<section id="charts"><h2>Charts</h2>'
        '<h3>Six rates per configuration</h3><div class="radars">' + radars + "</div>"
        '<h3>Solution bias against weak specification</h3>'
        '<p>Upper right is best: CAR (valid candidates accepted) against WDR (invalid candidates rejected), '
        'and their complete-task shares. Whiskers are 95% intervals.</p><div class="scatters">'
        f'<figure>{scatter_svg(points("car", "wdr"), "CAR", "WDR", colours)}</figure>'
        f'<figure>{scatter_svg(points("ct_car", "ct_wdr"), "CT-CAR", "CT-WDR", colours)}</figure></div>'
        '<h3>JVR with 95% intervals</h3>'
        f'<figure>{bars_svg(bars, "JVR", colours)}</figure></section>'
    )


def _comparisons_section(data: ReportData) -> str:
    if data.comparisons is None or data.comparisons.is_empty():
        return ('<section id="comparisons"><h2>Comparisons</h2><p>No comparisons (a single configuration).</p>'
                "</section>")
    rows = [
        [_e(r["configuration"]), _e(r["leader"]), _with_interval(r, "delta_jvr"), _e(r["leader_only"]),
         _e(r["other_only"]), _p(r["mcnemar_p"]), _p(r["mcnemar_p_holm"])]
        for r in data.comparisons.sort("delta_jvr", "configuration", nulls_last=True).iter_rows(named=True)
    ]
    table = _table(["configuration", "leader", "ΔJVR (leader − it) [95%]", "leader only", "it only", "McNemar p",
                    "Holm p"], rows)
    stability = ""
    if data.rank_stability is not None:
        srows = [[_e(r["configuration"]), _e(r["point_rank"]), _num(r["rank_stability"], 3),
                  _num(r["first_place_probability"], 3)]
                 for r in data.rank_stability.sort("point_rank", "configuration").iter_rows(named=True)]
        stability = ("<h3>Rank stability</h3><p>Share of bootstrap replicates that keep each configuration's rank, "
                     "and its first-place probability.</p>"
                     + _table(["configuration", "rank", "rank stability", "P(first)"], srows))
    return (
        '<section id="comparisons"><h2>Comparisons with the leader</h2>'
        '<p>Paired difference in JVR with its bootstrap interval; exact McNemar test on the instances where '
        'exactly one of the two is jointly valid, Holm-adjusted over the comparisons.</p>'
        + table + stability + "</section>"
    )


def _per_source_section(data: ReportData) -> str:
    if data.per_source is None or data.per_source.is_empty():
        return ""
    rows = [[_e(r["source"]), _e(r["configuration"]), _e(r["n_instances"])]
            + [_num(r[m]) for m in LEADERBOARD_METRICS]
            for r in data.per_source.sort("source", "configuration").iter_rows(named=True)]
    return ('<section id="per-source"><h2>Per source</h2><p>Every metric within each source of instances.</p>'
            + _table(["source", "configuration", "n"] + [LABELS[m] for m in LEADERBOARD_METRICS], rows)
            + "</section>")


def _coverage_section(data: ReportData) -> str:
    head = '<section id="coverage"><h2>Coverage of the reference change</h2>'
    if data.coverage is None or data.coverage_summary is None:
        return (head + "<p>Coverage was not measured for this store. It is measured on the reference state by "
                "the score flow when given the benchmark (see docs/report.md).</p></section>")
    joined = data.coverage.join(data.instance_scores.select("configuration", "instance_id", "s"),
                                on=["configuration", "instance_id"], how="inner")
    pooled = {"configuration": "all configurations (pooled)", **summarise(joined)}

    def correlation(r: dict, name: str) -> str:
        if not _defined(r[name]):
            return "—"
        return f'{_num(r[name])} <span class="ci">p {_p(r[f"{name}_p"])}</span>'

    def cells(r: dict) -> list[str]:
        return [_e(r["configuration"]), _e(r["n_instances"]), _num(r["delta_c"]), _num(r["ec"]), _num(r["jvr"])] + [
            correlation(r, f"{m}_{s}") for m in ("delta_c", "ec") for s in ("spearman", "pearson")
        ]

    rows = [cells(r) for r in data.coverage_summary.sort("configuration").iter_rows(named=True)] + [cells(pooled)]
    summary = _table(["configuration", "n", "mean ΔC", "mean EC", "JVR", "Spearman ΔC~S", "Pearson ΔC~S",
                      "Spearman EC~S", "Pearson EC~S"], rows)
    def fraction(part: int | None, whole: int | None) -> str:
        return "" if whole is None else f' <span class="ci">{part}/{whole}</span>'

    detail_rows = []
    for r in joined.sort("configuration", "instance_id").iter_rows(named=True):
        missed = ", ".join(list(r["missed_lines"] or []) + list(r["missed_functions"] or []))
        detail_rows.append([
            _e(r["configuration"]), _e(r["instance_id"]),
            _num(r["delta_c"]) + fraction(r["covered_lines"], r["changed_lines"]),
            _num(r["ec"]) + fraction(r["entered_functions"], r["changed_functions"]),
            _num(r["s"], 0), _e(r["reason"] or ""), f"<code>{_e(missed)}</code>",
        ])
    detail = _table(["configuration", "instance", "ΔC", "EC", "S", "reason", "missed (never executed / entered)"],
                    detail_rows)
    return (
        head + "<p>ΔC: the lines the reference adds or changes that the suite executes, over those lines. EC: the "
        "functions the reference changes that the suite enters, over those functions. Both on the reference state, "
        "with coverage in every Python process of the run. Correlations are with the instance's joint validity S "
        "(Pearson on a 0/1 variable is the point-biserial correlation); undefined (—) when S or the coverage is "
        "constant or fewer than three instances are measured.</p>" + summary
        + f"<details><summary>Per instance ({len(detail_rows)} rows)</summary>{detail}</details></section>"
    )


def _tests_html(tests: Sequence[dict] | None, wanted: tuple[str, ...]) -> tuple[str, int]:
    """Tests whose outcome is in `wanted`, at most MAX_TESTS_SHOWN; returns (html, count)."""
    chosen = [t for t in (tests or []) if t["outcome"] in wanted]
    items = []
    for test in chosen[:MAX_TESTS_SHOWN]:
        message = f'<pre class="message">{_e(test["message"])}</pre>' if test.get("message") else ""
        items.append(f'<li><code class="test">{_e(test["name"])}</code> <span class="outcome">{_e(test["outcome"])}'
                     f"</span>{message}</li>")
    more = len(chosen) - MAX_TESTS_SHOWN
    if more > 0:
        items.append(f"<li>… and {more} more</li>")
    return (f'<ul class="tests">{"".join(items)}</ul>' if items else ""), len(chosen)


def _tail_html(tail: str | None) -> str:
    if not tail:
        return ""
    return (f"<details><summary>output tail</summary><pre class=\"tail\">{_e(tail[-MAX_TAIL_CHARS:])}</pre>"
            "</details>")


def _finding_html(row: dict, data: ReportData) -> str:
    kind = row["finding"]
    subject = row["candidate_id"] or row["state"]
    key = (row["instance_id"], row["candidate_id"] or "reference")
    patch = data.patches.get(key)
    head = (f'<span class="kind">{_e(FINDINGS[kind])}</span> <code class="candidate">{_e(subject)}</code> '
            f'<span class="outcome">{_e(row["outcome"])}{" / " + _e(row["reason"]) if row["reason"] else ""}</span>')
    if patch is not None and row["state"] != "buggy":
        head += f' · <a href="#{_e(anchor("patch", *key))}">diff</a>'
    note = ""
    if patch is not None and patch.note and row["state"] == "candidate":
        note = f'<p class="note">{_e(patch.note)}</p>'
    if kind in ("invalid_accepted", "buggy_not_rejected") and row["outcome"] == "P":
        passed, count = _tests_html(row["tests"], ("passed",))
        body = (f"<details><summary>all {count} tests passed</summary>{passed}</details>" if count
                else "<p>exit status 0, no JUnit report</p>")
    else:
        failing, count = _tests_html(row["tests"], ("failed", "error"))
        body = failing if count else ""
        if not count or row["outcome"] == "E":
            body += _tail_html(row["stdout_tail"])
    return (f'<li class="finding {_e(kind.replace("_", "-"))}" data-instance="{_e(row["instance_id"])}" '
            f'data-candidate="{_e(subject)}">{head}{note}{body}</li>')


def _tally(findings: pl.DataFrame) -> list[tuple[str, int]]:
    """How many findings of each kind, in FINDINGS order."""
    counts = dict(findings["finding"].value_counts().iter_rows())
    return [(kind, counts[kind]) for kind in FINDINGS if kind in counts]


def _audit_section(data: ReportData, max_findings: int) -> str:
    parts = [
        '<section id="audit"><h2>Disagreement audit</h2>'
        "<p>Per configuration and instance: valid candidates its suite rejected (solution bias), invalid candidates "
        "it accepted (weak specification), references it did not accept or buggy programs it did not reject (the "
        "fail-to-pass transition), and candidates it left unresolved. Failing tests show their assertion message; "
        "each candidate links to its diff.</p>"
    ]
    if not data.patch_origin:
        parts.append('<p class="warning">Diffs are not shown: the store does not hold them. Pass <code>--benchmark '
                     "DIR</code> to include them.</p>")
    by_configuration = {name: frame for (name,), frame in data.audit.group_by("configuration")}
    for name in _ordered(data.leaderboard)["configuration"].to_list():
        frame = by_configuration.get(name, data.audit.clear())
        summary = "; ".join(f"{FINDINGS[kind]}: {n}" for kind, n in _tally(frame)) or "no disagreement"
        parts.append(f'<section class="audit-configuration" id="{_e(anchor("audit", name))}"><h3>{_e(name)}</h3>'
                     f'<p class="audit-summary">{_e(summary)}</p>')
        shown = frame.head(max_findings)
        for (instance_id,), group in sorted(shown.group_by("instance_id"), key=lambda item: item[0]):
            line = ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in _tally(group))
            items = "".join(_finding_html(r, data) for r in group.iter_rows(named=True))
            parts.append(f'<details class="audit-instance" id="{_e(anchor("audit", name, instance_id))}">'
                         f'<summary><code>{_e(instance_id)}</code> <span class="source">{_e(group["source"][0])}'
                         f'</span> — {_e(line)}</summary><ul class="findings">{items}</ul></details>')
        if frame.height > max_findings:
            parts.append(f'<p class="warning">{frame.height - max_findings} more findings are not shown; read them '
                         "from the store (docs/report.md).</p>")
        parts.append("</section>")
    parts.append("</section>")
    return "".join(parts)


def _diff_html(text: str) -> str:
    if len(text) > MAX_PATCH_CHARS:
        text = text[:MAX_PATCH_CHARS] + f"\n… cut at {MAX_PATCH_CHARS} characters\n"
    lines = []
    for line in text.splitlines():
        css = ("add" if line.startswith("+") and not line.startswith("+++") else
               "del" if line.startswith("-") and not line.startswith("---") else
               "hunk" if line.startswith("@@") else "")
        lines.append(f'<span class="{css}">{_e(line)}</span>' if css else _e(line))
    return '<pre class="diff">' + "\n".join(lines) + "</pre>"


def _patches_section(data: ReportData, max_findings: int) -> str:
    shown = pl.concat([frame.head(max_findings) for _, frame in data.audit.group_by("configuration")]) \
        if data.audit.height else data.audit
    keys = sorted({(r["instance_id"], r["candidate_id"] or "reference") for r in shown.iter_rows(named=True)
                   if r["state"] != "buggy"})
    wanted = sorted(set(keys) | {(i, "reference") for i, _ in keys})
    blocks = []
    for key in wanted:
        patch = data.patches.get(key)
        if patch is None:
            continue
        instance_id, candidate_id = key
        note = f'<p class="note">{_e(patch.note)}</p>' if patch.note else ""
        blocks.append(f'<div class="patch" id="{_e(anchor("patch", *key))}"><h4><code>{_e(instance_id)}</code> / '
                      f"<code>{_e(candidate_id)}</code></h4>{note}{_diff_html(patch.patch)}</div>")
    if not blocks:
        return ""
    return (f'<section id="patches"><h2>Diffs</h2><p>From {_e(data.patch_origin)}: every candidate in the audit, and '
            "its instance's reference.</p>" + "".join(blocks) + "</section>")


STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1180px;padding:1rem 1.5rem;
color:#1b1b1b;line-height:1.45}
h1{margin-bottom:.2rem}h2{border-bottom:1px solid #ccc;padding-bottom:.2rem;margin-top:2.2rem}
nav a{margin-right:1rem}table{border-collapse:collapse;margin:.6rem 0;font-size:.9rem}
th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:right;vertical-align:top}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
.ci{color:#666;font-size:.8em;white-space:nowrap}.warning{color:#8a4b00}
.radars,.scatters{display:flex;flex-wrap:wrap;gap:1rem}figure{margin:.3rem}figcaption{font-weight:600;text-align:center}
svg .grid{fill:none;stroke:#ddd}svg .axis{stroke:#bbb}svg .frame{fill:none;stroke:#999}
svg .label{font-size:11px;fill:#333}svg .tick{font-size:10px;fill:#555}svg .point-label{font-size:11px;font-weight:600}
svg .whisker{stroke-width:1.5}svg .ci{stroke:#222;stroke-width:1.5}
details{margin:.3rem 0}summary{cursor:pointer}
.findings{list-style:none;padding-left:.5rem}.finding{border-left:4px solid #999;margin:.5rem 0;padding:.2rem .6rem}
.finding.valid-rejected{border-color:#D55E00}.finding.invalid-accepted{border-color:#0072B2}
.finding.reference-not-accepted,.finding.buggy-not-rejected{border-color:#CC79A7}.kind{font-weight:600}
.note{margin:.2rem 0;color:#444;font-style:italic}.source{color:#666}
pre{background:#f7f7f7;padding:.4rem;overflow:auto;max-height:28em;font-size:.82rem;white-space:pre-wrap}
pre.diff .add{color:#055d20;background:#e6ffec}pre.diff .del{color:#82071e;background:#ffebe9}
pre.diff .hunk{color:#6639ba}.patch{margin:1rem 0}
"""


def render_report(data: ReportData, *, generated_at: datetime | None = None, max_findings: int = 2000) -> str:
    """The whole HTML document. `max_findings` bounds the audit per configuration, so a
    report of a million runs stays a file a browser opens."""
    board = _ordered(data.leaderboard)
    colours = _colours(board["configuration"].to_list())
    counts: dict[str, dict[str, int]] = {}
    for row in data.audit.group_by("configuration", "finding").len().iter_rows(named=True):
        counts.setdefault(row["configuration"], {})[row["finding"]] = row["len"]
    when = (generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    n_instances = data.instance_scores["instance_id"].n_unique()
    n_sources = data.instance_scores["source"].n_unique()
    sections = [
        _leaderboard_section(data, counts),
        _charts_section(data, colours),
        _comparisons_section(data),
        _per_source_section(data),
        _coverage_section(data),
        _audit_section(data, max_findings),
        _patches_section(data, max_findings),
    ]
    nav = "".join(f'<a href="#{target}">{title}</a>' for target, title in (
        ("leaderboard", "Leaderboard"), ("charts", "Charts"), ("comparisons", "Comparisons"),
        ("per-source", "Per source"), ("coverage", "Coverage"), ("audit", "Audit")))
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>testprism report — {_e(data.store)}</title><style>{STYLE}</style></head><body>"
        f"<header><h1>testprism report</h1><p>Store <code>{_e(data.store)}</code>: {board.height} configurations, "
        f"{n_instances} instances from {n_sources} sources. Generated {_e(when)} by testprism "
        f"{_e(version('testprism'))}.</p><nav>{nav}</nav></header><main>"
        + "".join(sections) + "</main></body></html>\n"
    )


def write_report(
    store_root: Path | str, out: Path | str, benchmark_root: Path | str | None = None, *, max_findings: int = 2000
) -> Path:
    """Render the report of a scored store into `out`, atomically (a reader never sees a
    half-written file)."""
    data = load_report_data(store_root, benchmark_root)
    text = render_report(data, max_findings=max_findings)
    target = Path(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".report-", suffix=".html", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide the report from a web server or a colleague
        os.replace(tmp, target)
    finally:
        Path(tmp).unlink(missing_ok=True)
    log.info("report of %s written to %s (%d KiB, %d findings)", store_root, target, len(text) // 1024,
             data.audit.height)
    return target


def artifact_markdown(report: Path, leaderboard: pl.DataFrame) -> str:
    """The Prefect artifact: where the report is, and the leaderboard's headline."""
    lines = [
        "# testprism report",
        "",
        f"[Open the report]({report.resolve().as_uri()}) — `{report.resolve()}` (a self-contained HTML file).",
        "",
        "| configuration | JVR [95% CI] | CAR | WDR | GRR |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in _ordered(leaderboard).iter_rows(named=True):
        name = r["configuration"].replace("|", "\\|")
        lines.append(f"| {name} | {_num(r['jvr'])} [{_num(r.get('jvr_lo'))}, {_num(r.get('jvr_hi'))}] | "
                     f"{_num(r['car'])} | {_num(r['wdr'])} | {_num(r['grr'])} |")
    return "\n".join(lines) + "\n"
