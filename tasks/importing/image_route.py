"""The image route of `testprism import swebench`: rows of the benchmarks that ship one image
per instance become image instances (docs/benchmark-format.md "Image instances"), keeping
what the benchmark ships: its image, named by its own scheme (`image_names`), the program's
path in it, its test command and the parser of its official log (`image_specs`), its
per-instance scripts (SWE-bench Pro's run_script.sh and parser.py).

Each row is read on its own (`task_repo.published_records`: a rows file, or task folders),
recognised by its fields:

- SWE-bench / SWT-bench / Verified / Lite / Multilingual (`instance_id, repo, base_commit,
  patch, test_patch, FAIL_TO_PASS, PASS_TO_PASS, version, problem_statement`), and
  R2E-Gym / DeepSWE-style rows of the same shape that name their image (`docker_image`);
- SWE-bench Pro (`dockerhub_tag`, `before_repo_set_cmd`, `selected_test_files_to_run`,
  lower-case `fail_to_pass`/`pass_to_pass` as Python list literals; scaleapi/SWE-bench_Pro-os
  swe_bench_pro_eval.py reads them with `eval`, here `ast.literal_eval`);
- Multi-SWE-bench (`org, repo, number, base.sha, fix_patch, test_patch, f2p_tests,
  p2p_tests, s2p_tests, n2p_tests, resolved_issues`; multi-swe-bench
  multi_swe_bench/harness/dataset.py `Dataset`).

R2E-Gym's own rows (`docker_image, repo_name, commit_hash, parsed_commit_content,
expected_output_json`, no FAIL_TO_PASS) differ in kind: their tests live in the image and
are graded against `expected_output_json`; each is refused here, pointed to the source route
(`r2e_gym`), which derives their program, reference and checks from the row.

A row missing a field is an issue naming the rows file, the row and the field; what a
row's benchmark ships that an instance cannot hold is a caveat of the imported row (an
Issue with `fatal=False`). An instance is written in a staging folder, loaded as the loader
will load it (an image instance loads without an engine: its key is marked unresolved) and
renamed into place only when whole.
"""

from __future__ import annotations

import ast
import logging
import shlex
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator

from testprism.tasks.importing.folders import edit_diff
from testprism.tasks.importing.image_names import (
    PRO_PROGRAM,
    SWEBENCH_PROGRAM,
    ImageMap,
    multi_swe_bench_image,
    pro_image,
    pro_tag,
    swebench_image,
)
from testprism.tasks.importing.image_specs import ImageSpecs, multi_swe_bench_parser, swebench_command
from testprism.tasks.importing.instance_writer import summary_line
from testprism.tasks.importing.language import name_language
from testprism.tasks.importing.multi_swe_bench import fail_to_pass, multi_instruction, multi_row, row_id, row_kind
from testprism.tasks.importing.refusals import declared_language, record_refusals
from testprism.tasks.importing.rows import (
    ImportReport,
    Issue,
    PublishedRow,
    Record,
    RowError,
    SweBenchRow,
    json_encoded,
    validated,
)
from testprism.tasks.importing.setup_lines import script_notes
from testprism.tasks.importing.staging import staged
from testprism.tasks.importing.task_repo import published_records
from testprism.tasks.model import toml_writer
from testprism.tasks.model.benchmark import BenchmarkError, load_instance
from testprism.tasks.model.benchmark_format import EnvironmentSpec
from testprism.tasks.model.patches import parse_field, with_final_newline

log = logging.getLogger(__name__)

#: where a Pro instance's run_script.sh and parser.py go in the program tree (with the
#: checks: the checks' command runs them there), and where their logs are written
PRO_FOLDER = ".swebench_pro"


@dataclass(frozen=True)
class ImageTask:
    """An instance as a row's benchmark ships it, ready to be written."""

    instance_id: str
    kind: str  #: swe-bench | swe-bench-pro | multi-swe-bench
    language: str
    summary: str
    instruction: str
    image: str
    program_in_image: str
    reference: str
    checks_patch: str
    command: str
    parser: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    origin: dict[str, Any]
    #: where `image`'s name comes from (the benchmark's scheme, or the row)
    image_from: str
    #: the row's field the name is made of, blamed when it is no image reference
    image_field: str
    #: what the benchmark ships that the instance does not keep: (row field, why)
    caveats: tuple[tuple[str, str], ...] = ()


