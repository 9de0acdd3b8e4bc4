"""Candidates: ingest patches from prediction files and diff folders, normalise them, and
set duplicates aside.

Agent submissions are messy (realdata/README.md): the same patch arrives from several
submissions up to whitespace and headers, some rows name instances that do not exist or
carry no patch at all. Every row either becomes a `CandidatePatch` or an `IngestError`
that names the file, the row and the field; a bad row never stops the others.

Deduplication has two steps, on purpose at two points of the pipeline:
- exact duplicates (same normalised patch) are set aside *before* verification: they
  would get the same label, so running them again is waste;
- near duplicates are set aside *after* labelling, within one label class (as SWEPatchTest
  does): the difference between a valid and an invalid patch is often a single token (`<`
  against `<=`), so merging across classes would discard exactly the candidates a panel
  needs. Two candidates are near duplicates when the token counts of their added lines
  and of their removed lines both have cosine ≥ threshold (compared together, two
  rewrites of one function look alike because they remove the same buggy lines) with
  totals of a like size (cosine ignores length), and,
  for invalid ones, they fail the same checks (a different failure is a behaviour a suite
  must catch separately).
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError
from scipy import sparse
from unidiff import Hunk, PatchedFile
from unidiff.errors import UnidiffParseError

from testprism.tasks.collect.rules import NEAR_DUPLICATE_COSINE, NEAR_DUPLICATE_SIZE_RATIO
from testprism.tasks.model import patches, syntax
from testprism.tasks.model.benchmark import Benchmark
from testprism.tasks.model.funnel import Excluded
from testprism.tasks.model.hashing import digest
from testprism.tasks.model.outcome import Reason

log = logging.getLogger(__name__)


_TOKEN = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True)
class IngestError:
    """A row or file that did not become a candidate, and where it came from."""

    origin: str  # file:row, or a path
    field: str
    kind: Reason
    message: str

    def __str__(self) -> str:
        return f"{self.origin}: field {self.field}: {self.message}"


@dataclass(frozen=True)
class CandidatePatch:
    """One collected candidate patch and what the pipeline has found out about it."""

    instance_id: str
    candidate_id: str
    origin: str  # file:row for prediction rows, the path for diff files, `mutant: <operator> at <path:line:col>...`
    model: str | None
    official_label: str | None  # valid | invalid from the source (e.g. official_resolved)
    patch: str  # normalised
    norm_key: str  # hash of the normalised patch
    duplicate_of: str | None = None
    reason: Reason | None = None
    label: str | None = None  # valid | invalid, from our verification
    failed_checks: tuple[str, ...] = ()
    provenance: str = "agent"  # agent: submitted (benchmark, predictions, diffs) | mutant: tasks/collect/mutants.py
    #: test infrastructure it changed, put back before its checks ran (tasks/execution/infrastructure.py)
    restored: tuple[str, ...] = ()

    @property
    def in_pool(self) -> bool:
        """Labelled and not set aside: eligible for a panel."""
        return self.reason is None and self.label is not None


class PatchError(ValueError):
    """The text is not a unified diff we can normalise."""


class _PredictionRow(BaseModel):
    """A SWE-bench prediction. Other fields are allowed and ignored, but for
    `official_resolved`, which becomes the candidate's official label."""

    model_config = ConfigDict(extra="ignore")

    instance_id: str
    model_name_or_path: str
    model_patch: str | None
    official_resolved: bool | None = None


# -- normalisation ---------------------------------------------------------------------------


def _relative(name: str) -> str:
    """A diff path without its a/ or b/ prefix, refusing paths that leave the program."""
    rel = patches.relative_path(name)
    if rel is None or patches.escapes_program(name):
        raise PatchError(f"patch path escapes the program: {name!r}")
    return rel


def _range(start: int, length: int) -> str:
    return str(start) if length == 1 else f"{start},{length}"


