"""Crossval's semantic review (TestHelix validates "using execution and semantic review"): a
test that execution flagged over-restrictive or weak is shown to a judge with the
instruction, the test, the state it disagreed on (the repair's diff) and both outputs
there (its own and a disagreeing peer's), and the judge answers whether the flag stands.

Execution alone misjudges in both directions: a peer repair the checks accept may still
be wrong in a way the instruction rules out (then the test that rejects it is right, not
over-restrictive), and a repair the checks reject may be rejected for a reason the
instruction never asked about. The judge reads what execution cannot: the instruction.

The judge is curate's (tasks/curate/judge.py): its settings (`JudgeConfig`: endpoint, key
from the environment, retries and their backoff, concurrency), its client and retry loop,
and its cache pattern: every answer is stored in `reviews` by content key (what the judge
sees, its model, the prompt version), so a rerun asks nothing twice. `review_item` never
raises: no usable answer is a review of None with the reason recorded, and the rule then
falls back as `decide` says.

The rule (`ReviewRule`) combines the two: `execution` keeps execution's verdict (the
review is recorded beside it), `review` lets the review overturn it, `both-agree` keeps a
flag only when the review confirms it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

import openai
import polars as pl
import pyarrow as pa

from testprism.storage import SCHEMAS, Store
from testprism.tasks.curate.judge import JudgeConfig, MalformedAnswer, answer_object, ask, judge_client
from testprism.tasks.model.hashing import digest
from testprism.tasks.model.outcome import Reason

log = logging.getLogger(__name__)

#: part of every review key: a new prompt is a new question
PROMPT_VERSION = "testhelix-review-1"
#: what of a test's files and of each output the judge is shown
SHOWN_CHARS = 6_000

SYSTEM_PROMPT = (
    "You review a generated regression test that peer cross-validation flagged. Several agents each wrote a "
    "test and a fix for the same issue; every test ran on every fix. Execution says this test is "
    "over-restrictive (it rejects a fix that the peer tests and the official checks accept) or weak (it "
    "accepts a fix that they reject, or passes on the buggy program). Decide from the instruction whether the "
    "flag is right: confirm it when the test's behaviour contradicts what the instruction asks for; overturn "
    "it when the test checks exactly what the instruction asks and the disagreeing fix is what is wrong. "
    'Answer with one JSON object and nothing else: {"verdict": "confirm" | "overturn", '
    '"rationale": "<one short paragraph>"}.')


class ReviewRule(StrEnum):
    """How execution's flag and the review's verdict combine (the crossval config's `rule`)."""

    EXECUTION = "execution"  #: execution decides; the review is recorded beside it
    REVIEW = "review"  #: the review may overturn a flag; no usable review keeps it
    BOTH_AGREE = "both-agree"  #: flagged only when the review confirms execution's flag


@dataclass(frozen=True, slots=True)
class ReviewItem:
    """One flagged test as the judge sees it."""

    instance_id: str
    test: str  #: the agent whose test was flagged
    execution_verdict: str  #: over_restrictive | weak
    evidence: str | None  #: the state it disagreed on: buggy, reference or a repair's agent
    detail: str  #: execution's why
    instruction: str
    test_files: str  #: the test's files, each under a header
    state_diff: str  #: the disagreeing repair's (or the reference's) diff; empty on the buggy program
    test_output: str  #: the flagged test's output on that state
    peer_output: str  #: a disagreeing peer test's output on it ("" when none ran there)

    @property
    def content_key(self) -> str:
        """What the judge is shown (agent names are not part of what it judges)."""
        return digest("review-item", self.execution_verdict, self.detail, self.instruction, self.test_files,
                      self.state_diff, self.test_output, self.peer_output)

    def messages(self) -> list[dict[str, str]]:
        user = (f"## Instruction\n\n{self.instruction}\n\n"
                f"## The flagged test\n\n{self.test_files}\n\n"
                f"## Execution's flag: {self.execution_verdict.replace('_', '-')}\n\n{self.detail}.\n\n"
                f"## The state it disagreed on ({self.evidence})\n\n```diff\n{self.state_diff or '(none)'}\n```\n\n"
                f"## The flagged test's output there\n\n```\n{self.test_output}\n```\n\n"
                f"## A disagreeing peer test's output there\n\n```\n{self.peer_output or '(none)'}\n```\n\n"
                'Answer with {"verdict": "confirm" | "overturn", "rationale": "..."} only.')
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


@dataclass(frozen=True, slots=True)
class Review:
    key: str
    verdict: str | None  #: confirm | overturn; None: no usable answer
    rationale: str
    model: str
    attempts: int
    reason: Reason | None = None
    error: str | None = None

    @property
    def settled(self) -> bool:
        return self.reason is not Reason.JUDGE_FAILED


def review_key(item: ReviewItem, config: JudgeConfig) -> str:
    return digest("review", item.content_key, config.model, PROMPT_VERSION)


def review_item(item: ReviewItem, config: JudgeConfig, client: openai.OpenAI) -> Review:
    """Ask the judge about one item; never raises (the contract of curate's judge)."""
    key = review_key(item, config)
    try:
        completion, attempts, error = ask(client, config, item.messages(), f"{item.instance_id}/{item.test}")
        if completion is None or not completion.choices:
            log.warning("review of %s/%s: no answer: %s", item.instance_id, item.test, error)
            return Review(key, None, "", config.model, attempts, Reason.JUDGE_FAILED, error or "no choices")
        message = completion.choices[0].message
        if message.refusal:
            return Review(key, None, message.refusal, config.model, attempts, Reason.JUDGE_REFUSED,
                          f"refused: {message.refusal}")
        content = message.content or ""
        answer = answer_object(content)
        verdict, rationale = answer.get("verdict"), answer.get("rationale")
        if verdict not in ("confirm", "overturn") or not isinstance(rationale, str) or not rationale.strip():
            raise MalformedAnswer(f"verdict {verdict!r} and a rationale expected")
        return Review(key, verdict, rationale.strip(), config.model, attempts)
    except MalformedAnswer as exc:
        log.warning("review of %s/%s: malformed answer: %s", item.instance_id, item.test, exc)
        return Review(key, None, content[:2000], config.model, attempts, Reason.MALFORMED_ANSWER, str(exc))
    except Exception as exc:  # noqa: BLE001 - one broken review never stops the others
        log.exception("review of %s/%s: unexpected error", item.instance_id, item.test)
        return Review(key, None, "", config.model, 0, Reason.JUDGE_FAILED, f"{type(exc).__name__}: {exc}")


def _stored(store: Store, keys: Sequence[str]) -> dict[str, Review]:
    if not store.parts("reviews"):
        return {}
    failed = Reason.JUDGE_FAILED.value
    rows = (store.scan("reviews")
            .filter(pl.col("review_key").is_in(list(keys)) & (pl.col("reason").is_null() | (pl.col("reason") != failed)))
            .unique("review_key", keep="first").collect())
    return {r["review_key"]: Review(r["review_key"], r["review"], r["rationale"], r["model"], r["attempts"],
                                    Reason(r["reason"]) if r["reason"] else None, r["error"])
            for r in rows.iter_rows(named=True)}


def review_all(items: Sequence[ReviewItem], config: JudgeConfig, store: Store) -> dict[tuple[str, str], Review]:
    """(instance id, test) → its review: stored answers reused, the rest asked by at most
    `config.concurrency` threads and appended to `reviews` as each finishes (failures too,
    asked again next time)."""
    keys = {(i.instance_id, i.test): review_key(i, config) for i in items}
    found = _stored(store, list(set(keys.values())))
    todo = {keys[(i.instance_id, i.test)]: i for i in items if keys[(i.instance_id, i.test)] not in found}
    log.info("review: %d flagged test(s), %d answer(s) reused, %d to ask %s", len(items), len(items) - len(todo),
             len(todo), config.model)
    client = judge_client(config)
    with ThreadPoolExecutor(max_workers=config.concurrency, thread_name_prefix="review") as pool:
        futures = {pool.submit(review_item, item, config, client): key for key, item in todo.items()}
        for future in as_completed(futures):
            key = futures[future]
            found[key] = got = future.result()
            item = todo[key]
            store.append("reviews", pa.Table.from_pylist([{
                "review_key": key, "instance_id": item.instance_id, "test": item.test,
                "execution_verdict": item.execution_verdict, "evidence": item.evidence, "model": got.model,
                "prompt_version": PROMPT_VERSION, "review": got.verdict, "rationale": got.rationale,
                "reason": got.reason.value if got.reason else None, "error": got.error, "attempts": got.attempts,
                "reviewed_at": datetime.now(UTC)}], schema=SCHEMAS["reviews"]))
    return {pair: found[key] for pair, key in keys.items()}


def decide(execution_verdict: str, review: Review | None, rule: ReviewRule) -> str:
    """The test's verdict under `rule` (`validated` when the flag does not stand)."""
    if rule is ReviewRule.EXECUTION or execution_verdict == "validated":
        return execution_verdict
    verdict = review.verdict if review is not None else None
    if rule is ReviewRule.REVIEW:
        return "validated" if verdict == "overturn" else execution_verdict
    return execution_verdict if verdict == "confirm" else "validated"


def shown(text: str) -> str:
    """The last SHOWN_CHARS of a text: a test's verdict is at the end of its output."""
    return text[-SHOWN_CHARS:]


def described(files: Mapping[str, str]) -> str:
    """A test's files under headers, bounded (from the start: a file reads top down)."""
    return ("\n\n".join(f"### {name}\n\n```\n{text.rstrip()}\n```" for name, text in sorted(files.items())))[:SHOWN_CHARS]
