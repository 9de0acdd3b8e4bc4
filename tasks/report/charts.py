"""The report's charts: inline SVG built here, no plotting dependency and no script.

The report must open offline under a Content-Security-Policy that forbids scripts and
network fetches (`html`), so a chart is SVG text in the page; every label in it is
escaped, since configuration names come from the store.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from testprism.tasks.report.formatting import LABELS, defined, esc, num

RADAR_METRICS: tuple[str, ...] = ("grr", "car", "wdr", "ct_car", "ct_wdr", "jvr")

#: Okabe-Ito: distinguishable with the common colour-vision deficiencies.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#999999")


def colours_of(configurations: Sequence[str]) -> dict[str, str]:
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(configurations)}


def _svg(width: int, height: int, body: str, label: str) -> str:
    return (f'<svg viewBox="0 0 {width} {height}" width="{width}" '
            f'height="{height}" role="img" aria-label="{esc(label)}"><title>{esc(label)}</title>{body}</svg>')


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
        text = f"{LABELS[metric]} {num(value, 2) if defined(value) else 'n/a'}"
        parts.append(f'<text x="{lx:.1f}" y="{ly + 4:.1f}" text-anchor="{anchor_}" class="label">{esc(text)}</text>')
    rates = [values.get(m) if defined(values.get(m)) else 0.0 for m in RADAR_METRICS]
    shape = [point(i, radius * rate) for i, rate in enumerate(rates)]
    parts.append(f'<polygon points="{" ".join(f"{x:.1f},{y:.1f}" for x, y in shape)}" fill="{colour}" '
                 f'fill-opacity="0.25" stroke="{colour}" stroke-width="2"/>')
    for (x, y), metric in zip(shape, RADAR_METRICS, strict=True):
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"><title>'
                     f'{esc(f"{configuration} {LABELS[metric]} {num(values.get(metric))}")}</title></circle>')
    return _svg(width, height, "".join(parts), f"radar of {configuration}")


@dataclass(frozen=True)
class Point:
    """One configuration on a chart: its rates and their 95% interval ends, None where undefined."""

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
                 f'class="label">{esc(x_label)}</text>')
    parts.append(f'<text x="14" y="{top + plot_h / 2:.1f}" text-anchor="middle" class="label" '
                 f'transform="rotate(-90 14 {top + plot_h / 2:.1f})">{esc(y_label)}</text>')
    stacked: dict[tuple[float, float], int] = {}
    for p in points:
        if not (defined(p.x) and defined(p.y)):
            continue
        colour = colours.get(p.label, PALETTE[-1])
        x, y = sx(p.x), sy(p.y)
        if defined(p.x_lo) and defined(p.x_hi):
            parts.append(f'<line x1="{sx(p.x_lo):.1f}" y1="{y:.1f}" x2="{sx(p.x_hi):.1f}" y2="{y:.1f}" '
                         f'stroke="{colour}" class="whisker"/>')
        if defined(p.y_lo) and defined(p.y_hi):
            parts.append(f'<line x1="{x:.1f}" y1="{sy(p.y_lo):.1f}" x2="{x:.1f}" y2="{sy(p.y_hi):.1f}" '
                         f'stroke="{colour}" class="whisker"/>')
        tip = (f"{p.label}: {x_label} {num(p.x)} [{num(p.x_lo)}, {num(p.x_hi)}], "
               f"{y_label} {num(p.y)} [{num(p.y_lo)}, {num(p.y_hi)}]")
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="{colour}"><title>{esc(tip)}</title></circle>')
        spot = (round(p.x, 2), round(p.y, 2))
        offset = stacked.get(spot, 0)
        stacked[spot] = offset + 1
        text_anchor, dx = ("end", -8) if p.x > 0.7 else ("start", 8)
        parts.append(f'<text x="{x + dx:.1f}" y="{y - 6 + 14 * offset:.1f}" text-anchor="{text_anchor}" '
                     f'class="point-label" fill="{colour}">{esc(p.label)}</text>')
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
                     f'class="label">{esc(row.label)}</text>')
        value = row.x if defined(row.x) else 0.0
        tip = f"{row.label}: {label} {num(row.x)} [{num(row.x_lo)}, {num(row.x_hi)}]"
        parts.append(f'<rect x="{left}" y="{y + 5}" width="{value * plot_w:.1f}" height="{row_h - 10}" '
                     f'fill="{colour}" fill-opacity="0.8"><title>{esc(tip)}</title></rect>')
        if defined(row.x_lo) and defined(row.x_hi):
            mid = y + row_h / 2
            parts.append(f'<line x1="{sx(row.x_lo):.1f}" y1="{mid:.1f}" x2="{sx(row.x_hi):.1f}" y2="{mid:.1f}" '
                         'class="ci"/>')
            for end in (row.x_lo, row.x_hi):
                parts.append(f'<line x1="{sx(end):.1f}" y1="{mid - 6:.1f}" x2="{sx(end):.1f}" y2="{mid + 6:.1f}" '
                             'class="ci"/>')
        parts.append(f'<text x="{width - right + 6}" y="{y + row_h / 2 + 4:.1f}" class="tick">{esc(num(row.x))}</text>')
    return _svg(width, height, "".join(parts), f"{label} per configuration")


def lines_svg(series: dict[str, Sequence[tuple[int, float | None]]], x_label: str, y_label: str,
              colours: dict[str, str], *, height: int = 300, dashed: frozenset[str] = frozenset(),
              label: str = "") -> str:
    """Rates on [0, 1] against k = 1 … K, one line per series (a gap where a value is
    undefined), with a legend above the plot."""
    columns = 2 if max((len(name) for name in series), default=0) > 14 else 3  # legend entries per row
    width, left, right, top, bottom = 460, 56, 16, 22 + 14 * ((len(series) + columns - 1) // columns), 44
    plot_w, plot_h = width - left - right, height - top - bottom
    k_max = max((k for points in series.values() for k, _ in points), default=1)

    def sx(k: float) -> float:
        return left + (0.5 if k_max == 1 else (k - 1) / (k_max - 1)) * plot_w

    def sy(v: float) -> float:
        return top + (1 - v) * plot_h

    parts = [f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" class="frame"/>']
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(f'<line x1="{left}" y1="{sy(tick):.1f}" x2="{left + plot_w}" y2="{sy(tick):.1f}" class="grid"/>')
        parts.append(f'<text x="{left - 6}" y="{sy(tick) + 4:.1f}" text-anchor="end" class="tick">{tick:g}</text>')
    step = max(1, math.ceil(k_max / 10))
    for k in range(1, k_max + 1, step):
        parts.append(f'<text x="{sx(k):.1f}" y="{top + plot_h + 16}" text-anchor="middle" class="tick">{k}</text>')
    parts.append(f'<text x="{left + plot_w / 2:.1f}" y="{height - 8}" text-anchor="middle" '
                 f'class="label">{esc(x_label)}</text>')
    parts.append(f'<text x="14" y="{top + plot_h / 2:.1f}" text-anchor="middle" class="label" '
                 f'transform="rotate(-90 14 {top + plot_h / 2:.1f})">{esc(y_label)}</text>')
    for i, (name, points) in enumerate(series.items()):
        colour = colours.get(name, PALETTE[-1])
        dash = ' stroke-dasharray="5 3"' if name in dashed else ""
        lx, ly = left + (i % columns) * (plot_w / columns), 14 + 14 * (i // columns)
        parts.append(f'<line x1="{lx:.1f}" y1="{ly - 4}" x2="{lx + 16:.1f}" y2="{ly - 4}" stroke="{colour}" '
                     f'stroke-width="2"{dash}/><text x="{lx + 20:.1f}" y="{ly}" class="label">{esc(name)}</text>')
        segment: list[str] = []
        for k, value in [*points, (0, None)]:
            if defined(value):
                segment.append(f"{sx(k):.1f},{sy(value):.1f}")
                parts.append(f'<circle cx="{sx(k):.1f}" cy="{sy(value):.1f}" r="2.5" fill="{colour}"><title>'
                             f'{esc(f"{name}: {y_label} {num(value)} at k = {k}")}</title></circle>')
                continue
            if len(segment) > 1:
                parts.append(f'<polyline points="{" ".join(segment)}" fill="none" stroke="{colour}" '
                             f'stroke-width="2"{dash}/>')
            segment = []
    return _svg(width, height, "".join(parts), label or f"{y_label} against {x_label}")
