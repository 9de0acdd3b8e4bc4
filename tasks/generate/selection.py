"""Demonstrations for fine-tuning: the generated suites whose replayed indicators meet a
criterion, exported with the trajectory that produced them (SWEPatchTest RQ2).

The classic fail-before/pass-after check (GRR) rewards a suite that copies the reference
fix, so choosing demonstrations by it teaches solution bias; SWEPatchTest finds that choosing
by WDR, CAR or JVR gives better fine-tuned generators. Selection therefore reads the
per-instance indicators `testprism score` wrote (`scores/instance_scores`), not the
generation run's own account, and joins them to the `generations` rows and the outputs kept
in the store (tasks/generate/outputs.py).

`--by` names the metric; the instance indicator it tests (storage/schema.py INSTANCE_SCORES,
README "Metrics"):

- grr → `f`: F_i = r(buggy) · a(reference)
- car → `a`: A_i, mean a(valid candidate); null without a valid candidate
- wdr → `r`: R_i, mean r(invalid candidate); null without an invalid candidate
- jvr → `s`: S_i = F_i · Π a(valid) · Π r(invalid)

An indicator that is null for an instance never passes: a suite never checked against a
valid (invalid) candidate has shown nothing about accepting (rejecting) one.

Two formats: `trajectory` (a record per suite: its indicators, the run's metadata, suite,
repair and log) and `chat` (the run's recorded model conversations as `{"messages": [...]}`
lines, tasks/generate/chat_export.py).
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from testprism.storage import Store, StoreError
from testprism.tasks.generate.chat_export import chat_records
from testprism.tasks.generate.outputs import conversation_file, generated_folder

log = logging.getLogger(__name__)

#: `--by` → the INSTANCE_SCORES column it tests
INDICATORS: dict[str, str] = {"grr": "f", "car": "a", "wdr": "r", "jvr": "s"}
FORMATS = ("trajectory", "chat")


class SelectionError(ValueError):
    """A selection option is unusable. Names the store and the option (the field)."""

    def __init__(self, path: Path | str, field: str, message: str) -> None:
        self.path, self.field = path, field
        super().__init__(f"{path}: field {field}: {message}")


@dataclass(frozen=True)
class SelectionSummary:
    selected: int
    scored: int  #: (configuration, instance) pairs considered (after --configuration)
    without_trajectory: int  #: scored pairs with no kept generation (hand-written suites)
    out: Path
    conversations: int = 0  #: chat format: lines written
    duplicates: int = 0  #: chat format: identical conversations left out
    over_budget: int = 0  #: chat format: conversations past --max-tokens
    without_conversation: int = 0  #: chat format: selected runs that had no channel


def check_criterion(store_root: Path, by: str, minimum: float, format_: str = "trajectory",
                    max_tokens: int | None = None) -> None:
    """Refuse a metric that is not one of the four and a threshold outside [0, 1] (every
    indicator is a share, so any other threshold selects all or nothing by accident), an
    unknown format and a token budget below 1 or without the chat format."""
    if format_ not in FORMATS:
        raise SelectionError(store_root, "--format", f"{format_!r} is not one of {', '.join(FORMATS)}")
    if max_tokens is not None and (max_tokens < 1 or format_ != "chat"):
        raise SelectionError(store_root, "--max-tokens", "a budget of at least 1 token, with --format chat")
    if by not in INDICATORS:
        raise SelectionError(store_root, "--by", f"{by!r} is not one of {', '.join(INDICATORS)}")
    if not 0.0 <= minimum <= 1.0:
        raise SelectionError(store_root, "--min", f"{minimum} is outside [0, 1]")


def scored_instances(store: Store, configurations: tuple[str, ...]) -> pl.DataFrame:
    """The store's per-instance indicators (of `configurations`, when given); refused when
    `testprism score` has not written them or names none of the configurations asked for."""
    path = store.paths.score_table("instance_scores")
    if not path.is_file():
        raise StoreError(f"{path}: field (file): no instance scores in the store; run `testprism score` first")
    scores = store.read_table("instance_scores")
    unknown = sorted(set(configurations) - set(scores["configuration"]))
    if unknown:
        raise SelectionError(store.paths.root, "--configuration",
                             f"not scored in this store: {', '.join(unknown)}")
    return scores.filter(pl.col("configuration").is_in(configurations)) if configurations else scores


def kept_generations(store: Store) -> pl.DataFrame:
    """Per (configuration, instance), the generation whose suite is current: the newest row
    of each generation key, kept (reason null, a suite), and of those the newest run (what
    `testprism generate` last wrote to OUT/suites/<configuration>/)."""
    if not store.parts("generations"):
        return pl.DataFrame(schema=store.scan("generations").collect_schema())
    return (store.scan("generations").sort("started_at").group_by("generation_key").last()
            .filter(pl.col("reason").is_null() & pl.col("suite_hash").is_not_null())
            .sort("started_at").group_by("configuration", "instance_id").last().collect())


def _suite_files(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8", errors="replace")
            for p in sorted(folder.rglob("*")) if p.is_file()}


def demonstration(store: Store, by: str, score: dict[str, Any], generation: dict[str, Any]) -> dict[str, Any]:
    """One JSONL record: the chosen metric, every indicator, and the trajectory's metadata
    and outputs as the store keeps them."""
    key = generation["generation_key"]
    folder = generated_folder(store, key)
    repair = folder / "repair.diff"
    return {
        "configuration": score["configuration"], "instance_id": score["instance_id"], "source": score["source"],
        "metric": by, "value": score[INDICATORS[by]],
        "indicators": {name: score[name] for name in ("f", "a", "r", "s", "n_valid", "n_invalid")},
        "generation_key": key, "command": generation["command"], "mode": generation["mode"],
        "strategy": json.loads(generation["strategy"]), "duration_s": generation["duration_s"],
        "exit_code": generation["exit_code"],
        "measured": {name: generation[name] for name in ("requests", "prompt_tokens", "completion_tokens",
                                                         "total_tokens")},
        "reported": {"steps": generation["reported_steps"], "tokens": generation["reported_tokens"]},
        "suite": _suite_files(folder / "suite"),
        "repair": repair.read_text(encoding="utf-8", errors="replace") if repair.is_file() else None,
        "log": generation["log"],
    }


def chat_metadata(by: str, score: dict[str, Any], generation: dict[str, Any], suite: dict[str, str]
                  ) -> dict[str, Any]:
    """What a chat line carries beside its messages: the suite, the metrics it met, where
    it came from."""
    return {"configuration": score["configuration"], "instance_id": score["instance_id"], "source": score["source"],
            "metric": by, "value": score[INDICATORS[by]],
            "indicators": {name: score[name] for name in ("f", "a", "r", "s", "n_valid", "n_invalid")},
            "suite": suite,
            "provenance": {"generation_key": generation["generation_key"], "command": generation["command"],
                           "mode": generation["mode"], "round": generation["round"],
                           "strategy": json.loads(generation["strategy"])}}


def _write_jsonl(records: list[dict[str, Any]], out: Path) -> None:
    """Temporary sibling, then rename: a reader never sees half an export."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            for record in records:
                fh.write(json.dumps(record, sort_keys=True) + "\n")
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)


