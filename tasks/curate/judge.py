"""The reference-test audit: an LLM judge scores how well an instance's official tests check
the behaviour its instruction asks for (SWEPatchTest's curation step, docs/curate.md).

A benchmark is only as good as its reference tests: tests that check nothing the instruction
says, or that pin the reference's own implementation, make every suite look wrong or right
for reasons that are not the suite's. SWEPatchTest asks a judge five questions about each
instance and keeps the ones it scores at least 80. Here:

- an `AuditItem` is what the judge sees, an `Audit` what it answered;
- `Judge` is the interface (one `audit`, a `threshold`), `ChatJudge` the one that speaks the
  OpenAI-compatible chat-completions API;
- `audit_all` asks a bounded pool of them and keeps settled answers in the store's `audits`
  dataset by content key, so a rerun asks nothing twice.

`audit` never raises: whatever goes wrong becomes a `review` with the reason and the error
recorded, because one bad instance must not stop the audit of the others.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import TypeVar

import openai
import polars as pl
import pyarrow as pa
from openai.types.chat import ChatCompletion
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from testprism.storage import SCHEMAS, Store
from testprism.tasks.model.benchmark import Instance
from testprism.tasks.model.hashing import digest
from testprism.tasks.model.metering import Budget, Meter, Usage
from testprism.tasks.model.outcome import Reason

log = logging.getLogger(__name__)

K = TypeVar("K")
Q = TypeVar("Q")
A = TypeVar("A")

#: Bump whenever the questions or the answer format change: it is part of every audit key,
#: so answers to an older prompt are not reused for the new one.
PROMPT_VERSION = "swepatchtest-audit-1"
#: No answer was had (asked again on a rerun); every other reason is the model's answer, kept.
UNSETTLED = frozenset({Reason.JUDGE_FAILED, Reason.OVER_BUDGET})
#: Scores this far below the threshold still go to a human (`review`), lower ones are `exclude`.
REVIEW_BAND = 30
#: How much of a malformed answer is kept as its rationale, for the human who reviews it.
RAW_ANSWER_LIMIT = 2000

QUESTIONS = (
    "Is the behaviour the instruction asks for objectively testable?",
    "Do the official tests enforce that behaviour?",
    "Are the assertions strong: would they catch a wrong result, not only a crash?",
    "Do the fail-to-pass tests support the fix: do they fail without it and pass with it, "
    "for the reason the instruction gives?",
    "Do the tests avoid depending on the reference's particular implementation (its private "
    "names, internal structure, or messages the instruction does not ask for)?",
)

SYSTEM_PROMPT = (
    "You audit the reference tests of a software-engineering benchmark instance. You are given "
    "the instruction a developer received, the reference fix, the official test patch and the "
    "ids of the tests that decide. Judge the tests, not the fix. Answer with one JSON object and "
    'nothing else: {"score": <integer 0-100>, "rationale": "<one short paragraph>"}. '
    "100 means the tests check exactly the behaviour asked for, strongly and independently of "
    "how the reference implements it; 0 means they cannot tell a correct fix from a wrong one."
)


class Decision(StrEnum):
    """What curation does with an instance."""

    INCLUDE = "include"  #: score ≥ threshold: its tests are trusted
    REVIEW = "review"  #: threshold - REVIEW_BAND ≤ score < threshold, or no usable score: a human decides
    EXCLUDE = "exclude"  #: score < threshold - REVIEW_BAND


def decide(score: int | None, threshold: int) -> Decision:
    """The decision rule (docs/curate.md): include at or above the threshold, review within
    REVIEW_BAND below it, exclude under that; no score is always a review."""
    if score is None:
        return Decision.REVIEW
    if score >= threshold:
        return Decision.INCLUDE
    return Decision.REVIEW if score >= threshold - REVIEW_BAND else Decision.EXCLUDE


@dataclass(frozen=True, slots=True)
class AuditItem:
    """One instance as the judge sees it."""

    instance_id: str
    source: str
    instruction: str
    reference_patch: str  # the reference diff
    test_patch: str  # the official checks' test patch
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]

    @classmethod
    def of(cls, instance: Instance) -> AuditItem:
        """The item of a loaded benchmark instance (its instruction.md, reference and checks)."""
        checks = instance.spec.checks
        return cls(
            instance_id=instance.id, source=instance.source,
            instruction=(instance.folder / "instruction.md").read_text(encoding="utf-8", errors="replace"),
            reference_patch=instance.reference.decode("utf-8", errors="replace"),
            test_patch=instance.checks_patch.decode("utf-8", errors="replace"),
            fail_to_pass=checks.fail_to_pass, pass_to_pass=checks.pass_to_pass,
        )

    @property
    def content_key(self) -> str:
        """Hash of what the judge is shown. The ids are not shown, so two instances with the
        same content are one question (asked once, a row each)."""
        return digest("audit-item", self.instruction, self.reference_patch, self.test_patch,
                      *self.fail_to_pass, "|", *self.pass_to_pass)


@dataclass(frozen=True, slots=True)
class Audit:
    """The judge's answer about one item."""

    key: str  # Judge.key of the item
    instance_id: str
    score: int | None  # 0..100; None when the judge gave none (see reason)
    decision: Decision
    rationale: str
    model: str
    attempts: int  # requests sent, retries included (0: none was sent)
    error: str | None = None  # what went wrong, for a human
    reason: Reason | None = None  # tasks/model/outcome.py AUDIT_REASONS; None: scored

    @property
    def settled(self) -> bool:
        """Whether this is the judge's answer (kept and reused) rather than a failure to get
        one (asked again next time). A malformed answer or a refusal is the model's answer."""
        return self.reason not in UNSETTLED


