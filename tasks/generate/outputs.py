"""What a generation run leaves in the store, by generation key: `STORE/generated/<key>/`
holds `suite/` (the files it wrote under `tmp/`, its task folder left out), `repair.diff`
(its changes to the program, heterogeneous synthesis), `log.gz` (its whole output,
compressed: the trajectory a researcher reads) and `conversation.jsonl.gz` (every exchange
with its model through the channel, the key never in it: tasks/sandbox/transcript.py).

The names come from untrusted code: they were read back without following links
(tasks/sandbox/outputs.py), and each is checked again here before the harness writes it
into a folder of its own making (no component empty, `.` or `..`). A folder is written
under a temporary name and renamed, so a reader never sees half of one.
"""

from __future__ import annotations

import gzip
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from testprism.storage import Store
from testprism.tasks.model.folder_swap import swap_in
from testprism.tasks.model.hashing import digest, tree_digest
from testprism.tasks.sandbox.base import ExecResult

#: the suite's entry when the agent wrote files but no entry (the bundled suites' own)
DEFAULT_RUN_TESTS = ('#!/usr/bin/env bash\nset -u\n'
                     'exec python -m pytest -q -p no:cacheprovider tmp --junitxml="$TESTPRISM_JUNIT"\n')


@dataclass(frozen=True)
class KeptOutputs:
    suite_hash: str | None  #: None: no suite kept (the run failed, or wrote no test file)
    suite_files: int
    repair_hash: str | None
    log: str  #: relative to the store root


#: the channel's transcript in a generated folder
CONVERSATION = "conversation.jsonl.gz"


def generated_folder(store: Store, key: str) -> Path:
    return store.paths.generated / key


def conversation_file(store: Store, key: str) -> Path | None:
    """The run's recorded conversation, when it had a channel."""
    path = generated_folder(store, key) / CONVERSATION
    return path if path.is_file() else None


def _safe(name: str) -> tuple[str, ...] | None:
    parts = PurePosixPath(name).parts
    if not parts or PurePosixPath(name).is_absolute() or any(p in ("", ".", "..") for p in parts):
        return None
    return parts


def keep_outputs(store: Store, key: str, done: ExecResult, *, suite: bool,
                 transcript: Path | None = None) -> KeptOutputs:
    """Write the run's log and its channel's `transcript` (a file of the harness's), and
    (when `suite`) its suite and repair; what was kept."""
    final = generated_folder(store, key)
    staging = final.parent / f".staging-{uuid.uuid4().hex}"  # not the store's .tmp- parts, which it sweeps as files
    (staging / "suite").mkdir(parents=True)
    try:
        with gzip.open(staging / "log.gz", "wt", encoding="utf-8") as fh:
            fh.write(done.output_tail)
        if transcript is not None:
            shutil.copyfile(transcript, staging / CONVERSATION)
        files, repair_hash = 0, None
        outputs = done.outputs
        tests = False
        if suite and outputs is not None:
            for name, data in sorted(outputs.suite_files.items()):
                parts = _safe(name)
                if parts is None or parts[0] == ".task":
                    continue
                target = staging / "suite" / Path(*parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                files += 1
                tests = True
            if tests and not (staging / "suite" / "run_tests.sh").exists():
                (staging / "suite" / "run_tests.sh").write_text(DEFAULT_RUN_TESTS)
                files += 1
            if outputs.program_diff:
                (staging / "repair.diff").write_bytes(outputs.program_diff)
                repair_hash = digest("repair", outputs.program_diff)
        if not tests:
            shutil.rmtree(staging / "suite")
        swap_in(staging, final)  # over an earlier attempt of the same key: the newest wins
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    suite_hash = tree_digest(final / "suite") if tests else None
    log = (final / "log.gz").relative_to(store.paths.root).as_posix()
    return KeptOutputs(suite_hash, files if tests else 0, repair_hash if tests else None, log)
