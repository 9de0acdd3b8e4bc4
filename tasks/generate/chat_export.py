"""Chat-format demonstrations: the recorded conversations of selected generation runs, one
`{"messages": [...]}` object a line, the shape fine-tuning APIs take (SWEPatchTest RQ2
fine-tunes on the generator's trajectory, chosen by what its suite met).

A run's conversation is what its model channel recorded (tasks/sandbox/transcript.py):
each exchange is the messages the agent sent and the assistant message it got back. An
agent that keeps its whole history resends every earlier turn, so an exchange whose
messages and answer begin a later exchange of the same run says nothing the later one
does not: only the longest of such a chain is exported. Identical conversations (two runs
that said and heard the same) are exported once. A `max_tokens` budget (the tokens the
channel measured for each exchange) bounds the export: a conversation that does not fit in
what is left is skipped, the next one may still fit.

Beside `messages`, each line carries `metadata`: the suite it led to, the metrics its
suite met and its provenance (configuration, instance, generation key, command, mode,
strategy, round, the exchange and its tokens). Fine-tuning APIs that refuse unknown keys
take the lines with `metadata` dropped.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from testprism.tasks.model.hashing import digest
from testprism.tasks.sandbox.transcript import read_transcript

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Conversation:
    messages: list[dict[str, Any]]
    exchange: int  #: the recorded exchange it ends with
    tokens: int  #: that exchange's total tokens, as the channel measured them


@dataclass(frozen=True)
class ChatExport:
    records: list[dict[str, Any]]
    duplicates: int  #: conversations left out as identical to one exported
    over_budget: int  #: conversations left out because `max_tokens` had no room


def _answered(exchange: dict) -> list[dict[str, Any]] | None:
    """The exchange as one conversation: the messages sent and the assistant message back
    (None: not a completed chat exchange)."""
    request, response = exchange.get("request"), exchange.get("response")
    if exchange.get("status") != 200 or not isinstance(request, dict) or not isinstance(request.get("messages"), list):
        return None
    if isinstance(response, dict) and response.get("stream") is True:
        answer = {"role": "assistant", "content": response.get("content", "")}
    else:
        try:
            message = response["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            return None
        answer = {k: v for k, v in message.items() if v is not None and k in ("role", "content", "tool_calls")}
    return [*request["messages"], answer]


def conversations(exchanges: Iterable[dict]) -> list[Conversation]:
    """A run's conversations: each completed exchange, without those a later one extends."""
    found = [(e["exchange"], m, (e.get("usage") or {}).get("total_tokens") or 0)
             for e in exchanges if (m := _answered(e)) is not None]
    kept = []
    for n, messages, tokens in found:
        extended = any(later != n and len(other) > len(messages) and other[:len(messages)] == messages
                       for later, other, _ in found)
        if not extended:
            kept.append(Conversation(messages, n, tokens))
    return kept


def chat_records(selected: Sequence[tuple[dict[str, Any], Any]], max_tokens: int | None) -> ChatExport:
    """The export of `selected` ((metadata, transcript path) per run, in order): one record
    per distinct conversation, within `max_tokens`."""
    records, seen, duplicates, over, spent = [], set(), 0, 0, 0
    for metadata, path in selected:
        for conversation in conversations(read_transcript(path)):
            key = digest("conversation", json.dumps(conversation.messages, sort_keys=True))
            if key in seen:
                duplicates += 1
                continue
            if max_tokens is not None and spent + conversation.tokens > max_tokens:
                over += 1
                continue
            seen.add(key)
            spent += conversation.tokens
            provenance = {**metadata["provenance"], "exchange": conversation.exchange, "tokens": conversation.tokens}
            records.append({"messages": conversation.messages, "metadata": {**metadata, "provenance": provenance}})
    log.info("chat export: %d conversations (%d tokens), %d duplicates left out, %d over the budget of %s tokens",
             len(records), spent, duplicates, over, max_tokens)
    return ChatExport(records, duplicates, over)