# -- the rows of each benchmark ---------------------------------------------------------------


def _list_literal(value: Any) -> Any:
    """A list given as a list, a JSON string (SWE-bench) or a Python literal (Pro's `eval`)."""
    try:
        return json_encoded(value, "a list")
    except ValueError:
        pass
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError) as exc:
        raise ValueError(f"neither a list nor a JSON or Python list literal: {exc}") from exc


class SweBenchImageRow(SweBenchRow):
    """A SWE-bench row; `docker_image` is set by R2E-Gym / DeepSWE-style rows, which name
    their image themselves, `image` and `eval_script` by SWE-bench 5.0's task directories
    (task_repo.py: task.yaml's image, eval.sh)."""

    docker_image: str = ""
    image: str = ""
    eval_script: str = ""


class ProRow(PublishedRow):
    """The fields of a SWE-bench Pro row this route uses (ScaleAI/SWE-bench_Pro's columns)."""

    problem_statement: str = Field(min_length=1)
    requirements: str = ""
    interface: str = ""
    fail_to_pass: tuple[str, ...] = Field(min_length=1)
    pass_to_pass: tuple[str, ...]
    before_repo_set_cmd: str = ""
    selected_test_files_to_run: tuple[str, ...] = Field(min_length=1)
    dockerhub_tag: str = ""
    repo_language: str = ""

    @field_validator("fail_to_pass", "pass_to_pass", "selected_test_files_to_run", mode="before")
    @classmethod
    def _lists(cls, value: Any) -> Any:
        return _list_literal(value)


def swebench_task(data: dict[str, Any], specs: ImageSpecs) -> ImageTask:
    """A SWE-bench-shaped row: the official image, the program at /testbed, the command and
    parser of its repository (and version) in swebench.toml."""
    row = validated(SweBenchImageRow, data)
    parse_field(row.patch, "patch")
    touched = [patched.path for patched in parse_field(row.test_patch, "test_patch")]
    where = specs.swebench_file(row.repo)
    checks = swebench_command(specs.swebench, row.repo, row.version, touched, where)
    image = row.docker_image or row.image or swebench_image(row.instance_id)
    named_by = "docker_image" if row.docker_image else "image" if row.image else ""
    left_out = [("version", f"{where}: field {field}: {line!r} needs root, which a check run has not (an "
                            "unprivileged uid on a read-only root): left out of the checks' command; the image's "
                            "build must have done it, as SWE-bench's environment images do (pre_install)")
                for field, line in checks.left_out]
    if row.eval_script:
        left_out.append(("eval_script", "not run: SWE-bench 5.0's eval.sh checks the test files out and applies "
                                        "test.patch with git, which the program read out of the image has not; "
                                        "the checks apply test.patch and run the repository's command of "
                                        f"{where} instead, graded by its log parser"))
    return ImageTask(
        instance_id=row.instance_id, kind="swe-bench", language=checks.language,
        summary=summary_line(row.problem_statement), instruction=row.problem_statement, image=image,
        program_in_image=SWEBENCH_PROGRAM, reference=row.patch, checks_patch=row.test_patch,
        command=checks.command, parser=checks.parser, fail_to_pass=row.FAIL_TO_PASS, pass_to_pass=row.PASS_TO_PASS,
        origin={"repo": row.repo, "base_commit": row.base_commit, "version": row.version,
                "log_parser": checks.log_parser,
                **({"test_command": checks.template} if checks.template else {})},
        image_from=f"the row's {named_by}" if named_by else "SWE-bench's naming (swebench/image_builder/image_spec.py)",
        image_field=named_by or "instance_id",
        caveats=tuple(left_out),
    )


def pro_instruction(row: ProRow) -> str:
    """What Pro gives an agent: the issue, its requirements and the new interfaces
    (helper_code/create_problem_statement.py)."""
    return (f"{row.problem_statement}\n\nRequirements:\n{row.requirements}\n\n"
            f"New interfaces introduced:\n{row.interface}")


