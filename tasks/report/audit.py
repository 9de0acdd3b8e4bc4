"""The report's disagreement audit: per configuration and instance, the states its suite
judged wrongly (the valid candidates it rejected, the invalid ones it accepted, a reference
not accepted, a buggy program not rejected) with their failing tests, messages and output,
the failure taxonomy's shares and examples above them, and the diffs they link to.

One job of the page (`html` assembles the sections): what a finding shows, bounded
(MAX_TESTS_SHOWN, MAX_TAIL_CHARS, MAX_PATCH_CHARS), since a suite's output and a patch are
untrusted and may be large; every piece goes through `esc`.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from testprism.tasks.report.data import ReportData
from testprism.tasks.report.formatting import anchor, esc, num, table

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


def _tests_html(tests: Sequence[dict] | None, wanted: tuple[str, ...]) -> tuple[str, int]:
    """Tests whose outcome is in `wanted`, at most MAX_TESTS_SHOWN; returns (html, count)."""
    chosen = [t for t in (tests or []) if t["outcome"] in wanted]
    items = []
    for test in chosen[:MAX_TESTS_SHOWN]:
        message = f'<pre class="message">{esc(test["message"])}</pre>' if test.get("message") else ""
        items.append(f'<li><code class="test">{esc(test["name"])}</code> <span class="outcome">{esc(test["outcome"])}'
                     f"</span>{message}</li>")
    more = len(chosen) - MAX_TESTS_SHOWN
    if more > 0:
        items.append(f"<li>… and {more} more</li>")
    return (f'<ul class="tests">{"".join(items)}</ul>' if items else ""), len(chosen)


def _tail_html(tail: str | None) -> str:
    if not tail:
        return ""
    return (f"<details><summary>output tail</summary><pre class=\"tail\">{esc(tail[-MAX_TAIL_CHARS:])}</pre>"
            "</details>")


def _finding_html(row: dict, data: ReportData) -> str:
    kind = row["finding"]
    subject = row["candidate_id"] or row["state"]
    key = (row["instance_id"], row["candidate_id"] or "reference")
    patch = data.patches.get(key)
    head = (f'<span class="kind">{esc(FINDINGS[kind])}</span> <code class="candidate">{esc(subject)}</code> '
            f'<span class="outcome">{esc(row["outcome"])}{" / " + esc(row["reason"]) if row["reason"] else ""}</span>')
    if patch is not None and row["state"] != "buggy":
        head += f' · <a href="#{esc(anchor("patch", *key))}">diff</a>'
    note = ""
    if patch is not None and patch.note and row["state"] == "candidate":
        note = f'<p class="note">{esc(patch.note)}</p>'
    if kind in ("invalid_accepted", "buggy_not_rejected") and row["outcome"] == "P":
        passed, count = _tests_html(row["tests"], ("passed",))
        body = (f"<details><summary>all {count} tests passed</summary>{passed}</details>" if count
                else "<p>exit status 0, no JUnit report</p>")
    else:
        failing, count = _tests_html(row["tests"], ("failed", "error"))
        body = failing if count else ""
        if not count or row["outcome"] == "E":
            body += _tail_html(row["stdout_tail"])
    return (f'<li class="finding {esc(kind.replace("_", "-"))}" data-instance="{esc(row["instance_id"])}" '
            f'data-candidate="{esc(subject)}">{head}{note}{body}</li>')


def _tally(findings: pl.DataFrame) -> list[tuple[str, int]]:
    """How many findings of each kind, in FINDINGS order."""
    counts = dict(findings["finding"].value_counts().iter_rows())
    return [(kind, counts[kind]) for kind in FINDINGS if kind in counts]


#: How many examples of each kind of failure the audit shows (all of them are in the store).
TAXONOMY_EXAMPLES = 3


def _taxonomy_html(data: ReportData) -> str:
    """The failure taxonomy (tasks/score/taxonomy.py): its shares per configuration and a
    few examples of each kind, each linked to its instance's audit."""
    from testprism.tasks.score.taxonomy import KINDS, pooled_shares

    taxonomy, shares = data.failure_taxonomy, data.failure_taxonomy_shares
    head = "<h3>Failure taxonomy</h3>"
    if taxonomy is None or shares is None:
        return head + "<p>Not computed for this store: rescore it (<code>testprism score</code>).</p>"
    if taxonomy.is_empty():
        return head + "<p>No configuration failed an instance jointly (every S is 1).</p>"
    every = pl.concat([shares, pooled_shares(taxonomy)])
    counts = {(r["configuration"], r["kind"]): r for r in every.iter_rows(named=True)}
    names = sorted(shares["configuration"].unique().to_list()) + ["(all)"]
    rows = [[esc(name)] + [f'{counts[(name, k)]["count"]} <span class="ci">{num(counts[(name, k)]["share"], 2)}'
                           f"</span>" for k in KINDS] for name in names]
    parts = [head, "<p>Every instance a configuration fails jointly (S = 0), placed by the first rule that "
             "matches (docs/report.md, Failure taxonomy): the suite's own code fails on the reference "
             "(execution-logic error); it lets a wrong program pass without executing the lines where that "
             "program differs from the reference (coverage gap: an accepted invalid candidate measured on its own "
             "state, else approximated by the reference-changed lines it overlaps, measured on the reference); it "
             "executes them and still judges wrongly, or rejects a correct program (faulty check). Count and share "
             "of the configuration's S = 0 instances.</p>",
             table(["configuration"] + [k.replace("_", " ") for k in KINDS], rows)]
    accepted = taxonomy.filter(pl.col("finding") == "invalid_accepted")
    if not accepted.is_empty():
        bases = ", ".join(f"{n} by <code>{esc(b)}</code>" for b, n in sorted(accepted["evidence_basis"].value_counts().iter_rows()))
        parts.append(f"<p>Rows decided by an accepted invalid candidate: {bases}.</p>")
    items = []
    for kind in KINDS[:3]:
        examples = taxonomy.filter(pl.col("kind") == kind).head(TAXONOMY_EXAMPLES)
        for r in examples.iter_rows(named=True):
            decided = r["candidate_id"] or r["state"] or "—"
            items.append(
                f'<li><b>{esc(kind.replace("_", " "))}</b> — <a href="#{esc(anchor("audit", r["configuration"], r["instance_id"]))}">'
                f'{esc(r["configuration"])} / <code>{esc(r["instance_id"])}</code></a>, decided by '
                f'<code>{esc(decided)}</code> <span class="ci">({esc(r["evidence_basis"])})</span>: '
                f'<code>{esc(r["evidence"])}</code></li>')
    if items:
        parts.append(f'<p>Examples (at most {TAXONOMY_EXAMPLES} per kind; all of them are in '
                     '<code>scores/failure_taxonomy</code>):</p><ul class="findings">' + "".join(items) + "</ul>")
    return "".join(parts)


