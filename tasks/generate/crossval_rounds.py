"""Crossval's rounds (TestHelix's peer cross-validation with its feedback rounds): every
peer's test on the buggy program, the reference and every peer's repair; the official
checks on every repair; execution's flags (tasks/generate/crossval.py); the semantic review
of each flagged test and the rule that combines the two (tasks/generate/review.py); then
the agents of the tests still flagged are asked again, within what their first run left,
until none is flagged or the rounds are spent.

A plain function of the store and three placing calls the flow hands it (replay runs,
verifications, generation runs), so where batches run stays the flow's business and the
rounds' logic stays here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import polars as pl

from testprism.storage import Store
from testprism.tasks.collect.verification import Verification
from testprism.tasks.curate.judge import JudgeConfig, ModelCalls
from testprism.tasks.execution.batch import ExecutionOptions
from testprism.tasks.generate import crossval as pcv
from testprism.tasks.generate.generation import GenerationSpec, settled_generations
from testprism.tasks.generate.review import ReviewRule, decide, review_all
from testprism.tasks.model.benchmark import Instance
from testprism.tasks.replay.runs import RunSpec

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Placing:
    """The flow's batch-placing calls."""

    run: Callable[[list[RunSpec]], None]  #: replay these runs (the store keeps their rows)
    verify: Callable[[list[Verification]], dict[str, dict]]  #: the checks' rows by key
    generate: Callable[[list[GenerationSpec]], object]  #: run these generations


@dataclass(frozen=True)
class Rounds:
    peers: dict[str, list[pcv.Peer]]  #: the final tests (revised where a round kept one)
    validated: set[tuple[str, str]]  #: (instance id, agent) whose last verdict is validated
    matrix: pl.DataFrame  #: crossval_matrix rows, every round
    flags: pl.DataFrame  #: crossval_flags rows, every round
    verdicts: dict[str, dict[str, int]]  #: round → verdict → tests


def cross_validate(store: Store, instances: Mapping[str, Instance], peers: dict[str, list[pcv.Peer]],
                   feedback_rounds: int, replay_options: ExecutionOptions, check_options: ExecutionOptions,
                   place: Placing, review: JudgeConfig | None = None,
                   rule: ReviewRule = ReviewRule.EXECUTION) -> Rounds:
    """Round 0 and up to `feedback_rounds` feedback rounds; the reviews of every round
    share one budget (`review`'s)."""
    settled = settled_generations(store)
    calls = ModelCalls(review) if review is not None else None
    matrices, flag_tables, verdicts = [], [], {}
    validated: set[tuple[str, str]] = set()
    for round_ in range(feedback_rounds + 1):
        runs = pcv.crossval_runs(peers, replay_options)
        place.run(runs)
        checks = pcv.repair_checks(peers, check_options)
        labels = pcv.check_labels(instances, checks, place.verify(checks))
        cells = pcv.matrix(runs, store.scan("runs").collect())
        found = pcv.flags(cells, labels)
        flagged = [f for f in found if f.verdict is not pcv.Verdict.VALIDATED]
        reviews = review_all([pcv.review_item(f, peers[f.instance_id], cells) for f in flagged], calls, store) \
            if calls is not None and flagged else {}
        final = {(f.instance_id, f.test): decide(f.verdict.value, reviews.get((f.instance_id, f.test)), rule)
                 for f in found}
        matrices.append(cells.drop("output").with_columns(pl.lit(round_, pl.Int32).alias("round")))
        flag_tables.append(pcv.flag_table(found, round_, reviews, final))
        verdicts[str(round_)] = {v.value: sum(final[(f.instance_id, f.test)] == v.value for f in found)
                                 for v in pcv.Verdict}
        overturned = sum(final[(f.instance_id, f.test)] != f.verdict.value for f in flagged)
        log.info("crossval round %d: %s%s", round_, ", ".join(f"{n} {v}" for v, n in verdicts[str(round_)].items()),
                 f"; {overturned} execution flag(s) not kept after review ({rule.value})" if reviews else "")
        validated = {pair for pair, verdict in final.items() if verdict == pcv.Verdict.VALIDATED.value}
        still = [f for f in flagged if final[(f.instance_id, f.test)] != pcv.Verdict.VALIDATED.value]
        if round_ == feedback_rounds or not still:
            break
        again = {(f.instance_id, f.test): pcv.asked_again(f, peers[f.instance_id], cells, settled, round_ + 1)
                 for f in still}
        place.generate(list(again.values()))
        settled = settled_generations(store)
        peers = pcv.revised(store, peers, again, settled)
    if calls is not None:
        log.info("crossval review: %s spent %s", calls.config.model, calls.usage)
    return Rounds(peers, validated, pl.concat(matrices), pl.concat(flag_tables), verdicts)