class Judge(ABC):
    """Anything that audits items: the chat judge, a scripted one, a panel of judges."""

    model: str  # who answers: part of every key
    prompt_version: str  # what is asked: part of every key
    threshold: int  # include at or above it

    def key(self, item: AuditItem) -> str:
        """The content key of this judge's audit of `item`: same key, same question to the
        same model, asked once."""
        return digest("audit", item.content_key, self.model, self.prompt_version)

    @property
    def usage(self) -> Usage | None:
        """What this judge's model calls spent (None: it calls no model)."""
        return None

    @abstractmethod
    def audit(self, item: AuditItem) -> Audit:
        """Audit one item; never raises (a failure is a `review` with its reason). Thread-safe."""


class JudgeConfigError(ValueError):
    """The judge's settings are missing or wrong; the message names the setting."""


#: Environment variables read by `JudgeConfig.load`, by setting; the first one set wins.
ENVIRONMENT = {
    "base_url": ("TESTPRISM_JUDGE_BASE_URL",),
    "model": ("TESTPRISM_JUDGE_MODEL",),
    "api_key": ("TESTPRISM_JUDGE_API_KEY", "OPENAI_API_KEY"),
}


class JudgeConfig(BaseModel):
    """How to reach the judge and how to treat its answers (docs/curate.md, "Configuration")."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str | None = None  # None: the client's default (api.openai.com)
    model: str = Field(min_length=1)
    api_key: str = Field(min_length=1, repr=False)
    timeout_s: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=4, ge=0)  # retries after the first request
    backoff_s: float = Field(default=1.0, ge=0)  # first retry's wait; doubles each retry
    backoff_cap_s: float = Field(default=60.0, ge=0)
    concurrency: int = Field(default=4, ge=1)
    threshold: int = Field(default=80, ge=0, le=100)
    temperature: float = Field(default=0.0, ge=0)
    #: the one budget of a stage's calls (`ModelCalls`; retries count; None: no limit):
    #: past it, what is left is not asked (`over_budget`, asked again on a rerun)
    max_requests: int | None = Field(default=None, ge=1)
    max_total_tokens: int | None = Field(default=None, ge=1)  #: prompt + completion, as the endpoint reports

    @property
    def budget(self) -> Budget:
        return Budget(self.max_requests, self.max_total_tokens)

    @classmethod
    def load(cls, values: Mapping[str, object] | None = None,
             environ: Mapping[str, str] | None = None) -> JudgeConfig:
        """Settings from `values` (e.g. a config file's `[judge]` table), then the environment
        (ENVIRONMENT) for what it leaves out, then the defaults."""
        environ = os.environ if environ is None else environ
        merged = dict(values or {})
        for name, variables in ENVIRONMENT.items():
            found = next((environ[v] for v in variables if environ.get(v)), None)
            if name not in merged and found is not None:
                merged[name] = found
        try:
            return cls.model_validate(merged)
        except ValidationError as exc:
            first = exc.errors()[0]
            name = ".".join(str(p) for p in first["loc"])
            hint = f" (or {' / '.join(ENVIRONMENT[name])})" if name in ENVIRONMENT else ""
            raise JudgeConfigError(f"judge.{name}{hint}: {first['msg']}") from exc


class MalformedAnswer(ValueError):
    """The judge's answer is not the JSON asked for."""


_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def answer_object(content: str, fields: frozenset[str]) -> dict:
    """The JSON object of an answer, with exactly `fields`, or MalformedAnswer saying what is
    wrong. A Markdown code fence around the whole JSON is tolerated (models add one even when
    told not to); anything else around it, or a field more or less, is not: a verdict is
    read from the shape asked for or not at all, never guessed from free text."""
    text = content.strip()
    fenced = _FENCE.match(text)
    try:
        answer = json.loads(fenced.group(1) if fenced else text)
    except ValueError as exc:
        raise MalformedAnswer(f"not JSON ({exc})") from exc
    if not isinstance(answer, dict):
        raise MalformedAnswer("not a JSON object")
    if set(answer) != fields:
        raise MalformedAnswer(f"fields {sorted(answer)}, not {sorted(fields)}")
    return answer


def read_answer(content: str) -> tuple[int, str]:
    """The score and rationale of an answer, or MalformedAnswer saying what is wrong."""
    answer = answer_object(content, frozenset({"score", "rationale"}))
    score = answer["score"]
    if isinstance(score, float) and score.is_integer():
        score = int(score)
    if isinstance(score, bool) or not isinstance(score, int):
        raise MalformedAnswer(f"score is {score!r}, not a whole number")
    if not 0 <= score <= 100:
        raise MalformedAnswer(f"score {score} is outside 0..100")
    return score, rationale_of(answer)


def rationale_of(answer: Mapping[str, object]) -> str:
    rationale = answer.get("rationale")
    if not isinstance(rationale, str) or not rationale.strip():
        raise MalformedAnswer("no rationale")
    return rationale.strip()


def _retryable(exc: openai.OpenAIError) -> bool:
    """Transport trouble worth another try: rate limits, server errors, timeouts, lost connections."""
    if isinstance(exc, openai.APIConnectionError):  # APITimeoutError included
        return True
    return isinstance(exc, openai.APIStatusError) and (exc.status_code == 429 or exc.status_code >= 500)


@dataclass(frozen=True, slots=True)
class Reply:
    """What asking got: the answer's text, or why there is none (`reason`)."""

    content: str  #: the answer; a refusal's text when refused
    attempts: int  #: requests sent, retries included
    reason: Reason | None = None  #: JUDGE_FAILED, JUDGE_REFUSED or OVER_BUDGET; None: answered
    error: str | None = None


class ModelCalls:
    """The one way the harness asks a model (the curate judge, crossval's review): an
    OpenAI-compatible client with its own retries off, a retry loop of its own with a
    doubling wait for transport trouble, and one `Meter` (tasks/model/metering.py) that
    counts every request, retries included, and the tokens each response reports against
    the config's budget. Past the budget nothing more is sent. Thread-safe: one per stage
    run, shared by its threads, so the budget is the run's."""

    def __init__(self, config: JudgeConfig) -> None:
        self.config = config
        self.meter = Meter(config.budget)
        self._client = openai.OpenAI(base_url=config.base_url, api_key=config.api_key, timeout=config.timeout_s,
                                     max_retries=0)

    @property
    def usage(self) -> Usage:
        return self.meter.usage

    def ask(self, messages: list[dict[str, str]], about: str) -> Reply:
        """Ask once, retrying transport trouble `config.max_retries` times while the budget
        admits another request. Never raises for what the endpoint does."""
        config, attempts = self.config, 0
        while True:
            if not self.meter.admit():
                spent = self.meter.usage
                return Reply("", attempts, Reason.OVER_BUDGET, f"the budget is spent: {spent.requests} request(s), "
                                                               f"{spent.total_tokens} token(s)")
            attempts += 1
            try:
                completion = self._client.chat.completions.create(model=config.model, messages=messages,
                                                                  temperature=config.temperature)
            except openai.OpenAIError as exc:
                if not _retryable(exc) or attempts > config.max_retries:
                    return Reply("", attempts, Reason.JUDGE_FAILED, _describe(exc))
                wait = min(config.backoff_cap_s, config.backoff_s * 2 ** (attempts - 1))
                log.info("model %s on %s: %s; retry %d of %d in %.1fs", config.model, about, _describe(exc),
                         attempts, config.max_retries, wait)
                time.sleep(wait)
                continue
            if not self.meter.record(completion.usage.model_dump() if completion.usage else None):
                log.warning("model %s reported no usage under a token budget: no more requests", config.model)
            return _reply(completion, attempts)


def _reply(completion: ChatCompletion, attempts: int) -> Reply:
    """A completed request's Reply: answered, refused, or no choice to read."""
    if not completion.choices:
        return Reply("", attempts, Reason.JUDGE_FAILED, "the response has no choices")
    choice = completion.choices[0]
    if choice.message.refusal or choice.finish_reason == "content_filter":
        text = choice.message.refusal or "stopped by the endpoint's content filter"
        return Reply(text, attempts, Reason.JUDGE_REFUSED, f"refused: {text}")
    return Reply(choice.message.content or "", attempts)


class ChatJudge(Judge):
    """SWEPatchTest's questions, asked of a model behind an OpenAI-compatible chat-completions
    endpoint through `ModelCalls` (every request is counted in `Audit.attempts` and against
    the config's budget)."""

    prompt_version = PROMPT_VERSION

    def __init__(self, config: JudgeConfig) -> None:
        self.config = config
        self.model = config.model
        self.threshold = config.threshold
        self.calls = ModelCalls(config)

    @property
    def usage(self) -> Usage:
        return self.calls.usage

    def messages(self, item: AuditItem) -> list[dict[str, str]]:
        """The conversation sent for `item`."""
        questions = "\n".join(f"{n}. {q}" for n, q in enumerate(QUESTIONS, 1))
        user = (f"## Instruction\n\n{item.instruction}\n\n"
                f"## Reference fix (unified diff)\n\n```diff\n{item.reference_patch}\n```\n\n"
                f"## Official test patch (unified diff)\n\n```diff\n{item.test_patch}\n```\n\n"
                f"## Fail-to-pass tests (fail before the fix, pass after)\n\n{_listed(item.fail_to_pass)}\n\n"
                f"## Pass-to-pass tests (pass before and after)\n\n{_listed(item.pass_to_pass)}\n\n"
                f"## Questions\n\n{questions}\n\n"
                'Weigh the questions together and answer with {"score": 0-100, "rationale": "..."} only.')
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]

    def audit(self, item: AuditItem) -> Audit:
        key = self.key(item)
        common = dict(key=key, instance_id=item.instance_id, model=self.model, decision=Decision.REVIEW, score=None)
        try:
            reply = self.calls.ask(self.messages(item), item.instance_id)
        except Exception as exc:  # noqa: BLE001 - the contract: one broken audit never stops the others
            log.exception("judge %s on %s: unexpected error", self.model, item.instance_id)
            return Audit(rationale="", attempts=0, error=f"{type(exc).__name__}: {exc}", reason=Reason.JUDGE_FAILED,
                         **common)
        if reply.reason is not None:
            log.warning("judge %s on %s: %s after %d request(s): %s", self.model, item.instance_id,
                        reply.reason.value, reply.attempts, reply.error)
            return Audit(rationale=reply.content, attempts=reply.attempts, error=reply.error, reason=reply.reason,
                         **common)
        try:
            score, rationale = read_answer(reply.content)
        except MalformedAnswer as exc:
            log.warning("judge %s on %s: malformed answer: %s", self.model, item.instance_id, exc)
            return Audit(rationale=reply.content[:RAW_ANSWER_LIMIT], attempts=reply.attempts,
                         error=f"malformed answer: {exc}", reason=Reason.MALFORMED_ANSWER, **common)
        return Audit(**{**common, "score": score, "decision": decide(score, self.threshold)}, rationale=rationale,
                     attempts=reply.attempts)


