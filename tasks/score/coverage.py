"""Coverage of the reference's change by each suite (DESIGN.md, Metrics): ΔC and EC.

- **ΔC_i** (change coverage): the lines the reference adds or changes that the suite
  executes, over those lines.
- **EC_i** (entry coverage): the functions the reference changes that the suite enters,
  over those functions.

Both are measured on the reference state, by a coverage pass separate from the replay: each
suite runs once more on the reference, with coverage.py started in *every* Python process of
the run (the suite's runner, its subprocesses, pytest-xdist workers). How, without touching
the sandbox backends:

- the environment is the instance's plus `coverage` (`coverage_environment`: another
  environment key, built once like any other);
- the suite's files travel with a small helper folder, `tmp/.testprism-coverage/`
  (`coverage_suite`): `site/sitecustomize.py`, put on `PYTHONPATH`, calls
  `coverage.process_startup()`, which starts measuring in any interpreter that sees
  `COVERAGE_PROCESS_START` (the folder's `coveragerc`); only the files the reference changes
  are traced;
- `run.sh` runs the suite's own entry that way, then `collect.py` combines the data files
  and writes a small JSON report (statements and missed lines per file) to
  `$TESTPRISM_JUNIT`: the one file every backend already brings back from the sandbox. The
  suite's own JUnit report is redirected next to the data; this pass needs no verdict.

Which lines and functions count comes from the reference diff (unidiff) and the reference
file's syntax tree (ast), so it does not depend on what the run managed to report:

- a changed line is a line the reference adds; where it only deletes, the line now standing
  at that place (the next context line, else the previous one) stands for the deletion;
  blank and comment-only lines never count;
- a changed line counts for ΔC if it belongs to an executable statement: a simple
  statement's lines, or a compound statement's header (decorators included); docstrings
  and `else:`-like lines do not. When coverage reported the file, its own statement set has
  the last word (`# pragma: no cover`, lines the compiler drops); a file it never saw was
  never imported, so none of its lines ran;
- a changed function is the innermost `def` holding a changed line; it is entered if any
  line of its body ran.

Runs that could not measure (timeout, sandbox error, a failed patch or environment) leave
ΔC and EC null with a `reason`; a configuration without a suite for the instance executed
nothing: 0. Rows are keyed by content (suite, reference state, environment, limits, this
module's helper files), so `measure_coverage` skips what `scores/coverage` already holds.
"""

from __future__ import annotations

import ast
import json
import logging
import math
import re
import shutil
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import polars as pl
import pyarrow as pa
from scipy.stats import ConstantInputWarning, pearsonr, spearmanr

from testprism.storage import SCHEMAS, Store
from testprism.tasks.model.benchmark import Benchmark, EnvironmentSpec, Instance, Suite, load_benchmark
from testprism.tasks.model import patches
from testprism.tasks.model.hashing import digest
from testprism.tasks.sandbox.base import (
    ExecResult,
    Limits,
    RunRequest,
    SandboxBackend,
    SandboxError,
    SuiteNotInstalled,
    backend_class,
)
from testprism.tasks.execution.batch import Environments, ExecutionOptions, Job, execute
from testprism.tasks.execution.verdict import MESSAGE_TAIL, Attempts
from testprism.tasks.model.outcome import Reason, Verdict
from testprism.tasks.model.state import State, materialise, states_of
from testprism.tasks.model.workdir import WorkPaths, build_once, default_work_root

log = logging.getLogger(__name__)

#: pip requirement added to an environment for the coverage pass: the JSON-free data API
#: used by collect.py exists since 5.0, and pip picks the newest release the
#: environment's Python supports.
COVERAGE_REQUIREMENT = "coverage>=5"

HELPER_DIR = ".testprism-coverage"
"""The helper folder under the suite's `tmp/` (a dot folder: pytest does not collect it)."""

