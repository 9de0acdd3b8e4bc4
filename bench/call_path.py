"""Measure: the path one stage takes through the repository's code, from the CLI to its rows.

Why (issue 30, "must show"): a stage that is easy to follow enters few functions in few
files and rarely climbs back into a file it has left. This runs one CLI command in this
process (`testprism replay` or `testprism collect` on the bundled benchmark, a fresh store)
under `sys.setprofile`/`threading.setprofile`, keeps only calls whose code lies in the
repository's own folders (flows/, tasks/, storage/, testprism/), and prints:

- functions entered: distinct functions of the repository called;
- files visited: distinct files those functions are in;
- climbs back: distinct calls (caller → callee) whose callee's file is on the calling
  thread's stack below the caller's file, i.e. control goes back up into a file it has
  not yet returned to (a callback: the executor calling its Job, a flow's task body);
- re-entries: distinct calls from one file into another file the path had already left
  (visited before, not the caller's), per callee file, the files most re-entered first.

Sandbox runs are subprocesses: only the harness's Python is traced. Prefect runs tasks of
a thread runner in other threads; each thread's stack starts empty, so a climb back is
counted within one thread.

Run: `python bench/call_path.py replay [--configuration strong]` or
`python bench/call_path.py collect` (as root with bubblewrap, like the demo). `--json FILE`
also writes the figures.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def own_folders() -> dict[str, str]:
    """The folders of testprism's packages as imported (a revision's copy included), each
    with its name in the repository."""
    import testprism
    import testprism.flows
    import testprism.storage
    import testprism.tasks

    return {list(module.__path__)[0] + os.sep: name + "/" for module, name in
            ((testprism.flows, "flows"), (testprism.tasks, "tasks"), (testprism.storage, "storage"),
             (testprism, "testprism"))}

log = logging.getLogger("call_path")


class PathTracer:
    """What the profile hook saw, over every thread."""

    def __init__(self, own: dict[str, str]) -> None:
        self.own = own
        self.prefixes = tuple(own)
        self.functions: set[tuple[str, str]] = set()
        self.files: set[str] = set()
        self.climbs: set[tuple[str, str]] = set()
        self.reentries: set[tuple[str, str]] = set()
        self._seen_files: set[str] = set()
        self._local = threading.local()
        self._lock = threading.Lock()

    def _stack(self) -> list[str]:
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    def hook(self, frame, event, arg):  # noqa: ANN001 - sys.setprofile's signature
        if event not in ("call", "return"):
            return
        filename = frame.f_code.co_filename
        if not filename.startswith(self.prefixes):
            return
        stack = self._stack()
        if event == "return":
            if stack:
                stack.pop()
            return
        name = f"{frame.f_code.co_qualname}"
        prefix = next(p for p in self.prefixes if filename.startswith(p))
        short = self.own[prefix] + filename[len(prefix):]
        caller = stack[-1] if stack else None
        with self._lock:
            self.functions.add((short, name))
            self.files.add(short)
            if caller is not None and caller[0] != short:
                edge = (f"{caller[0]}:{caller[1]}", f"{short}:{name}")
                if short in (f for f, _ in stack[:-1]):
                    self.climbs.add(edge)
                if short in self._seen_files:
                    self.reentries.add(edge)
            self._seen_files.add(short)
        stack.append((short, name))

    def figures(self) -> dict:
        per_file = Counter(callee.split(":")[0] for _, callee in self.reentries)
        return {"functions_entered": len(self.functions), "files_visited": len(self.files),
                "climbs_back": len(self.climbs), "reentries": len(self.reentries),
                "reentries_by_file": dict(per_file.most_common()),
                "climbs": sorted(f"{a} -> {b}" for a, b in self.climbs),
                "files": sorted(self.files)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stage", choices=("replay", "collect"))
    parser.add_argument("--configuration", default="strong", help="replay: the one configuration replayed")
    parser.add_argument("--benchmark", type=Path, default=ROOT / "examples")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    from testprism.flows.cli import app

    with tempfile.TemporaryDirectory(prefix="call-path-") as scratch:
        store = Path(scratch) / "store"
        argv = ["replay", str(args.benchmark), "--store", str(store), "--configuration", args.configuration] \
            if args.stage == "replay" else ["collect", str(args.benchmark), "--store", str(store)]
        tracer = PathTracer(own_folders())
        threading.setprofile(tracer.hook)
        sys.setprofile(tracer.hook)
        try:
            app(argv, standalone_mode=False)
        finally:
            sys.setprofile(None)
            threading.setprofile(None)
    figures = tracer.figures()
    log.info("%s: %d functions entered, %d files visited, %d climbs back, %d re-entries into a file left",
             args.stage, figures["functions_entered"], figures["files_visited"], figures["climbs_back"],
             figures["reentries"])
    for file, n in figures["reentries_by_file"].items():
        log.info("  re-entered %-45s %d", file, n)
    for climb in figures["climbs"]:
        log.info("  climb back: %s", climb)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