def _listed(ids: Sequence[str]) -> str:
    return "\n".join(f"- {i}" for i in ids) or "(none)"


def _describe(exc: openai.OpenAIError) -> str:
    if isinstance(exc, openai.APITimeoutError):
        return "timed out"
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {exc.message}"
    return f"{type(exc).__name__}: {exc}"


# -- the store -------------------------------------------------------------------------------


def stored_audits(store: Store, keys: Sequence[str], threshold: int) -> dict[str, Audit]:
    """The settled audits the store holds for `keys` (one per key, whoever wrote it). The
    decision is taken again at `threshold` from the stored score, so changing the threshold
    re-decides without asking the judge again."""
    frame = (store.scan("audits")
             .filter(pl.col("audit_key").is_in(list(keys)) & settled_reason())
             .unique("audit_key", keep="first").collect())
    return {
        row["audit_key"]: Audit(
            key=row["audit_key"], instance_id=row["instance_id"], score=row["score"],
            decision=decide(row["score"], threshold), rationale=row["rationale"], model=row["model"],
            attempts=row["attempts"], error=row["error"], reason=Reason(row["reason"]) if row["reason"] else None)
        for row in frame.iter_rows(named=True)
    }


def settled_reason() -> pl.Expr:
    """A stored row that is the model's answer (its reason not in UNSETTLED)."""
    return pl.col("reason").is_null() | ~pl.col("reason").is_in([r.value for r in UNSETTLED])