_SITECUSTOMIZE = '''\
"""testprism coverage pass: start coverage.py in this interpreter (COVERAGE_PROCESS_START)."""
try:
    import coverage
except ImportError:
    pass
else:
    coverage.process_startup()
'''

_RUNNER = '''\
#!/usr/bin/env bash
# testprism coverage pass (tasks/score/coverage.py): the suite's own entry with coverage.py in
# every Python process, then the combined data as JSON at $TESTPRISM_JUNIT.
set -u
root="$PWD"
here="$root/tmp/{helper}"
report="$TESTPRISM_JUNIT"
data="$(dirname "$report")/coverage"
mkdir -p "$data"
export TESTPRISM_COVERAGE_ROOT="$root" TESTPRISM_COVERAGE_DATA="$data"
(
  export COVERAGE_PROCESS_START="$here/coveragerc"
  export PYTHONPATH="$here/site${{PYTHONPATH:+:$PYTHONPATH}}"
  export TESTPRISM_JUNIT="$data/junit.xml"
  exec bash "$here/entry.sh"
)
status=$?
cd "$root" && python "$here/collect.py" "$report" "$data" "$here/coveragerc" "$root"
exit "$status"
'''

# Runs under the environment's interpreter, whatever its version: plain Python 3 syntax.
_COLLECTOR = '''\
"""testprism coverage pass: combine this run's data, write statements and missed lines."""
import glob
import json
import os
import sys


def main():
    report, data, rc, root = sys.argv[1:5]
    root = os.path.realpath(root)
    out = {"data_files": len(glob.glob(os.path.join(data, ".coverage.*"))), "files": {}, "error": None}
    try:
        if out["data_files"]:
            import coverage

            cov = coverage.Coverage(config_file=rc)
            cov.combine()
            for name in sorted(cov.get_data().measured_files()):
                rel = os.path.relpath(name, root) if name.startswith(root + os.sep) else name
                try:
                    _, statements, _, missing, _ = cov.analysis2(name)
                except Exception as exc:  # the suite may have removed the file
                    out["files"][rel] = {"error": "{}: {}".format(type(exc).__name__, exc)}
                    continue
                out["files"][rel] = {"statements": sorted(statements), "missing": sorted(missing)}
    except Exception as exc:
        out["error"] = "{}: {}".format(type(exc).__name__, exc)
    with open(report, "w") as fh:
        json.dump(out, fh)


main()
'''


# -- what the reference changes ---------------------------------------------------------------


@dataclass(frozen=True)
class ChangedFunction:
    """A function the reference changes: entered if any line of `body` ran."""

    name: str  # dotted: Class.method, outer.inner
    line: int  # its `def` line, which tells same-named functions apart
    body: range


@dataclass(frozen=True)
class ChangedFile:
    """What the reference changes in one Python file, in the reference's line numbers.

    `lines` maps each changed executable line to the lines of its statement: coverage
    reports a statement on one of them (its first line, or a decorator's)."""

    path: str
    lines: dict[int, range]
    functions: tuple[ChangedFunction, ...]


def changed_lines(reference: bytes) -> dict[str, set[int]]:
    """Per Python file the reference leaves behind, the target-side lines it adds, plus one
    stand-in line per pure deletion (the next context line, else the previous one)."""
    changed: dict[str, set[int]] = {}
    for patched in patches.parse(reference):
        if patched.is_removed_file or not patched.path.endswith(".py"):
            continue
        changed.setdefault(patched.path, set()).update(patches.changed_lines(patched, removals="following"))
    return {path: lines for path, lines in changed.items() if lines}


