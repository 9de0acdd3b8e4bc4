"""A verifier's reward as the official check (Harbor's `tests/test.sh`, `[checks.reward]`).

Harbor runs a task's verifier as `bash /tests/test.sh`, the task's `tests/` uploaded to
`/tests`, and reads the reward it leaves in `/logs/verifier`: `reward.json` (an object whose
numeric `reward` is the reward) if there is one, else `reward.txt` (a number); a missing,
empty or unparsable reward file is an error of the trial, not a score (harbor
src/harbor/verifier/verifier.py, `_parse_reward_json` / `_parse_reward_text`). A task is
resolved when the reward is 1.

Here the check's command is wrapped (`verifier_command`) so that the run starts with an
empty `/logs/verifier` and, after the verifier, hands both reward files back through the
one file a backend returns (`$TESTPRISM_JUNIT`), each cut to REWARD_MAX_BYTES and framed by
a header line with its size. The harness reads them (`read_reward`) into the one check
`reward`, passed iff the reward is 1; what is not a number is `Unreadable`, which the run
records as `E`/`parse_failed` (tasks/execution/verdict.py), never as a pass or a failure.
"""

from __future__ import annotations

import json
import math
import re

from testprism.tasks.execution.verdict import Unreadable
from testprism.tasks.model.benchmark import REWARD_CHECK
from testprism.tasks.model.outcome import TestResult

#: Harbor's logs folder, inside the run: an empty writable folder of the run's own
LOGS_AT = "/logs"
#: where Harbor's verifier writes its reward, inside the run
VERIFIER_LOGS = f"{LOGS_AT}/verifier"
#: where Harbor places the task's tests/, inside the run
TESTS_AT = "/tests"
#: bytes of each reward file handed back (a reward is a number; reward.json a small object)
REWARD_MAX_BYTES = 64 * 1024
#: the reward files, in the order Harbor reads them
REWARD_FILES = ("reward.json", "reward.txt")

_HEADER = re.compile(rb"== (reward\.json|reward\.txt) (\d+)\n")


def verifier_command(command: str) -> str:
    """`command` (the verifier, run from the program root) between an emptied
    /logs/verifier and the hand-back of the reward files. The verifier's exit status is
    not the verdict (Harbor ignores it too): the reward is."""
    hand_back = "".join(
        f'if [ -f {VERIFIER_LOGS}/{name} ]; then head -c {REWARD_MAX_BYTES} {VERIFIER_LOGS}/{name} > "$reward_part"; '
        f'printf "== {name} %s\\n" "$(wc -c < "$reward_part")" >> "$TESTPRISM_JUNIT"; '
        f'cat "$reward_part" >> "$TESTPRISM_JUNIT"; fi\n'
        for name in REWARD_FILES)
    return (f"rm -rf {VERIFIER_LOGS} && mkdir -p {VERIFIER_LOGS} {LOGS_AT}/agent || exit 96\n"
            f"( {command}\n)\n"
            'reward_part="$(mktemp)"\n: > "$TESTPRISM_JUNIT"\n'
            + hand_back)


def _files(data: bytes) -> dict[str, bytes]:
    """The framed reward files of `data`, or Unreadable when the framing is broken."""
    found: dict[str, bytes] = {}
    at = 0
    while at < len(data):
        header = _HEADER.match(data, at)
        if header is None:
            raise Unreadable("the reward files came back garbled")
        size = int(header.group(2))
        start = header.end()
        if size > REWARD_MAX_BYTES or start + size > len(data):
            raise Unreadable("the reward files came back garbled")
        found[header.group(1).decode()] = data[start:start + size]
        at = start + size
    return found


def _number(text: str, where: str) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        raise Unreadable(f"{where} holds {text.strip()[:80]!r}, not a number") from None
    if not math.isfinite(value):
        raise Unreadable(f"{where} holds {text.strip()[:80]!r}, not a finite number")
    return value


def _reward(files: dict[str, bytes]) -> float:
    """Harbor's rule: reward.json's numeric `reward` if it gives one, else reward.txt."""
    if not files:
        raise Unreadable(f"the verifier left no reward: neither {VERIFIER_LOGS}/reward.json nor reward.txt")
    for name, data in files.items():
        if not data.strip():
            raise Unreadable(f"{VERIFIER_LOGS}/{name} is empty")
    if "reward.json" in files:
        try:
            parsed = json.loads(files["reward.json"])
        except (ValueError, UnicodeDecodeError):
            raise Unreadable(f"{VERIFIER_LOGS}/reward.json is not JSON") from None
        if not isinstance(parsed, dict):
            raise Unreadable(f"{VERIFIER_LOGS}/reward.json is not an object")
        value = parsed.get("reward")
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return float(value)
        if "reward.txt" not in files:
            raise Unreadable(f"{VERIFIER_LOGS}/reward.json has no numeric `reward` (got {str(value)[:80]!r})")
    return _number(files["reward.txt"].decode("utf-8", errors="replace"), f"{VERIFIER_LOGS}/reward.txt")


def read_reward(data: bytes | None) -> tuple[TestResult, ...]:
    """The one check `reward` from what the wrapped verifier handed back: passed iff the
    reward is 1. Raises Unreadable (with the file and what is wrong) otherwise."""
    value = _reward(_files(data or b""))
    return (TestResult(REWARD_CHECK, "passed" if value == 1 else "failed", f"reward {value:g}"),)