def pro_scripts_diff(scripts: Path, instance_id: str) -> str:
    """The diff that adds the instance's run_script.sh and parser.py under PRO_FOLDER, so
    that the checks run them in the sandbox; RowError naming the missing script."""
    folder = scripts / instance_id
    if folder.is_symlink():
        raise RowError("run_script.sh", f"{folder} is a symbolic link: not followed (what it points at would be "
                                        "copied into the benchmark)")
    files: dict[str, bytes] = {}
    for name in ("run_script.sh", "parser.py"):
        path = folder / name
        if path.is_symlink() or not path.is_file():
            raise RowError(name, f"{path} is not a file: the run_scripts/<instance_id>/ folder of "
                                 "scaleapi/SWE-bench_Pro-os holds the instance's run_script.sh and parser.py "
                                 "(--pro-scripts); a symbolic link is not followed")
        files[f"{PRO_FOLDER}/{name}"] = path.read_bytes()
    with tempfile.TemporaryDirectory(prefix="testprism-pro-") as empty:
        return edit_diff(Path(empty), files)


def pro_command(selected: tuple[str, ...]) -> str:
    """Pro's entry script (swe_bench_pro_eval.py `create_entryscript`) from the program root:
    run_script.sh on the selected test files (comma-joined), its stdout and stderr to two
    logs, parser.py over them into output.json, which is the command's only output, read by
    the `script` parser (tasks/execution/logs/script.py)."""
    logs = f"{PRO_FOLDER}/stdout.log {PRO_FOLDER}/stderr.log {PRO_FOLDER}/output.json"
    return (f"bash {PRO_FOLDER}/run_script.sh {shlex.quote(','.join(selected))} > {PRO_FOLDER}/stdout.log "
            f"2> {PRO_FOLDER}/stderr.log; python {PRO_FOLDER}/parser.py {logs} > /dev/null 2>&1; "
            f"cat {PRO_FOLDER}/output.json")


def pro_task(data: dict[str, Any], scripts: Path | None) -> ImageTask:
    """A SWE-bench Pro row: its image, the program at /app, its run_script.sh and parser.py
    run in the sandbox as the checks' command."""
    row = validated(ProRow, data)
    parse_field(row.patch, "patch")
    parse_field(row.test_patch, "test_patch")
    if not row.repo_language.strip():
        raise RowError("repo_language", "missing: a SWE-bench Pro row names its repository's language there")
    language = name_language(row.repo_language, "repo_language", row.repo)
    if scripts is None:
        raise RowError("run_script.sh", "a SWE-bench Pro row is tested by its run_script.sh and parser.py: give "
                                        "--pro-scripts (the run_scripts/ folder of scaleapi/SWE-bench_Pro-os)")
    checks_patch = with_final_newline(row.test_patch) + pro_scripts_diff(scripts, row.instance_id)
    run_script = scripts / row.instance_id / "run_script.sh"  # a file, not a link (pro_scripts_diff)
    caveats: list[tuple[str, str]] = [
        ("run_script.sh", note) for note in script_notes(run_script.read_text(encoding="utf-8", errors="replace"),
                                                         str(run_script))]
    tag = row.dockerhub_tag
    if not tag:
        tag = pro_tag(row.instance_id, row.repo)
        caveats.append(("dockerhub_tag", f"missing: the tag {tag!r} is derived as Pro's helper_code/image_uri.py "
                                         "derives it"))
    if row.before_repo_set_cmd.strip():
        caveats.append(("before_repo_set_cmd", "not run: the program is read out of the image without its .git, "
                                               "so the test files it checks out come from test_patch (the checks); "
                                               "kept in origin.toml"))
    return ImageTask(
        instance_id=row.instance_id, kind="swe-bench-pro", language=language,
        summary=summary_line(row.problem_statement), instruction=pro_instruction(row),
        image=pro_image(tag), program_in_image=PRO_PROGRAM, reference=row.patch, checks_patch=checks_patch,
        command=pro_command(row.selected_test_files_to_run), parser="script",
        fail_to_pass=row.fail_to_pass, pass_to_pass=row.pass_to_pass,
        origin={"repo": row.repo, "base_commit": row.base_commit, "before_repo_set_cmd": row.before_repo_set_cmd,
                "selected_test_files_to_run": list(row.selected_test_files_to_run),
                "scripts": str(scripts / row.instance_id)},
        image_from="Pro's jefzda/sweap-images:<dockerhub_tag>" if row.dockerhub_tag else "Pro's helper_code/image_uri.py",
        image_field="dockerhub_tag" if row.dockerhub_tag else "instance_id",
        caveats=tuple(caveats),
    )