def _is_docstring(node: ast.stmt, parent: ast.AST) -> bool:
    body = getattr(parent, "body", None)
    return (
        isinstance(parent, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and bool(body)
        and body[0] is node
        and isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _spans(tree: ast.Module) -> Iterator[range]:
    """The lines of each executable statement: a simple statement whole, a compound
    statement's header from its first decorator to the line before its body."""
    stack: list[tuple[ast.AST, ast.AST]] = [(child, tree) for child in tree.body]
    while stack:
        node, parent = stack.pop()
        if isinstance(node, ast.match_case):
            start, body = node.pattern.lineno, node.body
        elif isinstance(node, ast.Match):
            start, body = node.lineno, [case.pattern for case in node.cases]
        else:
            start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            body = getattr(node, "body", None)
        if body:
            yield range(start, max(start + 1, body[0].lineno))
        elif not _is_docstring(node, parent):
            yield range(start, node.end_lineno + 1)
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            children = getattr(node, name, None)
            if isinstance(children, list):
                stack.extend((child, node) for child in children if isinstance(child, ast.AST))


def _functions(tree: ast.Module) -> Iterator[tuple[str, range, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every def with its dotted name and its whole extent (decorators to last line)."""
    stack: list[tuple[ast.AST, str]] = [(tree, "")]
    while stack:
        node, prefix = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    start = min([child.lineno] + [d.lineno for d in child.decorator_list])
                    yield name, range(start, child.end_lineno + 1), child
                stack.append((child, f"{name}."))
            else:
                stack.append((child, prefix))


def _is_code(text: str) -> bool:
    stripped = text.strip()
    return bool(stripped) and not stripped.startswith("#")


def analyse_file(path: str, source: bytes, lines: Iterable[int]) -> ChangedFile:
    """Map the changed lines of one reference file to statements and functions.

    A file the host's parser cannot read (syntax newer than this Python, or Python 2)
    falls back to one statement per changed code line and no functions."""
    text = source.decode("utf-8", errors="replace").splitlines()
    code = sorted(n for n in set(lines) if 0 < n <= len(text) and _is_code(text[n - 1]))
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError) as exc:
        log.warning("%s: not parseable here (%s); counting changed lines one by one", path, exc)
        return ChangedFile(path, {n: range(n, n + 1) for n in code}, ())
    spans = sorted(_spans(tree), key=len)
    mapped = {}
    for n in code:
        span = next((s for s in spans if n in s), None)  # the smallest statement holding it
        if span is not None:
            mapped[n] = span
    functions: dict[tuple[str, int], ChangedFunction] = {}
    defs = sorted(_functions(tree), key=lambda item: len(item[1]))
    for n in code:
        found = next(((name, node) for name, extent, node in defs if n in extent), None)
        if found is not None:
            name, node = found
            body = range(node.body[0].lineno, node.end_lineno + 1)
            functions[(name, node.lineno)] = ChangedFunction(name, node.lineno, body)
    return ChangedFile(path, mapped, tuple(sorted(functions.values(), key=lambda f: f.line)))


def analyse_reference(tree: Path, reference: bytes) -> tuple[ChangedFile, ...]:
    """What the reference changes, read from the materialised reference tree."""
    changes = []
    for path, lines in sorted(changed_lines(reference).items()):
        target = tree / path
        if not target.is_file():
            log.warning("%s: changed by the reference but absent from its tree", path)
            continue
        changes.append(analyse_file(path, target.read_bytes(), lines))
    return tuple(c for c in changes if c.lines or c.functions)


# -- what a run executed ------------------------------------------------------------------------


@dataclass(frozen=True)
class MeasuredFile:
    """coverage.py's view of one file in one run."""

    statements: frozenset[int]
    executed: frozenset[int]


def parse_report(data: bytes) -> dict[str, MeasuredFile]:
    """The collector's JSON report → measured files. Raises ValueError when the report is
    unreadable or says the data could not be combined."""
    report = json.loads(data)
    if not isinstance(report, dict) or not isinstance(report.get("files"), dict):
        raise ValueError("not a testprism coverage report")
    if report.get("error"):
        raise ValueError(f"coverage data could not be combined: {report['error']}")
    measured = {}
    for path, entry in report["files"].items():
        if "error" in entry:
            log.warning("coverage of %s unreadable: %s", path, entry["error"])
            continue
        statements = frozenset(int(n) for n in entry["statements"])
        measured[path] = MeasuredFile(statements, statements - frozenset(int(n) for n in entry["missing"]))
    return measured


def _measured(measured: dict[str, MeasuredFile], path: str) -> MeasuredFile | None:
    if path in measured:
        return measured[path]
    return next((m for name, m in measured.items() if name.endswith("/" + path)), None)


@dataclass
class CoverageCounts:
    """Numerators and denominators of ΔC and EC, and what was missed (for the audit)."""

    changed_lines: int = 0
    covered_lines: int = 0
    changed_functions: int = 0
    entered_functions: int = 0
    missed_lines: list[str] = field(default_factory=list)  # path:line
    missed_functions: list[str] = field(default_factory=list)  # path:name

    @property
    def delta_c(self) -> float | None:
        return self.covered_lines / self.changed_lines if self.changed_lines else None

    @property
    def ec(self) -> float | None:
        return self.entered_functions / self.changed_functions if self.changed_functions else None


def score_changes(changes: Iterable[ChangedFile], measured: dict[str, MeasuredFile]) -> CoverageCounts:
    """ΔC and EC of one run: `measured` is what it executed (empty: nothing ran)."""
    counts = CoverageCounts()
    for change in changes:
        seen = _measured(measured, change.path)
        for line, span in sorted(change.lines.items()):
            if seen is not None and not any(n in seen.statements for n in span):
                continue  # coverage says it is not executable (excluded, optimised away)
            counts.changed_lines += 1
            if seen is not None and any(n in seen.executed for n in span):
                counts.covered_lines += 1
            else:
                counts.missed_lines.append(f"{change.path}:{line}")
        for function in change.functions:
            counts.changed_functions += 1
            if seen is not None and any(n in seen.executed for n in function.body):
                counts.entered_functions += 1
            else:
                counts.missed_functions.append(f"{change.path}:{function.name}")
    return counts


# -- the coverage pass ----------------------------------------------------------------------------


def coverage_environment(environment: EnvironmentSpec) -> EnvironmentSpec:
    """The instance's environment plus coverage.py (kept as is when it already has it)."""
    if any(re.match(r"\s*coverage\s*($|[\[<>=!~;])", p, re.IGNORECASE) for p in environment.packages):
        return environment
    return environment.model_copy(update={"packages": (*environment.packages, COVERAGE_REQUIREMENT)})


def _coveragerc(changes: Iterable[ChangedFile]) -> str:
    include = "".join(f"\n    ${{TESTPRISM_COVERAGE_ROOT}}/{c.path}" for c in changes)
    return (
        "# testprism coverage pass: trace only the files the reference changes.\n"
        "[run]\nparallel = True\ndata_file = ${TESTPRISM_COVERAGE_DATA}/.coverage\n"
        f"include ={include}\n"
        "disable_warnings = no-data-collected, module-not-measured, module-not-imported, module-not-python\n"
    )


def _helper_files(entry: str, changes: tuple[ChangedFile, ...]) -> dict[str, str]:
    return {
        f"{HELPER_DIR}/run.sh": _RUNNER.format(helper=HELPER_DIR),
        f"{HELPER_DIR}/entry.sh": entry + "\n",
        f"{HELPER_DIR}/collect.py": _COLLECTOR,
        f"{HELPER_DIR}/coveragerc": _coveragerc(changes),
        f"{HELPER_DIR}/site/sitecustomize.py": _SITECUSTOMIZE,
    }


COMMAND = f"bash tmp/{HELPER_DIR}/run.sh"
"""The entry of every coverage run: the helper runs the suite's own entry."""


def coverage_suite(suite: Suite, changes: tuple[ChangedFile, ...], work: WorkPaths) -> tuple[Path, tuple[str, ...]]:
    """The suite's files plus the helper folder, built once in the work area; returns the
    folder and the relative files a RunRequest copies under `tmp/`."""
    helpers = _helper_files(suite.entry, changes)
    key = digest("coverage-suite", suite.hash, *(part for item in sorted(helpers.items()) for part in item))

    def build(target: Path) -> None:
        for rel in suite.files:
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(suite.folder / rel, target / rel)
        for rel, text in helpers.items():
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            (target / rel).write_text(text)

    folder = build_once(work.root / "coverage" / key, build)
    return folder, tuple(rel for rel in suite.files if not rel.startswith(f"{HELPER_DIR}/")) + tuple(helpers)


@dataclass(frozen=True)
class CoverageSpec:
    """One planned measurement: a configuration's suite (or why there is none) on an
    instance's reference."""

    coverage_key: str
    configuration: str
    instance: Instance
    reference: State
    suite: Suite | None
    unrunnable: Reason | None  # missing_suite | invalid_suite


_HELPERS_HASH = digest("coverage-helpers", _SITECUSTOMIZE, _RUNNER, _COLLECTOR, COVERAGE_REQUIREMENT)


def plan_coverage(benchmark: Benchmark, limits: Limits) -> list[CoverageSpec]:
    """One measurement per configuration × instance, keyed by content: the same suite on
    the same reference in the same environment is measured once, whatever the
    configuration's name."""
    specs = []
    for instance in benchmark.instances.values():
        reference = next(s for s in states_of(instance) if s.kind == "reference")
        environment = coverage_environment(instance.spec.environment).key
        for configuration in benchmark.configurations:
            suite = benchmark.suites.get((configuration, instance.id))
            unrunnable = None
            if suite is None:
                rejected = (configuration, instance.id) in benchmark.suite_errors
                unrunnable = Reason.INVALID_SUITE if rejected else Reason.MISSING_SUITE
            suite_part = suite.hash if suite else digest(unrunnable or "", configuration)
            key = digest("coverage", instance.id, suite_part, reference.hash, environment, limits.key, _HELPERS_HASH)
            specs.append(CoverageSpec(key, configuration, instance, reference, suite, unrunnable))
    return specs


@dataclass(frozen=True)
class Measured:
    """What one measurement left: the counts, or why there are none, and the run if any."""

    counts: CoverageCounts | None
    reason: Reason | None = None
    result: ExecResult | None = None


def _row(spec: CoverageSpec, measured: Measured) -> dict:
    """One `coverage` row (storage/schema.py COVERAGE)."""
    counts, result = measured.counts, measured.result
    return {
        "configuration": spec.configuration,
        "instance_id": spec.instance.id,
        "source": spec.instance.source,
        "delta_c": counts.delta_c if counts else None,
        "ec": counts.ec if counts else None,
        "changed_lines": counts.changed_lines if counts else None,
        "covered_lines": counts.covered_lines if counts else None,
        "changed_functions": counts.changed_functions if counts else None,
        "entered_functions": counts.entered_functions if counts else None,
        "missed_lines": counts.missed_lines if counts else [],
        "missed_functions": counts.missed_functions if counts else [],
        "reason": measured.reason.value if measured.reason else None,
        "exit_code": result.exit_code if result else None,
        "duration_s": round(result.duration_s, 4) if result else None,
        "coverage_key": spec.coverage_key,
    }


def measure_one(spec: CoverageSpec, changes: tuple[ChangedFile, ...], environments: Environments,
                options: ExecutionOptions) -> Measured:
    """Measure one suite on its instance's reference."""
    if spec.unrunnable is not None:
        return Measured(score_changes(changes, {}), spec.unrunnable)
    assert spec.suite is not None
    tree = materialise(spec.instance, spec.reference, options.work)
    environment = environments.ready(coverage_environment(spec.instance.spec.environment))
    if isinstance(environment, Verdict):
        log.error("%s: coverage environment: %s", spec.instance.id, environment.output_tail)
        return Measured(None, Reason.ENVIRONMENT_FAILED)
    folder, files = coverage_suite(spec.suite, changes, options.work)
    request = RunRequest(
        tree=tree.tree, suite_folder=folder, suite_files=files, command=COMMAND, environment=environment,
        limits=options.limits, suite_patch=spec.suite.patch,
    )
    try:
        result = Attempts(lambda: environments.backend.run(request), options.policy.infra_retries)()
    except SuiteNotInstalled as exc:
        log.error("%s/%s: coverage run: %s", spec.configuration, spec.instance.id, exc)
        return Measured(None, Reason.SUITE_NOT_INSTALLED)
    except SandboxError as exc:
        log.error("%s/%s: coverage run: %s", spec.configuration, spec.instance.id, exc)
        return Measured(None, Reason.SANDBOX_ERROR)
    if result.timed_out or result.output_exceeded:
        return Measured(None, Reason.TIMEOUT if result.timed_out else Reason.OUTPUT_LIMIT, result)
    try:
        measured = parse_report(result.junit_xml or b"")
    except ValueError as exc:
        log.error("%s/%s: no coverage report (%s); output tail:\n%s", spec.configuration, spec.instance.id, exc,
                  result.output_tail[-MESSAGE_TAIL:])
        return Measured(None, Reason.COVERAGE_FAILED, result)
    return Measured(score_changes(changes, measured), None, result)


def _reference_changes(spec: CoverageSpec, work: WorkPaths) -> tuple[ChangedFile, ...] | None:
    """What the instance's reference changes, or None when its patch does not apply."""
    tree = materialise(spec.instance, spec.reference, work)
    if not tree.patch.applied:
        return None
    return analyse_reference(tree.tree, spec.instance.reference)


def _table(rows: Iterable[dict]) -> pl.DataFrame:
    arrow = pa.Table.from_pylist(list(rows), schema=SCHEMAS["coverage"])
    return pl.from_arrow(arrow).sort("configuration", "instance_id")


class CoverageJob(Job[CoverageSpec, Measured]):
    """The coverage pass as a job of the one executor (tasks/execution/batch.py).

    `scores/coverage` is a score table, rewritten whole (not appended): each write holds
    every measurement so far, the stored ones included, so a killed pass resumes."""

    dataset = "coverage"

    def __init__(self, specs: Sequence[CoverageSpec], done: dict[str, dict],
                 changes: dict[str, tuple[ChangedFile, ...] | None]) -> None:
        self._specs = specs
        self.done = done
        self._changes = changes

    def content_key(self, unit: CoverageSpec) -> str:
        return unit.coverage_key

    def attempt(self, unit: CoverageSpec, environments: Environments, options: ExecutionOptions) -> Measured:
        found = self._changes[unit.instance.id]
        if found is None:
            return Measured(None, Reason.PATCH_FAILED)
        if not found:
            return Measured(None, Reason.NO_PYTHON_CHANGE)
        return measure_one(unit, found, environments, options)

    def row(self, unit: CoverageSpec, result: Measured, started: datetime, backend: SandboxBackend) -> dict:
        return _row(unit, result)

    def table(self) -> pl.DataFrame:
        """Every planned measurement done so far, each under its own configuration."""
        return _table(
            {**self.done[spec.coverage_key], "configuration": spec.configuration}
            for spec in self._specs if spec.coverage_key in self.done
        )

    def write(self, store: Store, rows: list[dict]) -> None:
        self.done.update((row["coverage_key"], row) for row in rows)
        store.write_table("coverage", self.table().to_arrow())


def measure_coverage(
    benchmark_root: Path | str,
    store_root: Path | str,
    work_root: Path | str | None = None,
    backend: str = "local",
    *,
    configurations: tuple[str, ...] = (),
    limits: Limits = Limits(),
    concurrency: int | None = None,
    trusted: bool = False,
    unsafe: bool = False,
    checkpoint_every: int = 32,
) -> pl.DataFrame:
    """ΔC and EC of every suite of the benchmark; writes and returns `scores/coverage`.

    Rows already in the store's `scores/coverage` with a current key are kept and not
    measured again; rows of suites or references that changed since are dropped. The
    table is rewritten every `checkpoint_every` measurements, so a killed pass resumes.
    `trusted`/`unsafe` mean what they mean for the replay (the backend's isolation).
    """
    benchmark = load_benchmark(Path(benchmark_root), configurations)
    store = Store(store_root)
    options = ExecutionOptions(
        backend=backend, work_root=Path(work_root) if work_root else default_work_root(), store_root=store.paths.root,
        limits=limits, concurrency=concurrency or backend_class(backend).default_concurrency(), trusted=trusted,
        unsafe=unsafe, flush_every=checkpoint_every,
    )
    specs = plan_coverage(benchmark, limits)
    done: dict[str, dict] = {}
    if store.paths.score_table("coverage").is_file():
        wanted = {s.coverage_key for s in specs}
        done = {row["coverage_key"]: row for row in store.read_table("coverage").iter_rows(named=True)
                if row["coverage_key"] in wanted}
    todo = [spec for spec in specs if spec.coverage_key not in done]
    log.info("coverage: %d measurements planned, %d stored, %d to run", len(specs), len(done),
             len({s.coverage_key for s in todo}))
    changes: dict[str, tuple[ChangedFile, ...] | None] = {}
    for spec in todo:
        if spec.instance.id not in changes:
            changes[spec.instance.id] = _reference_changes(spec, options.work)
    job = CoverageJob(specs, done, changes)
    execute(job, todo, options)
    result = job.table()
    store.write_table("coverage", result.to_arrow())
    return result


# -- per configuration ------------------------------------------------------------------------------


def _correlation(x: list[float], y: list[float]) -> dict[str, float | None]:
    """Spearman and Pearson (point-biserial, S being 0/1) correlations with their p-values;
    null with fewer than three pairs or a constant side, where they are undefined."""
    empty = {"spearman": None, "spearman_p": None, "pearson": None, "pearson_p": None}
    if len(x) < 3 or len(set(x)) < 2 or len(set(y)) < 2:
        return empty
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantInputWarning)
        rho = spearmanr(x, y)
        r = pearsonr(x, y)

    def clean(value: float) -> float | None:
        return None if value is None or math.isnan(value) else float(value)

    return {"spearman": clean(rho.statistic), "spearman_p": clean(rho.pvalue),
            "pearson": clean(r.statistic), "pearson_p": clean(r.pvalue)}


def summarise(frame: pl.DataFrame) -> dict[str, object]:
    """Means of ΔC and EC, JVR, and each one's correlation with S_i, over the rows of
    `frame` (`delta_c`, `ec`, `s`; one row per instance and configuration) where each is
    defined."""
    row: dict[str, object] = {
        "n_instances": int(frame["delta_c"].is_not_null().sum()),
        "delta_c": frame["delta_c"].mean(),
        "ec": frame["ec"].mean(),
        "jvr": frame["s"].mean() if frame.height else None,
    }
    for metric in ("delta_c", "ec"):
        pairs = frame.select(metric, "s").drop_nulls()
        stats = _correlation(pairs[metric].to_list(), pairs["s"].to_list())
        row.update({f"{metric}_{name}": value for name, value in stats.items()})
    return row


def coverage_summary(coverage: pl.DataFrame, instance_scores: pl.DataFrame) -> pl.DataFrame:
    """`scores/coverage_summary`: per configuration, mean ΔC and EC and their Spearman and
    Pearson correlations with the per-instance JVR indicator S_i."""
    joined = coverage.join(
        instance_scores.select("configuration", "instance_id", "s"), on=["configuration", "instance_id"], how="inner"
    )
    rows = [
        {"configuration": name, **summarise(group)}
        for (name,), group in sorted(joined.group_by("configuration"), key=lambda item: item[0])
    ]
    return pl.from_arrow(pa.Table.from_pylist(rows, schema=SCHEMAS["coverage_summary"]))
