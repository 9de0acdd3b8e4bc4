"""Import exercise folders (an Exercism-style Python track) as benchmark instances
(docs/curate.md, "Source adapters").

A track is a folder with `exercises/practice/<slug>/` (and optionally a `config.json`
whose `language` names the track's language). An exercise holds `.docs/instructions.md`,
the stub `<module>.py` (module: the slug with `-` → `_`), the test module
`<module>_test.py` and the example solution `.meta/example.py`; `.meta/config.json`, when
present, names them instead (`files.solution`, `files.test`, `files.example`, paths
relative to the exercise folder, the n-th example being the n-th solution file's answer).
Each exercise becomes `instances/<source>__<slug>/`:

- **instruction**: `.docs/instructions.md`, then `.docs/instructions.append.md` when
  present (the Python track states exception messages there, which the tests check);
  **summary**: the config's `blurb`, else the instructions' first non-empty line.
- **program**: the stub file(s); **reference**: the diff that turns each stub into its
  example; **checks**: the test module(s), added by the checks patch at their paths, run
  whole by pytest; every test of them (unittest classes included: `file::Class::method`) is
  a fail-to-pass check; pass_to_pass is empty; **environment**: Python 3.11, pytest.

Skipped with an issue: an exercise missing its instructions, a stub, a test module or an
example; one whose examples equal its stubs (the reference would change nothing); a track
whose config.json names another language, or a solution file that is not a `.py` (this
adapter reads the Python track's layout only; the instance format itself takes ten
languages), the issue naming the language.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from functools import partial
from pathlib import Path, PurePosixPath

from testprism.tasks.importing.folders import (
    PYTEST_PACKAGES,
    Authored,
    copy_files,
    edit_diff,
    import_each,
    instance_folder,
    pytest_checks,
    python_environment,
    write_authored,
)
from testprism.tasks.importing.instance_writer import summary_line
from testprism.tasks.importing.rows import ImportReport, Issue, RowError
from testprism.tasks.importing.staging import staged

log = logging.getLogger(__name__)

PRACTICE = "exercises/practice"
INSTRUCTIONS = ".docs/instructions.md"
APPENDED = ".docs/instructions.append.md"
META = ".meta/config.json"


@dataclass(frozen=True)
class Exercise:
    """The files an exercise names, read from its config (or the track's defaults)."""

    folder: Path
    solution: tuple[str, ...]
    test: tuple[str, ...]
    example: tuple[str, ...]
    blurb: str


def track_language(track_root: Path) -> str:
    """The `language` of the track's config.json, "" when it does not say."""
    config = track_root / "config.json"
    if not config.is_file():
        return ""
    try:
        language = json.loads(config.read_text(encoding="utf-8")).get("language", "")
    except (json.JSONDecodeError, AttributeError):
        return ""
    return language if isinstance(language, str) else ""


def read_exercise(folder: Path) -> Exercise:
    """The exercise's files as its `.meta/config.json` names them, the defaults otherwise."""
    module = folder.name.replace("-", "_")
    config: dict = {}
    if (folder / META).is_file():
        try:
            config = json.loads((folder / META).read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise RowError(META, f"not JSON: {exc}") from exc
        if not isinstance(config, dict):
            raise RowError(META, "not a JSON object")
    files = config.get("files") or {}
    defaults = {"solution": [f"{module}.py"], "test": [f"{module}_test.py"], "example": [".meta/example.py"]}
    named: dict[str, tuple[str, ...]] = {}
    for kind, default in defaults.items():
        value = files.get(kind) or default
        if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise RowError(f"files.{kind}", "not a list of paths")
        bad = [v for v in value if PurePosixPath(v).is_absolute() or ".." in PurePosixPath(v).parts]
        if bad:
            raise RowError(f"files.{kind}", f"{bad[0]!r} is not a path inside the exercise")
        named[kind] = tuple(value)
    blurb = config.get("blurb", "")
    return Exercise(folder, named["solution"], named["test"], named["example"], blurb if isinstance(blurb, str) else "")


def _check_language(exercise: Exercise, language: str) -> None:
    if language and language.lower() != "python":
        raise RowError("language", f"the track's language is {language}: this adapter reads Python tracks only")
    other = [rel for rel in exercise.solution if PurePosixPath(rel).suffix != ".py"]
    if other:
        named = language or PurePosixPath(other[0]).suffix or "no extension"
        raise RowError("files.solution", f"{other[0]} is not a Python file ({named}): this adapter reads "
                                         "Python tracks only")


def _present(folder: Path, rel: str, field: str) -> bytes:
    path = folder / rel
    if path.is_symlink() or not path.is_file():
        raise RowError(field, f"{rel} is missing")
    return path.read_bytes()


def import_exercise(folder: Path, out: Path, source: str, language: str, *, overwrite: bool) -> str:
    """Import one exercise folder; returns `imported` or `exists`. Raises RowError naming the file."""
    instance_id = f"{source}__{folder.name}"
    final = instance_folder(out, instance_id, "(slug)")
    if final.exists() and not overwrite:
        return "exists"
    exercise = read_exercise(folder)
    _check_language(exercise, language)
    if len(exercise.example) != len(exercise.solution):
        raise RowError("files.example", f"names {len(exercise.example)} files for {len(exercise.solution)} "
                                        "solution files: each solution file needs its example")
    instruction = _present(folder, INSTRUCTIONS, INSTRUCTIONS).decode("utf-8", errors="replace")
    if (folder / APPENDED).is_file():
        instruction += "\n" + (folder / APPENDED).read_text(encoding="utf-8", errors="replace")
    stubs = {rel: _present(folder, rel, "files.solution") for rel in exercise.solution}
    tests = {rel: _present(folder, rel, "files.test") for rel in exercise.test}
    answers = {rel: _present(folder, example, example) for rel, example in zip(exercise.solution, exercise.example)}
    if answers == stubs:
        raise RowError(exercise.example[0], "equals the stub: the reference would change nothing")
    checks = pytest_checks({rel: data.decode("utf-8", errors="replace") for rel, data in tests.items()}, "files.test")
    with staged(out, final, overwrite=overwrite) as staging:
        program = staging / "program"
        copy_files(folder, {rel: rel for rel in exercise.solution}, program)
        write_authored(staging, Authored(
            instance_id=instance_id, source=source, summary=exercise.blurb.strip() or summary_line(instruction),
            instruction=instruction, reference=edit_diff(program, answers), checks_diff=edit_diff(program, tests),
            checks=checks.table(), environment=python_environment(PYTEST_PACKAGES),
            origin={"adapter": "exercises", "exercise": str(folder.resolve())},
            made_by="testprism import exercises",
        ))
    log.info("imported %s from %s", instance_id, folder)
    return "imported"


def import_exercises(track_root: Path, out: Path, *, source: str, overwrite: bool = False) -> ImportReport:
    """Import every exercise of the track at `track_root` into the benchmark at `out`. An
    exercise that does not fit becomes an issue and the others go on."""
    practice = track_root / PRACTICE
    if not practice.is_dir():
        return ImportReport(issues=[Issue(str(track_root), "", PRACTICE, "missing: a track holds "
                                                                           f"{PRACTICE}/<slug>/")])
    language = track_language(track_root)
    return import_each(
        (f"{PRACTICE}/{folder.name}", f"{source}__{folder.name}",
         partial(import_exercise, folder, out, source, language, overwrite=overwrite))
        for folder in sorted(practice.iterdir()) if folder.is_dir() and not folder.name.startswith("."))