def multi_task(data: dict[str, Any], specs: ImageSpecs) -> ImageTask:
    """A Multi-SWE-bench row: its image, the program at /home/<repo>, the image's run.sh
    as the checks' command and its language's parser. Tests that pass after the fix but
    were skipped (s2p) or absent (n2p) before it decide with the fail-to-pass ones, as
    Multi-SWE-bench's `fixed_tests` do; that they do not fail on the buggy program is a caveat."""
    row = multi_row(data)
    instance_id = row.name
    parse_field(row.fix_patch, "fix_patch")
    parse_field(row.test_patch, "test_patch")
    language, parser = multi_swe_bench_parser(specs.multi, row.org, row.repo, row.language_named)
    deciding = fail_to_pass(row)
    instruction = multi_instruction(row)
    if not instruction:
        raise RowError("resolved_issues", "no issue text and no pull request title: the instance has no instruction")
    caveats = [(name, f"{len(tests)} tests kept as fail_to_pass: they pass after the fix but were "
                      f"{'skipped' if name == 's2p_tests' else 'absent'} before it, so they may not fail on the buggy "
                      "program")
               for name, tests in (("s2p_tests", row.s2p_tests), ("n2p_tests", row.n2p_tests)) if tests]
    return ImageTask(
        instance_id=instance_id, kind="multi-swe-bench", language=language, summary=summary_line(instruction),
        instruction=instruction, image=multi_swe_bench_image(row.org, row.repo, row.number),
        program_in_image=f"/home/{row.repo}", reference=row.fix_patch, checks_patch=row.test_patch,
        command=specs.multi.command, parser=parser, fail_to_pass=deciding, pass_to_pass=tuple(row.p2p_tests),
        origin={"repo": f"{row.org}/{row.repo}", "number": row.number, "base_commit": row.base.sha},
        image_from="Multi-SWE-bench's naming (multi_swe_bench/harness/image.py)",
        image_field="repo",
        caveats=tuple(caveats),
    )


# -- writing -----------------------------------------------------------------------------------


def instance_document(task: ImageTask, source: str, image: str) -> dict[str, Any]:
    """instance.toml of an image instance: no [program] (the program is in the image)."""
    return {
        "id": task.instance_id,
        "source": source,
        "language": task.language,
        "summary": task.summary,
        "environment": {"image": image, "program_in_image": task.program_in_image},
        "checks": {
            "patch": "checks.diff",
            "command": task.command,
            "fail_to_pass": list(task.fail_to_pass),
            "pass_to_pass": list(task.pass_to_pass),
            "parser": task.parser,
        },
    }


def write_image_instance(folder: Path, task: ImageTask, *, source: str, image: str, image_from: str,
                         record: str) -> None:
    """The instance's files: the diffs as published (no program here to fit them to), the
    instruction, instance.toml and origin.toml (provenance, and what was not kept)."""
    (folder / "reference.diff").write_text(with_final_newline(task.reference), encoding="utf-8")
    (folder / "checks.diff").write_text(with_final_newline(task.checks_patch), encoding="utf-8")
    (folder / "instruction.md").write_text(with_final_newline(task.instruction), encoding="utf-8")
    comments = [f"Imported by `testprism import swebench --route image` from a {task.kind} row; provenance in "
                "origin.toml."]
    (folder / "instance.toml").write_text(
        toml_writer.dumps(instance_document(task, source, image), comments), encoding="utf-8")
    origin = {"row": record, "benchmark": task.kind, **task.origin, "image": image, "image_name_from": image_from,
              "not_kept": [f"{name}: {why}" for name, why in task.caveats]}
    (folder / "origin.toml").write_text(toml_writer.dumps(
        origin, ["Where this instance came from (testprism import swebench --route image). Not read by the loader."]),
        encoding="utf-8")