def _hunk_lines(hunk: Hunk, offset: int) -> tuple[list[str], int]:
    """A hunk with its header recomputed from its lines (so a stale target position or a
    section header cannot make equal patches differ) and trailing whitespace stripped from
    added lines. Context and removed lines stay byte for byte: they must match the program."""
    body: list[str] = []
    old = new = 0
    for line in hunk:
        if line.line_type == "+":
            body.append("+" + line.value.rstrip() + "\n")
            new += 1
        elif line.line_type in ("-", " "):
            value = line.value if line.value.endswith("\n") else line.value + "\n"
            body.append(line.line_type + value)
            old += 1
            new += line.line_type == " "
        else:  # "\ No newline at end of file" belongs to the line before it
            body.append("\\ No newline at end of file\n")
    start = hunk.source_start
    target = start + offset + (1 if old == 0 else -1 if new == 0 else 0)
    return [f"@@ -{_range(start, old)} +{_range(target, new)} @@\n", *body], offset + new - old


def _file_lines(patched: PatchedFile) -> list[str]:
    """One file of the canonical form: a git header (needed for new empty files and
    renames), then ---/+++ and the hunks; index lines, modes and timestamps dropped."""
    if patched.is_binary_file:
        raise PatchError(f"binary change of {patched.path!r} cannot be normalised")
    source = None if patched.is_added_file else _relative(patched.source_file)
    target = None if patched.is_removed_file else _relative(patched.target_file)
    shown_source, shown_target = source or target, target or source
    lines = [f"diff --git a/{shown_source} b/{shown_target}\n"]
    if patched.is_added_file:
        lines.append("new file mode 100644\n")
    elif patched.is_removed_file:
        lines.append("deleted file mode 100644\n")
    elif source != target:
        lines += [f"rename from {source}\n", f"rename to {target}\n"]
    elif not len(patched):
        return []  # a mode change only: nothing a test can see
    if len(patched):
        lines.append(f"--- a/{source}\n" if source else "--- /dev/null\n")
        lines.append(f"+++ b/{target}\n" if target else "+++ /dev/null\n")
    offset = 0
    for hunk in patched:
        hunk_lines, offset = _hunk_lines(hunk, offset)
        lines += hunk_lines
    return lines


def normalise_patch(text: str) -> str:
    """The canonical form of a unified diff: equal changes give equal text.

    Drops what differs between tools but changes nothing (index lines, timestamps, hunk
    section headers, mode-only changes), recomputes hunk positions, strips trailing
    whitespace from added lines and ends with a newline (a missing final newline makes
    `git apply` call a patch corrupt)."""
    if not text.strip():
        raise PatchError("the patch is empty")
    if not text.endswith("\n"):
        text += "\n"
    try:
        parsed = patches.parse(text)
    except UnidiffParseError as exc:
        raise PatchError(f"not a unified diff: {exc}") from exc
    if not len(parsed):
        raise PatchError("not a unified diff: no file changes found")
    lines = [line for patched in parsed for line in _file_lines(patched)]
    if not lines:
        raise PatchError("the patch changes no file content (mode changes only)")
    return "".join(lines)


def patch_key(patch: str) -> str:
    """The exact-duplicate key of a normalised patch."""
    return digest("patch", patch)


def tokens(text: str, language: syntax.Language | None = None) -> list[str]:
    """The tokens of a piece of code, so that layout (`])` against `] )`) changes nothing.
    In a language with a tree-sitter grammar: its leaves (identifiers, keywords, operators,
    literals whole), comments left out. Otherwise (Python, unknown files): words
    (identifiers, keywords, numbers) and single punctuation characters."""
    if language is not None and language.grammar is not None:
        return syntax.tokens(language, text)
    return _TOKEN.findall(text)


def changed_tokens(patch: str, sign: str) -> Counter[str]:
    """Token counts of the added (`sign` "+") or removed ("-") lines of a normalised patch.
    Each line is tokenized on its own, but for a file with a grammar, whose changed lines
    are read together as one fragment: a comment or a string may span lines."""
    counts: Counter[str] = Counter()
    language: syntax.Language | None = None
    fragment: list[str] = []
    for line in [*patch.splitlines(), "diff --git"]:
        if line.startswith("diff --git"):  # the normalised form starts every file with it
            counts.update(tokens("\n".join(fragment), language))
            language, fragment = syntax.language_of(line.rsplit(" b/", 1)[-1]), []
        elif line.startswith(sign) and not line.startswith(("+++ ", "--- ")):
            if language is None or language.grammar is None:
                counts.update(tokens(line[1:]))
            else:
                fragment.append(line[1:])
    return counts