def audit_row(item: AuditItem, audit: Audit, judge: Judge, at: datetime) -> dict:
    """One `audits` row (storage/schema.py AUDITS)."""
    return {
        "audit_key": audit.key, "instance_id": item.instance_id, "source": item.source,
        "model": audit.model, "prompt_version": judge.prompt_version, "threshold": judge.threshold,
        "score": audit.score, "decision": audit.decision.value, "rationale": audit.rationale,
        "reason": audit.reason.value if audit.reason else None, "error": audit.error,
        "attempts": audit.attempts, "audited_at": at,
    }


def ask_each(questions: Mapping[K, Q], ask: Callable[[Q], A], concurrency: int, name: str,
             answered: Callable[[K, A], None]) -> None:
    """The one way a stage's questions go to a model (curate's audit, crossval's review): at
    most `concurrency` at once, each answer handed to `answered` in this thread as it arrives
    (to be stored at once: a run cut short keeps what it was told). The askers go through
    `ModelCalls`, whose one budget, retries and reasons make every failure of a call an
    answer of its own (`over_budget`, `judge_failed`...), so nothing is lost to an exception."""
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix=name) as pool:
        futures = {pool.submit(ask, question): key for key, question in questions.items()}
        for future in as_completed(futures):
            answered(futures[future], future.result())


