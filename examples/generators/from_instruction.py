"""A scripted generator (no model): tests from the instruction's own examples.

The test replays the `>>>` lines of the instruction's code blocks and asserts every claim the
instruction writes as `` `A == B` `` that can be evaluated on this program (checked here, on
the buggy program, in a subprocess: a claim that raises anything but AssertionError is left
out). It checks what the issue shows and nothing else, so it accepts any patch that gets the
examples right, however much else it breaks: a weak specification, by construction. Run by
`testprism generate --tool examples/generators/from_instruction.py
--command 'python tmp/.task/tools/from_instruction.py'` (docs/generate.md).
"""

import json
import pathlib
import re
import subprocess
import sys

TASK = pathlib.Path("tmp/.task")
RUN_TESTS = '#!/usr/bin/env bash\nset -u\nexec python -m pytest -q -p no:cacheprovider tmp --junitxml="$TESTPRISM_JUNIT"\n'


def statements(text: str) -> list:
    """The `>>>` statements of the python code blocks, continuation lines joined."""
    found = []
    for block in re.findall(r"```python\n(.*?)```", text, re.S):
        for line in block.splitlines():
            if line.startswith(">>> "):
                found.append(line[4:])
            elif line.startswith("... ") and found:
                found[-1] += "\n" + line[4:]
    return found


def evaluable(setup: list, claim: str) -> bool:
    program = "\n".join(setup + [f"assert {claim}"])
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    return done.returncode == 0 or "AssertionError" in done.stderr


def main() -> None:
    text = (TASK / "instruction.md").read_text()
    setup = []
    for statement in statements(text):  # keep what runs here: an example's shown output is not code
        if subprocess.run([sys.executable, "-c", "\n".join(setup + [statement])], capture_output=True,
                          timeout=60).returncode == 0:
            setup.append(statement)
    claims = [c for c in dict.fromkeys(re.findall(r"`([^`\n]+?==[^`\n]+?)`", text)) if evaluable(setup, c)]
    body = [f"    {line}" for s in setup for line in s.splitlines()] + [f"    assert {c}" for c in claims]
    test = "def test_the_examples_of_the_instruction():\n" + "\n".join(body or ["    pass"]) + "\n"
    pathlib.Path("tmp/test_generated.py").write_text(test)
    pathlib.Path("tmp/run_tests.sh").write_text(RUN_TESTS)
    (TASK / "usage.json").write_text(json.dumps({"steps": 0, "total_tokens": 0, "status": "ok"}))


if __name__ == "__main__":
    main()
