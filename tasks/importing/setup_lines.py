"""What a benchmark's set-up line needs that a check run does not have, read line by line.

A check run has no network, runs as an unprivileged uid, and sees the environment's root
read-only (SECURITY.md). The benchmarks' harnesses run their set-up lines as root with the
network: SWE-bench's eval script runs a version's `eval_commands` and `build` (django 3.x's
`sed -i … /etc/locale.gen && locale-gen`, axios's `npm install`), a Harbor task's test.sh
installs its tools (`apt-get install`, `pip install`, `curl … | sh`). Each importer asks
these two questions of each line, and decides: run it at the environment's build (the one
networked step, Harbor), leave it to the image's build and say so, or refuse the row.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

#: lines that fetch over the network: an installer piped to a shell, a package manager's
#: install from its index (pip, uv, apt, npm, pnpm, yarn, composer, bundler, gem)
FETCHES = re.compile(r"\b(?:curl|wget)\b.*\|\s*(?:sudo\s+)?(?:ba|z|da)?sh\b"
                     r"|\b(?:pip3?|python3?(?:\.\d+)?\s+-m\s+pip|uv\s+pip)\s+install\b"
                     r"|\bapt(?:-get)?\s+(?:-\S+\s+)*(?:update|install)\b"
                     r"|\b(?:npm|pnpm|yarn)\s+(?:install|ci|add)\b"
                     r"|\bcomposer\s+(?:install|update|require)\b"
                     r"|\b(?:bundle|gem)\s+install\b")
#: lines that need root: writing the system's folders, making locales, switching users
NEEDS_ROOT = re.compile(r"\blocale-gen\b|\bupdate-locale\b|\bsudo\b|(?:^|[;&|]\s*)su\s+\S"
                        r"|\b(?:useradd|groupadd|chown)\b|\bapt(?:-get)?\s"
                        r"|(?:>|\btee\b|\bsed\s+-i\b[^;&|]*|\bcp\b[^;&|]*|\bmv\b[^;&|]*)\s*/(?:etc|usr|opt|var)/")


def needs_network(line: str) -> bool:
    """Whether the line fetches over the network (FETCHES)."""
    return bool(FETCHES.search(line))


def needs_root(line: str) -> bool:
    """Whether the line needs root (NEEDS_ROOT): the run's read-only root and its
    unprivileged uid make it fail."""
    return bool(NEEDS_ROOT.search(line))


def numbered_commands(script: str) -> Iterator[tuple[int, str]]:
    """A script's logical lines (continuations joined), each with the number of its first
    physical line; comments and blanks dropped."""
    pending, first = "", 0
    for number, line in enumerate(script.splitlines(), start=1):
        first = first or number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        command = (pending + line).strip()
        pending, start, first = "", first, 0
        if command and not command.startswith("#"):
            yield start, command


def commands(script: str) -> Iterator[str]:
    """A script's logical lines (`numbered_commands` without their numbers)."""
    return (command for _, command in numbered_commands(script))


def script_notes(script: str, shown: str) -> list[str]:
    """What a check run cannot do of a benchmark's own script (SWE-bench Pro's
    run_script.sh), line by line, for the import's report: each line that fetches over the
    network or needs root, named by `shown` (its file) and line number. Reported, not
    refused: such a script often guards the line (`npm ci || true`) or needs it only where
    the image lacks what it fetches; the gate shows a row whose checks fail without it."""
    notes = []
    for number, line in numbered_commands(script):
        need = "the network" if needs_network(line) else "root" if needs_root(line) else ""
        if need:
            notes.append(f"{shown}:{number}: {line!r} needs {need}, which a check run has not (no network, an "
                         "unprivileged uid on a read-only root): it fails there")
    return notes