# -- ingestion -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Raw:
    instance_id: str
    name: str  # what the candidate id is made from
    origin: str
    model: str | None
    official_label: str | None
    text: str
    provenance: str = "agent"


@dataclass(frozen=True)
class Ingested:
    candidates: list[CandidatePatch]
    errors: list[IngestError]


def _prediction_rows(path: Path) -> Iterable[tuple[str, object]]:
    """(row name, row) of a prediction file: a JSON list, a JSON object keyed by instance
    (SWE-bench's preds.json) or JSON lines. Raises ValueError when it is none of them."""
    text = path.read_text(encoding="utf-8")
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, list):
        return [(str(i), row) for i, row in enumerate(whole, 1)]
    if isinstance(whole, dict) and "instance_id" not in whole:
        return [(str(key), row) for key, row in whole.items()]
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                rows.append((str(number), json.loads(line)))
            except json.JSONDecodeError as exc:
                raise ValueError(f"row {number} is not JSON: {exc}") from exc
    return rows


def _read_predictions(path: Path) -> tuple[list[_Raw], list[IngestError]]:
    raws: list[_Raw] = []
    errors: list[IngestError] = []
    try:
        rows = _prediction_rows(path)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return [], [IngestError(str(path), "(file)", Reason.UNREADABLE_FILE, str(exc))]
    for number, row in rows:
        origin = f"{path}:{number}"
        try:
            pred = _PredictionRow.model_validate(row)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "(row)"
            errors.append(IngestError(origin, field, Reason.BAD_ROW, first["msg"]))
            continue
        label = None if pred.official_resolved is None else ("valid" if pred.official_resolved else "invalid")
        raws.append(_Raw(pred.instance_id, pred.model_name_or_path, origin, pred.model_name_or_path, label,
                         pred.model_patch or ""))
    return raws, errors


def _read_diff_folder(root: Path) -> tuple[list[_Raw], list[IngestError]]:
    """`root/<instance_id>/<name>.diff`."""
    if not root.is_dir():
        return [], [IngestError(str(root), "(folder)", Reason.UNREADABLE_FILE, "not a folder")]
    raws: list[_Raw] = []
    errors: list[IngestError] = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_dir() or any(part.startswith(".") for part in rel.parts):
            continue
        if len(rel.parts) != 2 or path.suffix != ".diff":
            errors.append(IngestError(str(path), "(path)", Reason.UNREADABLE_FILE,
                                      "expected <instance_id>/<name>.diff under the diff folder"))
            continue
        raws.append(_Raw(rel.parts[0], path.stem, str(path), None, None,
                         path.read_bytes().decode("utf-8", errors="replace")))
    return raws, errors


def _benchmark_raws(benchmark: Benchmark) -> list[_Raw]:
    """The candidates a benchmark folder already declares: relabelled like any other, their
    declared label kept as the official one."""
    return [
        _Raw(inst.id, cand.id, str(inst.folder / spec.patch), None, cand.label,
             cand.patch.decode("utf-8", errors="replace"), cand.provenance)
        for inst in benchmark.instances.values()
        for cand, spec in zip(inst.candidates, inst.spec.candidates, strict=True)
    ]


