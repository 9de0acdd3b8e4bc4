"""The reference-test audit (tasks/curate/judge.py) against a real HTTP server on loopback
that speaks the chat-completions API: decisions, malformed answers, refusals, retries,
timeouts, the store's cache and the bound on concurrency. No traffic leaves 127.0.0.1."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from testprism.storage import Store
from tests.chatserver import TIMEOUT_S
from testprism.tasks.curate.judge import (
    PROMPT_VERSION, Audit, AuditItem, ChatJudge, Decision, JudgeConfig, JudgeConfigError, audit_all, decide,
    read_answer,
)
from testprism.tasks.model.outcome import AUDIT_REASONS, Reason

def judge_at(base_url: str, **settings: object) -> ChatJudge:
    values = {"base_url": base_url, "model": "judge-test", "api_key": "sk-test", "timeout_s": TIMEOUT_S,
              "max_retries": 2, "backoff_s": 0.01, **settings}
    return ChatJudge(JudgeConfig.load(values, environ={}))


def item(marker: str, instance_id: str | None = None) -> AuditItem:
    return AuditItem(
        instance_id=instance_id or f"inst-{marker}", source="swe",
        instruction=f"Make parse() reject empty input. [[script:{marker}]]",
        reference_patch="--- a/p.py\n+++ b/p.py\n@@ -1 +1,2 @@\n def parse(s):\n+    if not s: raise ValueError\n",
        test_patch="--- a/t.py\n+++ b/t.py\n@@ -0,0 +1,2 @@\n+def test_empty():\n+    pytest.raises(ValueError, parse, '')\n",
        fail_to_pass=("t.py::test_empty",), pass_to_pass=("t.py::test_other",),
    )


# -- pure parts ------------------------------------------------------------------------------


@pytest.mark.parametrize(("score", "threshold", "decision"), [
    (100, 80, Decision.INCLUDE), (80, 80, Decision.INCLUDE), (79, 80, Decision.REVIEW), (50, 80, Decision.REVIEW),
    (49, 80, Decision.EXCLUDE), (0, 80, Decision.EXCLUDE), (None, 80, Decision.REVIEW), (60, 60, Decision.INCLUDE),
    (30, 60, Decision.REVIEW), (29, 60, Decision.EXCLUDE),
])
def test_decision_rule(score, threshold, decision):
    assert decide(score, threshold) is decision


@pytest.mark.parametrize("text", ["fine", "[90]", '{"score": "90", "rationale": "x"}', '{"score": true, "rationale": "x"}',
                                  '{"score": -1, "rationale": "x"}', '{"score": 101, "rationale": "x"}',
                                  '{"score": 90}', '{"score": 90, "rationale": " "}',
                                  '{"score": 90.5, "rationale": "x"}',
                                  '{"score": 90, "rationale": "x", "decision": "include"}',  # a field more
                                  '{"score": 90, "rationale": "x"} and more'])
def test_malformed_answers_are_refused(text):
    with pytest.raises(ValueError):
        read_answer(text)


def test_well_formed_answers_are_read():
    assert read_answer('{"score": 0, "rationale": " weak "}') == (0, "weak")
    assert read_answer('```json\n{"score": 100.0, "rationale": "ok"}\n```') == (100, "ok")


def test_config_comes_from_values_then_the_environment():
    environ = {"TESTPRISM_JUDGE_BASE_URL": "http://127.0.0.1:9/v1", "TESTPRISM_JUDGE_MODEL": "env-model",
               "OPENAI_API_KEY": "sk-openai"}
    config = JudgeConfig.load({"timeout_s": "7.5"}, environ=environ)
    assert (config.base_url, config.model, config.api_key, config.timeout_s) == (
        "http://127.0.0.1:9/v1", "env-model", "sk-openai", 7.5)
    assert (config.threshold, config.temperature) == (80, 0.0)
    assert "sk-openai" not in repr(config)
    assert JudgeConfig.load({}, environ={**environ, "TESTPRISM_JUDGE_API_KEY": "sk-own"}).api_key == "sk-own"
    assert JudgeConfig.load({"model": "given"}, environ=environ).model == "given"


@pytest.mark.parametrize(("values", "named"), [
    ({"api_key": "k"}, "judge.model (or TESTPRISM_JUDGE_MODEL)"),
    ({"model": "m"}, "judge.api_key (or TESTPRISM_JUDGE_API_KEY / OPENAI_API_KEY)"),
    ({"model": "m", "api_key": "k", "threshold": 101}, "judge.threshold"),
    ({"model": "m", "api_key": "k", "retries": 3}, "judge.retries"),
    ({"model": "m", "api_key": "k", "max_requests": 0}, "judge.max_requests"),
])
def test_config_errors_name_the_setting(values, named):
    with pytest.raises(JudgeConfigError, match=re.escape(named)):
        JudgeConfig.load(values, environ={})


def test_the_key_covers_what_the_judge_sees_and_who_judges():
    judge = judge_at("http://127.0.0.1:9/v1")
    base = item("score-90")
    assert judge.key(base) == judge.key(item("score-90"))
    assert judge.key(base) == judge.key(item("score-90", instance_id="twin"))  # ids are not shown
    changed = [AuditItem(**{**{f: getattr(base, f) for f in base.__dataclass_fields__}, name: value})
               for name, value in [("instruction", "other"), ("reference_patch", "other"), ("test_patch", "other"),
                                   ("fail_to_pass", ("a",)), ("pass_to_pass", ())]]
    keys = {judge.key(c) for c in changed} | {judge.key(base), judge_at("x", model="other").key(base)}
    assert len(keys) == 7
    judge.prompt_version = PROMPT_VERSION + "-next"
    assert judge.key(base) not in keys


def test_reasons_are_words_of_the_one_vocabulary():
    assert {Reason.MALFORMED_ANSWER, Reason.JUDGE_REFUSED, Reason.JUDGE_FAILED, Reason.OVER_BUDGET} == AUDIT_REASONS


# -- against the server ----------------------------------------------------------------------


def by_instance(audits: list[Audit]) -> dict[str, Audit]:
    return {a.instance_id: a for a in audits}


def test_audit_all_decides_records_retries_and_caches(endpoint, tmp_path):
    url, script = endpoint
    store = Store(tmp_path / "store")
    judge = judge_at(url)
    markers = ["score-90", "score-50", "score-10", "fenced", "malformed", "out-of-range", "refuse",
               "rate-limited-once", "unavailable", "unauthorized"]
    items = [item(m) for m in markers] + [item("score-90", instance_id="twin-of-90")]

    got = by_instance(audit_all(items, judge, store, concurrency=3))

    assert [got[i.instance_id].instance_id for i in items] == [i.instance_id for i in items]
    assert {m: (got[f"inst-{m}"].score, got[f"inst-{m}"].decision) for m in ["score-90", "score-50", "score-10", "fenced"]} == {
        "score-90": (90, Decision.INCLUDE), "score-50": (50, Decision.REVIEW), "score-10": (10, Decision.EXCLUDE),
        "fenced": (85, Decision.INCLUDE)}
    assert got["inst-score-90"].rationale == "scored 90" and got["inst-score-90"].error is None
    assert got["twin-of-90"].score == 90 and got["twin-of-90"].key == got["inst-score-90"].key
    for marker in ["malformed", "out-of-range"]:
        audit = got[f"inst-{marker}"]
        assert (audit.score, audit.decision, audit.reason, audit.attempts) == (
            None, Decision.REVIEW, Reason.MALFORMED_ANSWER, 1)
        assert audit.error.startswith("malformed answer")
    assert got["inst-malformed"].rationale == "These tests look fine to me."
    assert "outside 0..100" in got["inst-out-of-range"].error
    refused = got["inst-refuse"]
    assert (refused.decision, refused.reason, refused.rationale) == (
        Decision.REVIEW, Reason.JUDGE_REFUSED, "I cannot help with that.")
    retried = got["inst-rate-limited-once"]
    assert (retried.score, retried.decision, retried.attempts, retried.reason) == (90, Decision.INCLUDE, 2, None)
    unavailable = got["inst-unavailable"]
    assert (unavailable.decision, unavailable.reason, unavailable.attempts) == (Decision.REVIEW, Reason.JUDGE_FAILED, 3)
    assert "HTTP 503" in unavailable.error and not unavailable.settled
    unauthorized = got["inst-unauthorized"]  # a 4xx other than 429 is not retried
    assert (unauthorized.reason, unauthorized.attempts) == (Reason.JUDGE_FAILED, 1) and "HTTP 401" in unauthorized.error

    # the twin shares its key: asked once; retries are requests of their own
    assert script.requests == Counter({m: 1 for m in markers} | {"rate-limited-once": 2, "unavailable": 3})
    assert script.authorization == {"Bearer sk-test"}
    rows = store.scan("audits").collect()
    assert rows.height == len(items)
    assert set(rows["prompt_version"]) == {PROMPT_VERSION} and set(rows["model"]) == {"judge-test"}
    assert set(rows["reason"].drop_nulls()) <= {r.value for r in AUDIT_REASONS}

    # a rerun asks only what got no answer: settled ones, malformed and refused included, come from the store
    before = script.requests.copy()
    again = by_instance(audit_all(items, judge, store, concurrency=3))
    assert script.requests - before == Counter({"unavailable": 3, "unauthorized": 1})
    assert {k: (a.score, a.decision, a.reason) for k, a in again.items()} == {
        k: (a.score, a.decision, a.reason) for k, a in got.items()}
    assert store.scan("audits").collect().height == len(items) + 2

    # another threshold re-decides from the stored scores without asking
    strict = judge_at(url, threshold=95)
    assert strict.key(items[0]) == judge.key(items[0])
    before = script.requests.copy()
    decided = by_instance(audit_all([item("score-90")], strict, store, concurrency=1))
    assert decided["inst-score-90"].decision is Decision.REVIEW
    assert script.requests == before

    # another model is another question
    audit_all([item("score-90")], judge_at(url, model="other-judge"), store, concurrency=1)
    assert script.requests - before == Counter({"score-90": 1})


def test_the_audit_stops_at_its_budget_retries_included_and_asks_the_rest_on_a_rerun(endpoint, tmp_path):
    url, script = endpoint
    store = Store(tmp_path / "store")
    items = [item("rate-limited-once"), item("score-90"), item("score-50")]
    judge = judge_at(url, max_requests=2)
    got = audit_all(items, judge, store, concurrency=1)  # one thread: asked in order
    assert [(a.score, a.reason, a.attempts) for a in got] == [
        (90, None, 2), (None, Reason.OVER_BUDGET, 0), (None, Reason.OVER_BUDGET, 0)]  # the 429 was a request
    assert [a.decision for a in got[1:]] == [Decision.REVIEW] * 2 and not got[1].settled
    assert script.total() == 2 and judge.usage.requests == 2 and judge.usage.total_tokens == 2  # as the server said
    assert store.scan("audits").collect()["reason"].to_list().count("over_budget") == 2

    tokens = judge_at(url, max_total_tokens=2)  # one answer (2 tokens, the server's usage) spends it
    assert [a.reason for a in audit_all(items, tokens, store, concurrency=1)] == [None, None, Reason.OVER_BUDGET]
    assert script.total() == 3 and tokens.usage.total_tokens == 2

    audit_all(items, judge_at(url), store, concurrency=1)  # no budget: the last one is asked
    assert script.requests == Counter({"rate-limited-once": 2, "score-90": 1, "score-50": 1})


def test_no_server_is_a_review_never_an_exception(tmp_path):
    import socket

    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    audit = judge_at(f"http://127.0.0.1:{port}/v1", max_retries=1).audit(item("score-90"))
    assert (audit.decision, audit.reason, audit.attempts, audit.score) == (Decision.REVIEW, Reason.JUDGE_FAILED, 2, None)
    assert audit.error


@pytest.mark.slow
def test_a_timeout_is_retried_then_reviewed_and_asked_again(endpoint, tmp_path):
    url, script = endpoint
    store = Store(tmp_path / "store")
    judge = judge_at(url, max_retries=1)
    [audit] = audit_all([item("hang")], judge, store, concurrency=1)
    assert (audit.decision, audit.reason, audit.attempts, audit.error) == (
        Decision.REVIEW, Reason.JUDGE_FAILED, 2, "timed out")
    assert script.requests["hang"] == 2
    assert store.scan("audits").collect()["reason"].to_list() == ["judge_failed"]  # recorded, not cached
    audit_all([item("hang")], judge, store, concurrency=1)
    assert script.requests["hang"] == 4


@pytest.mark.slow
def test_concurrency_is_bounded(endpoint, tmp_path):
    url, script = endpoint
    items = [item(f"slow-{n}") for n in range(6)]
    audits = audit_all(items, judge_at(url), Store(tmp_path / "store"), concurrency=2)
    assert [a.decision for a in audits] == [Decision.INCLUDE] * 6
    assert script.total() == 6
    assert script.max_in_flight == 2  # never more than asked for, and the pool did use both