@dataclass(frozen=True)
class ImageRoute:
    """What the image route needs besides the rows: the specs tables, the user's names, and
    SWE-bench Pro's run_scripts/ folder."""

    specs: ImageSpecs
    images: ImageMap = field(default_factory=ImageMap)
    pro_scripts: Path | None = None

    def task(self, data: dict[str, Any]) -> ImageTask:
        kind = row_kind(data)
        if kind == "r2e-gym":
            raise RowError("expected_output_json", "an R2E-Gym row: its image keeps its tests outside the program "
                                                   "(/r2e_tests) and it is graded against expected_output_json, which "
                                                   "this route does not convert; import it with --route source and a "
                                                   "recipe (tasks/importing/r2e_gym.py derives its checks from the "
                                                   "row), or give it in SWE-bench's layout naming its docker_image")
        if kind == "swe-bench-pro":
            return pro_task(data, self.pro_scripts)
        if kind == "multi-swe-bench":
            return multi_task(data, self.specs)
        return swebench_task(data, self.specs)


def import_image_row(record: Record, out: Path, route: ImageRoute, source: str, *, overwrite: bool,
                     caveat: Callable[[str, str, str], None]) -> str:
    """Import one row as an image instance; returns `imported` or `exists`. Raises RowError
    (or DiffError) naming the field; each caveat is handed to `caveat(instance_id, field, why)`."""
    assert record.data is not None
    task = route.task(record.data)
    final = out / "instances" / task.instance_id
    if final.exists() and not overwrite:
        return "exists"
    image, overridden = route.images.name(task.instance_id, task.image)
    image_from = overridden or task.image_from
    try:
        EnvironmentSpec(image=image, program_in_image=task.program_in_image)
    except ValidationError as exc:
        raise RowError(task.image_field, f"gives the image {image!r}: {exc.errors()[0]['msg']}") from exc
    with staged(out, final, overwrite=overwrite) as folder:
        folder.mkdir()
        write_image_instance(folder, task, source=source, image=image, image_from=image_from, record=record.label)
        try:
            load_instance(folder)
        except BenchmarkError as exc:
            raise RowError(exc.field, f"the written instance does not load: {exc}") from exc
    for name, why in task.caveats:
        caveat(task.instance_id, name, why)
    log.info("imported %s (%s, image %s)", task.instance_id, task.kind, image)
    return "imported"


def import_image_rows(rows: Path, out: Path, route: ImageRoute, *, source: str = "swe-bench-lite",
                      overwrite: bool = False) -> ImportReport:
    """Import every row of a rows file as image instances into the benchmark at `out`. A bad
    row is an issue naming the file, the row and the field, and the others go on; what a
    row's benchmark ships that its instance does not keep is a caveat of that row. The
    refused rows are kept in `out`/refused.json for the gate (tasks/importing/refusals.py)."""
    report = ImportReport()
    seen: set[str] = set()
    languages: dict[str, str] = {}
    for record in published_records(rows):
        if record.data is None:
            report.issues.append(Issue(record.label, "", "(row)", record.error))
            continue
        instance_id = row_id(record.data)
        languages[instance_id or record.label] = declared_language(record.data)
        if instance_id and instance_id in seen:
            report.issues.append(Issue(record.label, instance_id, "instance_id", "appears twice in the file; kept the first"))
            continue
        seen.add(instance_id)

        def caveat(iid: str, name: str, why: str, label: str = record.label) -> None:
            report.issues.append(Issue(label, iid, name, why, fatal=False))

        report.attempt(record.label, instance_id, lambda r=record, c=caveat: import_image_row(
            r, out, route, source, overwrite=overwrite, caveat=c))
    record_refusals(out, report, source, languages)
    unused = sorted(set(route.images.names) - seen)
    if unused:
        log.warning("%s names images of instances that are not rows of %s: %s", route.images.path, rows.name,
                    ", ".join(unused))
    return report
