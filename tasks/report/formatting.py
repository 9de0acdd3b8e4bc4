"""How the report writes a value: escaped for HTML, numbers to fixed digits, metric names.

The page (`html`) and its charts (`charts`) both write values, so the rules live here
once: a rate reads the same in a table, a tooltip and an axis label, an undefined one is
always "—", and every piece of text from the store goes through `esc` (suites and patches
are untrusted) before it reaches the page.

An element's id (`anchor`) is made here too: the page's sections and the audit link to
each other by it.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Iterable, Sequence

from testprism.tasks.model.hashing import digest

LABELS: dict[str, str] = {
    "grr": "GRR", "car": "CAR", "wdr": "WDR", "f1": "F1", "ct_car": "CT-CAR", "ct_wdr": "CT-WDR",
    "ct_f1": "CT-F1", "jvr": "JVR",
}


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def defined(value: float | None) -> bool:
    return value is not None and not math.isnan(value)


def num(value: float | None, digits: int = 3) -> str:
    return f"{value:.{digits}f}" if defined(value) else "—"


def p_value(value: float | None) -> str:
    if not defined(value):
        return "—"
    return "< 0.001" if value < 0.001 else f"{value:.3f}"


def table(header: Sequence[str], rows: Iterable[Sequence[str]], css: str = "") -> str:
    """A table from already-escaped cells."""
    head = "".join(f"<th>{h}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def anchor(*parts: str) -> str:
    """A stable element id for a configuration, instance or patch: readable when the names
    are plain ([A-Za-z0-9_.-]), otherwise made safe and suffixed with a short hash."""
    joined = "--".join(parts)
    if re.fullmatch(r"[A-Za-z0-9_.-]+", joined):
        return joined
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", joined).strip("-") or "x"
    return f"{safe}-{digest('anchor', *parts)[:8]}"
