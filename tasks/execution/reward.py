"""A verifier's reward as the official check (Harbor's `tests/test.sh`, `[checks.reward]`).

Harbor runs a task's verifier as `bash /tests/test.sh`, the task's `tests/` uploaded to
`/tests`, and reads the reward it leaves in `/logs/verifier`: `reward.txt` (a number) or
`reward.json` (an object whose numeric `reward` is the reward); a missing, empty or
unparsable reward file is an error of the trial, not a score (harbor
src/harbor/verifier/verifier.py, `_parse_reward_text` / `_parse_reward_json`). A task is
resolved when the reward is 1.

Harbor takes whichever file is there, so the checked code, which the verifier's tests import
and which runs as the verifier does, could leave a reward.json of 1 beside the verifier's
own reward.txt of 0 and be read first. Here each task declares the one file its verifier
writes (`[checks.reward] format`, found at import from tests/: tasks/importing/harbor.py),
only that file is read, and a reward file of the other name beside it is no verdict:
`E`/`results_disagree` (ResultsDisagree).

The check's command is wrapped (`verifier_command`) so that the run starts with an empty
`/logs/verifier` and, after the verifier, hands both reward files back through the one file
a backend returns (`$TESTPRISM_JUNIT`), each cut to REWARD_MAX_BYTES and framed by a header
line with its size. The harness reads them (`read_reward`) into the one check `reward`,
passed iff the reward is 1; what is not a number (reward.json past the bounded reader's
bounds, tasks/model/bounded_json.py, included) is `Unreadable`, which the run records as
`E`/`parse_failed` (tasks/execution/verdict.py), never as a pass or a failure.
"""

from __future__ import annotations

import math
import re

from testprism.tasks.execution.verdict import ResultsDisagree, Unreadable
from testprism.tasks.model import bounded_json
from testprism.tasks.model.benchmark_format import REWARD_CHECK, RewardSpec
from testprism.tasks.model.outcome import TestResult

#: Harbor's logs folder, inside the run: an empty writable folder of the run's own
LOGS_AT = "/logs"
#: where Harbor's verifier writes its reward, inside the run
VERIFIER_LOGS = f"{LOGS_AT}/verifier"
#: where Harbor places the task's tests/, inside the run
TESTS_AT = "/tests"
#: bytes of each reward file handed back (a reward is a number; reward.json a small object)
REWARD_MAX_BYTES = 64 * 1024
#: the reward files a verifier may write, each handed back when present
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


def _reward(files: dict[str, bytes], declared: str) -> float:
    """The reward of `declared` (the verifier's one reward file), read alone: a reward file of
    another name beside it is ResultsDisagree, whatever either holds."""
    others = sorted(set(files) - {declared})
    if others:
        raise ResultsDisagree(f"{VERIFIER_LOGS}/{others[0]} was written beside the verifier's own reward file "
                              f"({declared}): not read, and the reward is not trusted")
    if declared not in files:
        raise Unreadable(f"the verifier left no reward: no {VERIFIER_LOGS}/{declared}")
    data = files[declared]
    if not data.strip():
        raise Unreadable(f"{VERIFIER_LOGS}/{declared} is empty")
    if declared == "reward.txt":
        return _number(data.decode("utf-8", errors="replace"), f"{VERIFIER_LOGS}/reward.txt")
    try:
        parsed = bounded_json.loads(data, max_bytes=REWARD_MAX_BYTES)
    except bounded_json.JSONTooLarge as exc:
        raise Unreadable(f"{VERIFIER_LOGS}/reward.json is past a bound: {exc}") from None
    except ValueError:
        raise Unreadable(f"{VERIFIER_LOGS}/reward.json is not JSON") from None
    if not isinstance(parsed, dict):
        raise Unreadable(f"{VERIFIER_LOGS}/reward.json is not an object")
    value = parsed.get("reward")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    raise Unreadable(f"{VERIFIER_LOGS}/reward.json has no numeric `reward` (got {str(value)[:80]!r})")


def read_reward(data: bytes | None, reward: RewardSpec) -> tuple[TestResult, ...]:
    """The one check `reward` from what the wrapped verifier handed back, read from the
    task's declared reward file only: passed iff the reward is 1. Raises Unreadable (with
    the file and what is wrong; ResultsDisagree for a foreign reward file) otherwise."""
    value = _reward(_files(data or b""), reward.file)
    return (TestResult(REWARD_CHECK, "passed" if value == 1 else "failed", f"reward {value:g}"),)
