"""Import Harbor task directories as benchmark instances (docs/curate.md, "Source adapters").

A Harbor task is a folder holding `task.toml`, `instruction.md`, `environment/Dockerfile`
(with its build context), `tests/test.sh` and `solution/solve.sh`. Each immediate
subfolder of TASKS is one task (hidden folders are passed over), and becomes
`instances/<folder name>/` by these rules:

- **id**: the folder's name, which must match `[A-Za-z0-9_.-]+`; **instruction**:
  instruction.md; **summary**: its first non-empty line.
- **program**: the Dockerfile's build context, i.e. the files of `environment/` but the
  ones that describe the image (`Dockerfile`, `.dockerignore`, `docker-compose.y(a)ml`).
  A task whose environment/ holds nothing else fetches its program when the image is built,
  over the network, which an offline import cannot do: skipped with an issue.
- **reference**: solve.sh is a script, so the reference is what it does to the program. It
  runs in the sandbox (untrusted code runs nowhere else), from the program root, with the
  files of solution/ under `tmp/.testprism-solution/`; a git snapshot taken before it and
  `git diff --binary` after it (tmp/.testprism-solution left out) come back through the
  one file a backend returns, `$TESTPRISM_JUNIT`. Paths in solve.sh resolve relative to the
  program root: `/app`, `/solution` or `/tests` of the Harbor image do not exist there. A
  task whose solution fails (non-zero exit, timeout, too much output) or changes nothing is
  skipped with an issue, which mentions the image's WORKDIR when solve.sh names it.
- **checks**: the files of `tests/`, added by the checks patch under `tests/` of the
  program, or under `tests/harbor/` when the program already has a `tests` entry (a task
  whose program has `tests/harbor` too is skipped). The test modules among them (pytest's
  `test_*.py` / `*_test.py`) are run whole; every test pytest would collect in them (from
  the syntax tree) is a fail-to-pass check; pass_to_pass is empty. A task without such a
  module is skipped: test.sh itself is not run by testprism's checks.
- **environment**: Python 3.11, `pytest>=8,<10` plus each requirement line of
  `environment/requirements.txt` (comments and blank lines dropped; a pip option line such
  as `-r` or `--index-url` skips the task). The solution runs in that environment too.

The written instance is loaded and its reference and checks applied to its program before
it is renamed into place (`folders.write_authored`); nothing is half-written.
"""

from __future__ import annotations

import logging
import re
import tempfile
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from testprism.tasks.importing.folders import (
    PYTEST_PACKAGES,
    Authored,
    copy_files,
    edit_diff,
    import_each,
    instance_folder,
    is_pytest_file,
    pytest_checks,
    regular_files,
    write_authored,
)
from testprism.tasks.importing.instance_writer import summary_line
from testprism.tasks.importing.rows import ImportReport, RowError
from testprism.tasks.importing.staging import staged
from testprism.tasks.model.benchmark import EnvironmentSpec
from testprism.tasks.model.patches import parse_field
from testprism.tasks.model.workdir import WorkPaths, default_work_root
from testprism.tasks.sandbox.base import Limits, RunRequest, SandboxBackend, backend_class

log = logging.getLogger(__name__)

#: what a task folder must hold
REQUIRED = ("task.toml", "instruction.md", "environment/Dockerfile", "tests/test.sh", "solution/solve.sh")
#: files of environment/ that describe the image rather than belong to the program
IMAGE_FILES = frozenset({"Dockerfile", ".dockerignore", "docker-compose.yaml", "docker-compose.yml"})
#: where solution/ is placed under the program root for the run (left out of the diff)
SOLUTION_DIR = ".testprism-solution"
#: the limits of one solve.sh run
SOLVE_LIMITS = Limits(timeout_s=600.0)