def _slug(name: str) -> str:
    """A name that fits the benchmark format's id pattern (`[A-Za-z0-9_.-]+`): the part
    after the last `/` (the model, not its organisation), other characters as `-`."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name.rsplit("/", 1)[-1]).strip("-.") or "candidate"


def _with_ids(raws: Sequence[tuple[_Raw, str]]) -> list[CandidatePatch]:
    """Readable, stable candidate ids: the model or file name, with a hash of the origin
    appended when that name is not unique in its instance (one model, several runs)."""
    names = Counter((raw.instance_id, _slug(raw.name)) for raw, _ in raws)
    out = []
    for raw, patch in raws:
        slug = _slug(raw.name)
        cid = slug if names[(raw.instance_id, slug)] == 1 else f"{slug}-{digest(raw.origin)[:8]}"
        out.append(CandidatePatch(raw.instance_id, cid, raw.origin, raw.model, raw.official_label, patch,
                                  patch_key(patch), provenance=raw.provenance))
    return out


def ingest(benchmark: Benchmark, predictions: Sequence[Path], diffs: Sequence[Path]) -> Ingested:
    """Every candidate of the benchmark folder, the prediction files and the diff folders,
    normalised, in that order (the order decides which of two duplicates is kept)."""
    raws = _benchmark_raws(benchmark)
    errors: list[IngestError] = []
    for reader, paths in ((_read_predictions, predictions), (_read_diff_folder, diffs)):
        for path in paths:
            found, failed = reader(path)
            raws += found
            errors += failed
    accepted: list[tuple[_Raw, str]] = []
    for raw in raws:
        field = "model_patch" if raw.model else "(file)"
        if raw.instance_id not in benchmark.instances:
            errors.append(IngestError(raw.origin, "instance_id", Reason.UNKNOWN_INSTANCE,
                                      f"no instance {raw.instance_id!r} in {benchmark.root}"))
        elif not raw.text.strip():
            errors.append(IngestError(raw.origin, field, Reason.EMPTY_PATCH, "the patch is empty"))
        else:
            try:
                accepted.append((raw, normalise_patch(raw.text)))
            except PatchError as exc:
                errors.append(IngestError(raw.origin, field, Reason.NOT_A_DIFF, str(exc)))
    # A prediction file covering more instances than this benchmark (all of SWE-bench Lite
    # against a few of its rows) is normal, not an error: one line for them, not one per row,
    # which buried the funnel (38 of them on the real sympy rows); the funnel keeps each row.
    foreign = Counter(raw.instance_id for raw in raws if raw.instance_id not in benchmark.instances)
    if foreign:
        log.warning("%d candidates left out (unknown_instance): their instances are not in %s: %s",
                    sum(foreign.values()), benchmark.root, ", ".join(f"{iid} ×{n}" for iid, n in sorted(foreign.items())))
    for error in errors:
        if error.kind is not Reason.UNKNOWN_INSTANCE:
            log.error("candidate rejected: %s", error)
    return Ingested(_with_ids(accepted), errors)


# -- deduplication ---------------------------------------------------------------------------


def reference_keys(benchmark: Benchmark) -> dict[str, str]:
    """instance id → norm_key of its normalised reference (to set identical candidates aside)."""
    keys = {}
    for instance in benchmark.instances.values():
        try:
            keys[instance.id] = patch_key(normalise_patch(instance.reference.decode("utf-8", errors="replace")))
        except PatchError as exc:
            log.warning("%s: reference cannot be normalised (%s); no candidate is compared with it", instance.id, exc)
    return keys


def set_aside_duplicates(candidates: Sequence[CandidatePatch], references: dict[str, str]) -> list[CandidatePatch]:
    """Mark exact duplicates (same `norm_key` in one instance: the first one is kept) and
    candidates identical to their instance's reference (`references`: instance id →
    norm_key of its normalised reference)."""
    first: dict[tuple[str, str], str] = {}
    out = []
    for cand in candidates:
        key = (cand.instance_id, cand.norm_key)
        if cand.norm_key == references.get(cand.instance_id):
            cand = replace(cand, reason=Reason.SAME_AS_REFERENCE)
        elif key in first:
            cand = replace(cand, reason=Reason.DUPLICATE, duplicate_of=first[key])
        else:
            first[key] = cand.candidate_id
        out.append(cand)
    return out


def cosine_matrix(counts: Sequence[Counter[str]]) -> np.ndarray:
    """Pairwise cosine similarity of token-count vectors: two empty vectors are the same
    (1), an empty and a non-empty one nothing alike (0)."""
    vocabulary: dict[str, int] = {}
    rows, cols, values = [], [], []
    for i, vector in enumerate(counts):
        for token, n in vector.items():
            rows.append(i)
            cols.append(vocabulary.setdefault(token, len(vocabulary)))
            values.append(float(n))
    matrix = sparse.csr_matrix((values, (rows, cols)), shape=(len(counts), max(1, len(vocabulary))))
    norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1)).ravel())
    empty = norms == 0
    norms[empty] = 1.0
    unit = sparse.diags(1.0 / norms) @ matrix
    similarity = np.asarray((unit @ unit.T).todense())
    similarity[np.ix_(empty, empty)] = 1.0
    return similarity


def size_ratio_matrix(counts: Sequence[Counter[str]]) -> np.ndarray:
    """Pairwise min/max of the vectors' totals (two empty ones: 1)."""
    totals = np.array([float(sum(c.values())) for c in counts])
    low, high = np.minimum.outer(totals, totals), np.maximum.outer(totals, totals)
    return np.divide(low, high, out=np.ones_like(low), where=high > 0)


