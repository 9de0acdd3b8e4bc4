"""A scripted generator (no model): a check from the instruction's own examples.

The check replays the `>>>` lines of the instruction's python code blocks and asserts every
claim the instruction writes as `` `A == B` `` that can be evaluated on this program (checked
here, on the buggy program, in a subprocess: a claim that raises anything but AssertionError
is left out). It checks what the issue shows and nothing else, so it accepts any patch that
gets the examples right, however much else it breaks: a weak specification, by construction.
Only Python is evaluated: for an instruction with no python examples or claims (a Go or
JavaScript instance's) the check is empty and passes on every state, the weakest suite.

The suite it writes is language-neutral: `tmp/check_generated.py`, a standard-library-only
Python 3 script (3.8 or later, no pytest) that runs the check, writes its own JUnit report to
$TESTPRISM_JUNIT and exits non-zero when it fails, and `tmp/run_tests.sh`, which runs it with
the environment's `python3` and the program root on PYTHONPATH (so the examples import the
program as under pytest's rootdir). Run by `testprism generate --tool
examples/generators/from_instruction.py --command 'python3 tmp/.task/tools/from_instruction.py'`
(docs/generate.md).
"""

import json
import pathlib
import re
import subprocess
import sys

TASK = pathlib.Path("tmp/.task")
#: the suite's entry: any python3 on PATH (the environment's, or the system's for a Go or
#: JavaScript instance: no pytest needed), the program root importable as under pytest's rootdir
RUN_TESTS = ('#!/usr/bin/env bash\nset -u\nexport PYTHONPATH=".${PYTHONPATH:+:$PYTHONPATH}"\n'
             'exec python3 tmp/check_generated.py\n')
#: appended to every generated check script: runs CHECKS in order, writes the JUnit report to
#: $TESTPRISM_JUNIT (a <failure> for a failed assert, an <error> for any other exception; a
#: suite without checks writes a valid report without cases) and exits 1 on any of them
RUNNER = r'''
# -- the runner (the same in every generated suite): stdlib only, Python >= 3.8 ------------


def _xml_text(text):
    """`text` without the characters XML 1.0 cannot hold (a program's output may have any)."""
    return "".join(c for c in text if c in "\t\n\r" or " " <= c <= "\ud7ff" or "\ue000" <= c <= "\ufffd"
                   or c >= "\U00010000")


def _main():
    import os
    import sys
    import time
    import traceback
    import xml.etree.ElementTree as ET

    suite = ET.Element("testsuite", name="check_generated")
    failures = errors = 0
    began = time.monotonic()
    for check in CHECKS:
        case = ET.SubElement(suite, "testcase", classname="tmp.check_generated", name=check.__name__)
        start = time.monotonic()
        try:
            check()
        except AssertionError as exc:
            failures += 1
            entry = ET.SubElement(case, "failure", message=_xml_text(str(exc) or "assertion failed"))
            entry.text = _xml_text(traceback.format_exc())
            print("FAIL", check.__name__, "\n" + traceback.format_exc(), flush=True)
        except BaseException as exc:  # an example's SystemExit too
            errors += 1
            entry = ET.SubElement(case, "error", message=_xml_text("%s: %s" % (type(exc).__name__, exc)))
            entry.text = _xml_text(traceback.format_exc())
            print("ERROR", check.__name__, "\n" + traceback.format_exc(), flush=True)
        else:
            print("PASS", check.__name__, flush=True)
        case.set("time", "%.3f" % (time.monotonic() - start))
    suite.set("tests", str(len(CHECKS)))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("time", "%.3f" % (time.monotonic() - began))
    report = os.environ.get("TESTPRISM_JUNIT")
    if report:
        root = ET.Element("testsuites")
        root.append(suite)
        ET.ElementTree(root).write(report, encoding="utf-8", xml_declaration=True)
    print("%d checks: %d failed, %d errors" % (len(CHECKS), failures, errors), flush=True)
    sys.exit(1 if failures or errors else 0)


if __name__ == "__main__":
    _main()
'''


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


def script(setup: list, claims: list) -> str:
    """The check script: one check, the examples then the claims, then the runner."""
    body = [f"    {line}" for s in setup for line in s.splitlines()] + [f"    assert {c}, {c!r}" for c in claims]
    return ('"""Generated by from_instruction.py: the instruction\'s python examples and claims."""\n\n\n'
            "def check_the_examples_of_the_instruction():\n" + "\n".join(body or ["    pass"]) + "\n\n\n"
            "CHECKS = [check_the_examples_of_the_instruction]\n" + RUNNER)


def main() -> None:
    text = (TASK / "instruction.md").read_text()
    setup = []
    for statement in statements(text):  # keep what runs here: an example's shown output is not code
        if subprocess.run([sys.executable, "-c", "\n".join(setup + [statement])], capture_output=True,
                          timeout=60).returncode == 0:
            setup.append(statement)
    claims = [c for c in dict.fromkeys(re.findall(r"`([^`\n]+?==[^`\n]+?)`", text)) if evaluable(setup, c)]
    pathlib.Path("tmp/check_generated.py").write_text(script(setup, claims))
    pathlib.Path("tmp/run_tests.sh").write_text(RUN_TESTS)
    (TASK / "usage.json").write_text(json.dumps({"steps": 0, "total_tokens": 0, "status": "ok"}))


if __name__ == "__main__":
    main()