#: Runs in the sandbox from the program root: snapshot, solve.sh, the diff to $TESTPRISM_JUNIT.
#: The snapshot's repository lies outside the program, in the sandbox's private /tmp, so the
#: program's own .git (if any) is neither used nor changed, and the host's git configuration is
#: not read.
SOLVE_COMMAND = f"""\
set -u
root="$PWD"
snapshot="$(mktemp -d)"
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
keep() {{ git --git-dir="$snapshot" --work-tree="$root" -c user.name=testprism -c user.email=testprism@localhost "$@"; }}
record() {{ keep add --all --force -- . ':(exclude)tmp/{SOLUTION_DIR}'; }}
keep init -q && record && keep commit -q --no-verify --allow-empty -m program \\
  || {{ echo "testprism: the program could not be snapshotted with git" >&2; exit 97; }}
bash "tmp/{SOLUTION_DIR}/solve.sh" || exit $?
cd "$root" && record && keep diff --cached --binary --no-renames --no-color --no-ext-diff > "$TESTPRISM_JUNIT"
"""


@dataclass(frozen=True)
class Task:
    """A Harbor task folder, read and checked before anything runs."""

    folder: Path
    instruction: str
    program: dict[str, str]  #: program path → path under environment/
    solution: list[str]  #: files of solution/
    checks_files: dict[str, str]  #: program path → path under tests/
    packages: tuple[str, ...]
    workdir: str  #: the Dockerfile's last WORKDIR, "" without one


def _workdir(dockerfile: str) -> str:
    found = re.findall(r"^\s*WORKDIR\s+(\S+)", dockerfile, re.IGNORECASE | re.MULTILINE)
    return found[-1] if found else ""


def _requirements(environment: Path) -> tuple[str, ...]:
    path = environment / "requirements.txt"
    if not path.is_file():
        return PYTEST_PACKAGES
    lines = [line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines()]
    options = [line for line in lines if line.startswith("-")]
    if options:
        raise RowError("environment/requirements.txt", f"pip options are not supported: {options[0]!r}")
    return (*PYTEST_PACKAGES, *(line for line in lines if line))