def audit_all(items: Sequence[AuditItem], judge: Judge, store: Store, concurrency: int) -> list[Audit]:
    """Audit every item, one per item in order: settled answers come from the store, the rest
    are asked of `judge` by at most `concurrency` threads at once and appended to `audits` as
    each finishes (failures too, for the record; they are asked again next time)."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, not {concurrency}")
    keys = [judge.key(item) for item in items]
    by_key: dict[str, list[AuditItem]] = {}
    for key, item in zip(keys, items):
        by_key.setdefault(key, []).append(item)
    audits = stored_audits(store, list(by_key), judge.threshold)
    asked = [key for key in by_key if key not in audits]
    log.info("audit: %d item(s), %d answer(s) reused from the store, %d question(s) to ask %s",
             len(items), len(audits), len(asked), judge.model)
    def keep(key: str, audit: Audit) -> None:
        audits[key] = audit
        at = datetime.now(UTC)
        rows = [audit_row(twin, audit, judge, at) for twin in by_key[key]]
        store.append("audits", pa.Table.from_pylist(rows, schema=SCHEMAS["audits"]))

    ask_each({key: by_key[key][0] for key in asked}, judge.audit, concurrency, "judge", keep)
    unsettled = sum(not audits[key].settled for key in asked)
    if unsettled:
        log.warning("audit: %d question(s) got no answer from %s; a rerun asks them again", unsettled, judge.model)
    if judge.usage is not None:
        log.info("audit: %s spent %s", judge.model, judge.usage)
    return [replace(audits[key], instance_id=item.instance_id) for key, item in zip(keys, items)]