def audit_section(data: ReportData, configurations: list[str], max_findings: int) -> str:
    """The audit: the failure taxonomy, then per configuration (in `configurations`' order, the
    leaderboard's) and instance its findings, at most `max_findings` a configuration."""
    parts = [
        '<section id="audit"><h2>Disagreement audit</h2>'
        "<p>Per configuration and instance: valid candidates its suite rejected (solution bias), invalid candidates "
        "it accepted (weak specification), references it did not accept or buggy programs it did not reject (the "
        "fail-to-pass transition), and candidates it left unresolved. Failing tests show their assertion message; "
        "each candidate links to its diff.</p>"
    ]
    parts.append(_taxonomy_html(data))
    if not data.patch_origin:
        parts.append('<p class="warning">Diffs are not shown: the store does not hold them. Pass <code>--benchmark '
                     "DIR</code> to include them.</p>")
    by_configuration = {name: frame for (name,), frame in data.audit.group_by("configuration")}
    for name in configurations:
        frame = by_configuration.get(name, data.audit.clear())
        summary = "; ".join(f"{FINDINGS[kind]}: {n}" for kind, n in _tally(frame)) or "no disagreement"
        parts.append(f'<section class="audit-configuration" id="{esc(anchor("audit", name))}"><h3>{esc(name)}</h3>'
                     f'<p class="audit-summary">{esc(summary)}</p>')
        shown = frame.head(max_findings)
        for (instance_id,), group in sorted(shown.group_by("instance_id"), key=lambda item: item[0]):
            line = ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in _tally(group))
            items = "".join(_finding_html(r, data) for r in group.iter_rows(named=True))
            parts.append(f'<details class="audit-instance" id="{esc(anchor("audit", name, instance_id))}">'
                         f'<summary><code>{esc(instance_id)}</code> <span class="source">{esc(group["source"][0])}'
                         f'</span> — {esc(line)}</summary><ul class="findings">{items}</ul></details>')
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
        lines.append(f'<span class="{css}">{esc(line)}</span>' if css else esc(line))
    return '<pre class="diff">' + "\n".join(lines) + "</pre>"


def patches_section(data: ReportData, max_findings: int) -> str:
    """The diffs of every candidate the audit shows, and of its instance's reference."""
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
        note = f'<p class="note">{esc(patch.note)}</p>' if patch.note else ""
        blocks.append(f'<div class="patch" id="{esc(anchor("patch", *key))}"><h4><code>{esc(instance_id)}</code> / '
                      f"<code>{esc(candidate_id)}</code></h4>{note}{_diff_html(patch.patch)}</div>")
    if not blocks:
        return ""
    return (f'<section id="patches"><h2>Diffs</h2><p>From {esc(data.patch_origin)}: every candidate in the audit, and '
            "its instance's reference.</p>" + "".join(blocks) + "</section>")
