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


def commands(script: str) -> Iterator[str]:
    """A script's logical lines (continuations joined), comments and blanks dropped."""
    pending = ""
    for line in script.splitlines():
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        command = (pending + line).strip()
        pending = ""
        if command and not command.startswith("#"):
            yield command