def select_demonstrations(store_root: Path, by: str, minimum: float, out: Path,
                          configurations: tuple[str, ...] = (), format_: str = "trajectory",
                          max_tokens: int | None = None) -> SelectionSummary:
    """Write to `out` one record per scored (configuration, instance) whose indicator for
    `by` is at least `minimum` and whose suite a kept generation run wrote (`chat`: one
    per distinct conversation of those runs, within `max_tokens`)."""
    check_criterion(store_root, by, minimum, format_, max_tokens)
    store = Store.existing(store_root)
    scores = scored_instances(store, configurations)
    generations = {(g["configuration"], g["instance_id"]): g for g in kept_generations(store).iter_rows(named=True)}
    records, without = [], 0
    for score in scores.sort("configuration", "instance_id").iter_rows(named=True):
        generation = generations.get((score["configuration"], score["instance_id"]))
        if generation is None:
            without += 1
            continue
        value = score[INDICATORS[by]]
        if value is not None and value >= minimum:
            records.append((score, generation))
    log.info("select by %s >= %s: selected %d of %d scored suites, skipped %d without trajectories",
             by, minimum, len(records), scores.height, without)
    if format_ == "trajectory":
        _write_jsonl([demonstration(store, by, s, g) for s, g in records], out)
        log.info("wrote %d demonstrations to %s", len(records), out)
        return SelectionSummary(len(records), scores.height, without, out)
    talked = [(s, g, conversation_file(store, g["generation_key"])) for s, g in records]
    chats = chat_records([(chat_metadata(by, s, g, _suite_files(generated_folder(store, g["generation_key"]) / "suite")),
                           path) for s, g, path in talked if path is not None], max_tokens)
    _write_jsonl(chats.records, out)
    silent = sum(path is None for *_, path in talked)
    log.info("wrote %d conversations to %s (%d selected runs had no model channel)", len(chats.records), out, silent)
    return SelectionSummary(len(records), scores.height, without, out, len(chats.records), chats.duplicates,
                            chats.over_budget, silent)
