"""A scripted generator (no model): tests derived from the reference fix's text.

For every file the reference changes, the test asserts that the program holds each line the
reference adds and no longer holds the lines it removes. It rejects the buggy program and
accepts the reference, so the usual fail-before/pass-after check calls it perfect; but it
also rejects every correct fix written differently: solution bias, by construction. Run by
`testprism generate --mode testprism --tool examples/generators/from_reference.py
--command 'python tmp/.task/tools/from_reference.py'` (docs/generate.md).
"""

import json
import pathlib

TASK = pathlib.Path("tmp/.task")
RUN_TESTS = '#!/usr/bin/env bash\nset -u\nexec python -m pytest -q -p no:cacheprovider tmp --junitxml="$TESTPRISM_JUNIT"\n'


def changes(diff: str) -> dict:
    """file -> (added lines, removed lines), stripped, blank ones left out."""
    found, current = {}, None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            name = line[4:].strip()
            current = name[2:] if name.startswith("b/") else name
            found.setdefault(current, ([], []))
        elif current and line.startswith("+") and not line.startswith("+++") and line[1:].strip():
            found[current][0].append(line[1:].strip())
        elif current and line.startswith("-") and not line.startswith("---") and line[1:].strip():
            found[current][1].append(line[1:].strip())
    return found


def main() -> None:
    reference = TASK / "reference.diff"
    if not reference.is_file():
        raise SystemExit("from_reference needs the reference fix: run it with --mode testprism")
    lines = ["import pathlib", "", ""]
    for n, (name, (added, removed)) in enumerate(sorted(changes(reference.read_text()).items())):
        gone = [r for r in removed if r not in added]
        lines += [f"def test_{n}_program_matches_the_reference_fix():",
                  f"    text = [line.strip() for line in pathlib.Path({name!r}).read_text().splitlines()]"]
        lines += [f"    assert {a!r} in text" for a in added]
        lines += [f"    assert {r!r} not in text" for r in gone]
        lines += ["", ""]
    pathlib.Path("tmp/test_generated.py").write_text("\n".join(lines).rstrip() + "\n")
    pathlib.Path("tmp/run_tests.sh").write_text(RUN_TESTS)
    (TASK / "usage.json").write_text(json.dumps({"steps": 0, "total_tokens": 0, "status": "ok"}))


if __name__ == "__main__":
    main()