def read_task(folder: Path) -> Task:
    """The task's parts, or a RowError naming the file at fault."""
    for rel in REQUIRED:
        if not (folder / rel).is_file() or (folder / rel).is_symlink():
            raise RowError(rel, "missing: a Harbor task holds " + ", ".join(REQUIRED))
    try:
        tomllib.loads((folder / "task.toml").read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise RowError("task.toml", f"not TOML: {exc}") from exc
    environment = folder / "environment"
    program = {rel: rel for rel in regular_files(environment, "environment/") if rel not in IMAGE_FILES}
    if not program:
        raise RowError("environment/", "holds nothing but the Dockerfile: the program is fetched when the image is "
                                       "built (over the network), which an offline import cannot do")
    tests = regular_files(folder / "tests", "tests/")
    if not any(is_pytest_file(rel) for rel in tests):
        raise RowError("tests/", "tests are not pytest files: test.sh is not run by testprism's checks")
    into = "tests/harbor" if any(rel == "tests" or rel.startswith("tests/") for rel in program) else "tests"
    if any(rel == "tests/harbor" or rel.startswith("tests/harbor/") for rel in program):
        raise RowError("tests/", "the program already has tests/harbor/: no place to add the task's tests")
    return Task(
        folder=folder,
        instruction=(folder / "instruction.md").read_text(encoding="utf-8"),
        program=program,
        solution=regular_files(folder / "solution", "solution/"),
        checks_files={f"{into}/{rel}": rel for rel in tests},
        packages=_requirements(environment),
        workdir=_workdir((environment / "Dockerfile").read_text(encoding="utf-8", errors="replace")),
    )


@dataclass
class Solver:
    """Runs solve.sh in the sandbox and brings back the diff it makes."""

    backend: SandboxBackend
    limits: Limits = SOLVE_LIMITS

    def reference(self, task: Task, program: Path) -> str:
        environment = self.backend.prepare(EnvironmentSpec(python="3.11", packages=task.packages))
        with tempfile.TemporaryDirectory(prefix="testprism-harbor-") as scratch:
            helper = Path(scratch)
            copy_files(task.folder / "solution", {f"{SOLUTION_DIR}/{rel}": rel for rel in task.solution}, helper)
            result = self.backend.run(RunRequest(
                tree=program, suite_folder=helper, suite_files=tuple(f"{SOLUTION_DIR}/{rel}" for rel in task.solution),
                command=SOLVE_COMMAND, environment=environment, limits=self.limits,
            ))
        if result.timed_out:
            problem = f"timed out after {self.limits.timeout_s:g} s"
        elif result.output_exceeded:
            problem = f"wrote more than {self.limits.output_bytes} bytes of output"
        elif result.exit_code != 0:
            problem = f"exited with status {result.exit_code}: {result.output_tail.strip()[-600:]}"
        elif not result.junit_xml:
            problem = "changes nothing in the program"
        else:
            text = result.junit_xml.decode("utf-8", errors="surrogateescape")
            parse_field(text, "solution/solve.sh")
            return text
        raise RowError("solution/solve.sh", problem + self._hint(task))

    @staticmethod
    def _hint(task: Task) -> str:
        script = (task.folder / "solution" / "solve.sh").read_text(encoding="utf-8", errors="replace")
        if task.workdir.startswith("/") and task.workdir != "/" and task.workdir in script:
            return (f" (solve.sh names {task.workdir}, the image's WORKDIR: here it runs from the program root, "
                    "where paths resolve relative to it)")
        return ""


def import_task(folder: Path, out: Path, solver: Solver, source: str, *, overwrite: bool) -> str:
    """Import one task folder; returns `imported` or `exists`. Raises RowError naming the file."""
    instance_id = folder.name
    final = instance_folder(out, instance_id, "(folder name)")
    if final.exists() and not overwrite:
        return "exists"
    task = read_task(folder)
    checks_modules = {to: (folder / "tests" / rel).read_text(encoding="utf-8", errors="replace")
                      for to, rel in task.checks_files.items() if is_pytest_file(rel)}
    checks = pytest_checks(checks_modules, "tests/")
    with staged(out, final, overwrite=overwrite) as staging:
        program = staging / "program"
        copy_files(folder / "environment", task.program, program)
        reference = solver.reference(task, program)
        checks_diff = edit_diff(program, {to: (folder / "tests" / rel).read_bytes()
                                          for to, rel in task.checks_files.items()})
        write_authored(staging, Authored(
            instance_id=instance_id, source=source, summary=summary_line(task.instruction),
            instruction=task.instruction, reference=reference, checks_diff=checks_diff, checks=checks,
            packages=task.packages, origin={"adapter": "harbor", "task": str(folder.resolve())},
            made_by="testprism import harbor",
        ))
    log.info("imported %s from %s", instance_id, folder)
    return "imported"


def _task_folders(tasks_root: Path) -> Iterator[Path]:
    return (p for p in sorted(tasks_root.iterdir()) if p.is_dir() and not p.name.startswith("."))


def import_harbor(tasks_root: Path, out: Path, *, source: str, overwrite: bool = False,
                  backend: SandboxBackend | None = None, limits: Limits = SOLVE_LIMITS) -> ImportReport:
    """Import every task folder of `tasks_root` into the benchmark at `out`. A task that does
    not fit becomes an issue and the others go on. solve.sh runs on `backend` (default: the
    local bubblewrap backend over the default work area, closed at the end)."""
    own = backend is None
    solver = Solver(backend or backend_class("local")(WorkPaths(default_work_root())), limits)
    try:
        report = import_each(
            (folder.name, folder.name, partial(import_task, folder, out, solver, source, overwrite=overwrite))
            for folder in _task_folders(tasks_root))
    finally:
        if own:
            solver.backend.close()
    return report