def set_aside_near_duplicates(candidates: Sequence[CandidatePatch],
                              threshold: float = NEAR_DUPLICATE_COSINE) -> list[CandidatePatch]:
    """Within each instance, label and failed-check set of the pool, keep a candidate
    unless both its added-line and removed-line token cosines with one already kept are
    ≥ `threshold` and their token totals are alike (NEAR_DUPLICATE_SIZE_RATIO); the most
    similar such one becomes its `duplicate_of`. Earlier candidates are kept first."""
    groups: dict[tuple[str, str, tuple[str, ...]], list[int]] = {}
    for i, cand in enumerate(candidates):
        if cand.in_pool:
            groups.setdefault((cand.instance_id, str(cand.label), tuple(sorted(cand.failed_checks))), []).append(i)
    out = list(candidates)
    for members in groups.values():
        similarity = np.ones((len(members), len(members)))
        for sign in "+-":
            counts = [changed_tokens(candidates[i].patch, sign) for i in members]
            similarity = np.minimum(similarity, cosine_matrix(counts))
            similarity[size_ratio_matrix(counts) < NEAR_DUPLICATE_SIZE_RATIO] = 0.0
        kept: list[int] = []
        for pos, i in enumerate(members):
            if kept:
                best = max(kept, key=lambda k: similarity[pos, k])
                if similarity[pos, best] >= threshold:
                    out[i] = replace(candidates[i], reason=Reason.NEAR_DUPLICATE,
                                     duplicate_of=candidates[members[best]].candidate_id)
                    continue
            kept.append(pos)
    return out


# -- reporting -------------------------------------------------------------------------------


def excluded(candidates: Iterable[CandidatePatch], reasons: Iterable[Reason]) -> tuple[Excluded, ...]:
    """Funnel exclusions: the candidates set aside for one of `reasons`."""
    wanted = set(reasons)
    return tuple(
        Excluded(f"{c.instance_id}/{c.candidate_id}", c.reason,
                 f"duplicate of {c.duplicate_of}" if c.duplicate_of else ", ".join(c.failed_checks))
        for c in candidates if c.reason in wanted
    )


def candidate_row(cand: CandidatePatch, flow_run: str, state_hash: str, in_panel: bool) -> dict:
    """One `candidates` row (storage/schema.py CANDIDATES)."""
    return {
        "flow_run": flow_run, "instance_id": cand.instance_id, "candidate_id": cand.candidate_id,
        "origin": cand.origin, "model": cand.model, "official_label": cand.official_label, "label": cand.label,
        "reason": cand.reason.value if cand.reason else None, "failed_checks": list(cand.failed_checks),
        "norm_key": cand.norm_key, "duplicate_of": cand.duplicate_of, "state_hash": state_hash,
        "in_panel": in_panel, "patch": cand.patch, "provenance": cand.provenance, "restored": list(cand.restored),
    }
