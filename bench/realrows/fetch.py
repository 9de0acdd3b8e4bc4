"""Gather real Multi-SWE-bench data for development, outside the repository (docs/real-benchmarks.md).

Nothing this writes is committed: it goes under --out (by default /work/realrows). Three
sources, each read from a git directory the user fetched (`git clone --bare`, or the search
tool's `fetch`, which leaves one under /work/.mirror/<owner>+<name>/repo):

  rows        a downloaded Multi-SWE-bench dataset (`<org>__<repo>_dataset.jsonl`, as
              published): copied row by row, the held-out repositories left out;
  candidates  multi-swe-bench/experiments: each submission's per-instance `fix.patch` with
              its official `report.json` (`valid` is the official verdict), as predictions
              rows `instance_id, model_name_or_path, model_patch, official_resolved`;
  rebuild     a row in the published shape rebuilt from a repository's squash commit of
              the pull request (base = its parent; fix_patch = what it changes outside test
              paths, test_patch = inside them, as Multi-SWE-bench splits a pull request) and
              the tests of a report.json whose run the benchmark marked valid, or of the
              `report:` line of a SWE-bench-java run_instance.log (its FAIL_TO_PASS and
              PASS_TO_PASS, whatever that run's outcome), or (--tests) the tests named by
              running the suite before and after the fix here, where no official report can
              be had (SWE-bench Multilingual's rows); `--base` when the pull request's base is
              not the squash's parent (the change merged onto it by git's three-way merge when
              it does not apply as it is). Only for when the dataset row itself cannot be had:
              the result says it was rebuilt, and from what;
  named       the rows of bench/realrows/named/ (tests named by runs here), rebuilt from
              local snapshots;
  pro         SWE-bench Pro rows in the published v2 layout, for when the dataset
              (helper_code/sweap_eval_full_v2.jsonl, a large blob) is absent from the
              snapshot of scaleapi/SWE-bench_Pro-os: the tests and base of each instance's
              run_scripts/<id>/instance_info.txt, the change of the fix commit the id names
              (its parent must be the base) split as `rebuild` splits it; the row says it was
              rebuilt, and from what.

The rows of fmtlib/fmt, FasterXML/jackson-core and BurntSushi/ripgrep are kept for an
independent check and never written.

    python bench/realrows/fetch.py candidates --git-dir /work/.mirror/multi-swe-bench+experiments/repo \\
        --commit HEAD --language c++ --split verified
    python bench/realrows/fetch.py rebuild --git-dir /work/.mirror/catchorg+Catch2/repo --commit cd60a030 \\
        --org catchorg --repo Catch2 --number 2723 --report /work/realrows/reports/catchorg__Catch2-2723.json
    python bench/realrows/fetch.py rebuild --git-dir /work/.mirror/google+gson/repo --commit 46b97bf15 \\
        --base 0e90771e45 --org google --repo gson --number 1555 --swebench-java-log run_instance.log
    python bench/realrows/fetch.py pro --pro-git-dir /work/.mirror/scaleapi+SWE-bench_Pro-os/repo \\
        --repo-git-dir /work/.mirror/navidrome+navidrome/repo instance_navidrome__navidrome-0130c6dc…
    python bench/realrows/fetch.py named        # the rows of bench/realrows/named/ (JavaScript, TypeScript,
                                                 # Ruby), rebuilt from /work/.mirror's snapshots
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path, PurePosixPath

HELD_OUT = {"fmtlib/fmt", "fasterxml/jackson-core", "burntsushi/ripgrep"}


def held_out(org: str, repo: str) -> bool:
    return f"{org}/{repo}".lower() in HELD_OUT


def git(git_dir: Path, *args: str) -> str:
    """Git's output as it printed it: decoded without newline translation, so that a diff of a
    file with CRLF line endings keeps them (text mode would turn them into LF, and the patch
    would then not apply to the file)."""
    done = subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True)
    if done.returncode != 0:
        sys.exit(f"git {' '.join(args)} in {git_dir}: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout.decode("utf-8", errors="replace")


def rows(datasets: list[Path], out: Path) -> None:
    """Copy dataset rows as published, leaving out the held-out repositories."""
    out.mkdir(parents=True, exist_ok=True)
    for dataset in datasets:
        kept = skipped = 0
        with (out / dataset.name).open("w", encoding="utf-8") as sink:
            for line in dataset.read_text(encoding="utf-8").splitlines():
                if not line.strip():
                    continue
                row = json.loads(line)
                if held_out(str(row.get("org", "")), str(row.get("repo", ""))):
                    skipped += 1
                    continue
                sink.write(line + "\n")
                kept += 1
        print(f"{dataset}: {kept} rows kept, {skipped} held out")


def candidates(git_dir: Path, commit: str, language: str, split: str, out: Path) -> None:
    """Each submission's logged fix.patch and official verdict, one predictions file per language."""
    root = f"evaluation/{language}/{split}/"
    names = git(git_dir, "ls-tree", "-r", "--name-only", commit, "--", root).splitlines()
    reports = [n for n in names if n.endswith("/report.json") and "/logs/" in n]
    out.mkdir(parents=True, exist_ok=True)
    target = out / f"candidates_{language.replace('+', 'p')}_{split}.jsonl"
    written = 0
    with target.open("w", encoding="utf-8") as sink:
        for name in sorted(reports):
            submission = name[len(root):].split("/", 1)[0]
            report = json.loads(git(git_dir, "show", f"{commit}:{name}"))
            org, repo, number = report["org"], report["repo"], report["number"]
            if held_out(org, repo):
                continue
            patch_name = name.rsplit("/", 1)[0] + "/fix.patch"
            if patch_name not in names:
                continue
            sink.write(json.dumps({
                "instance_id": f"{org}__{repo}-{number}", "model_name_or_path": submission,
                "model_patch": git(git_dir, "show", f"{commit}:{patch_name}"),
                "official_resolved": bool(report.get("valid")), "official_error": report.get("error_msg", ""),
            }) + "\n")
            written += 1
    written += summary_candidates(git_dir, commit, root, names, sink_path=target)
    print(f"{target}: {written} patches from {len(reports)} reports and the submissions' results.json under {root} "
          f"at {commit}")


def summary_candidates(git_dir: Path, commit: str, root: str, names: list[str], sink_path: Path) -> int:
    """The older layout (SWE-bench-java's Java submissions): `all_preds.jsonl` with the
    official verdicts in `results/results.json` (`resolved_ids`); an instance the run did not
    complete (`completed_ids`) has no verdict and is left out. The resolved ones are listed
    under `resolved` (SWE-bench's older key) or `resolved_ids`."""
    written = 0
    with sink_path.open("a", encoding="utf-8") as sink:
        for results in sorted(n for n in names if n.endswith("/results/results.json")):
            folder = results[: -len("results/results.json")]
            if f"{folder}logs/" in "\n".join(names) and any(n.startswith(f"{folder}logs/") and n.endswith("/report.json")
                                                             for n in names):
                continue  # read per instance above
            if f"{folder}all_preds.jsonl" not in names:
                continue
            summary = json.loads(git(git_dir, "show", f"{commit}:{results}"))
            resolved = set(summary.get("resolved_ids") or summary.get("resolved") or [])
            completed = set(summary.get("completed_ids", []))
            submission = folder[len(root):].strip("/")
            for line in git(git_dir, "show", f"{commit}:{folder}all_preds.jsonl").splitlines():
                if not line.strip():
                    continue
                pred = json.loads(line)
                instance = pred["instance_id"]
                org, _, rest = instance.partition("__")
                if held_out(org, rest.rsplit("-", 1)[0]) or instance not in completed:
                    continue
                sink.write(json.dumps({
                    "instance_id": instance, "model_name_or_path": submission, "model_patch": pred.get("model_patch") or "",
                    "official_resolved": instance in resolved, "official_error": "",
                }) + "\n")
                written += 1
    return written


def is_test_path(path: str) -> bool:
    """Multi-SWE-bench's split of a pull request: a path with a `test` segment is a test's."""
    return any("test" in part.lower() for part in PurePosixPath(path).parts[:-1]) or "test" in path.rsplit("/", 1)[-1].lower()


def swebench_java_tests(log: Path) -> dict[str, dict[str, str]]:
    """The tests of a SWE-bench-java row, read back from one of its evaluation logs: the
    harness prints `report: {...}` (a Python dict) whose `tests_status` lists every
    FAIL_TO_PASS and PASS_TO_PASS test of the row under `success` or `failure`, whatever
    the patch did. The ids are kept as SWE-bench-java writes them (`gson:com.google.gson.FooTest`:
    the Maven module, then the class)."""
    for line in log.read_text(encoding="utf-8").splitlines():
        if " - INFO - report: " in line:
            report = ast.literal_eval(line.split(" - INFO - report: ", 1)[1])
            status = next(iter(report.values()))["tests_status"]
            return {key: {test: {"test": before, "fix": "PASS"}
                          for test in status[name]["success"] + status[name]["failure"]}
                    for key, name, before in (("f2p_tests", "FAIL_TO_PASS", "FAIL"),
                                              ("p2p_tests", "PASS_TO_PASS", "PASS"))}
    sys.exit(f"{log}: no `report:` line (the run did not finish grading)")


def rebuild(git_dir: Path, commit: str, org: str, repo: str, number: int, tests: dict[str, dict], source: Path,
            out: Path, base: str | None = None, test_prefixes: list[str] | None = None,
            named_by: str | None = None) -> None:
    """A row in the published shape from the pull request's squash commit and its tests (official,
    or named by runs here: `named_by` says how, and the row carries it). The pull request's
    change is the squash's own (its parent to it); `base`, when given, is the commit it is
    applied to (the pull request's base, older than the squash's parent), directly or by a
    three-way merge without conflict (on_base). `test_prefixes`: the folders that hold the
    tests, where every path has a `test` segment (test-unit's lib/test/unit/)."""
    if held_out(org, repo):
        sys.exit(f"{org}/{repo} is held out for an independent check")
    parent = git(git_dir, "rev-parse", f"{commit}^").strip()
    base = git(git_dir, "rev-parse", base).strip() if base else parent
    changed = git(git_dir, "diff", "--name-only", parent, commit).splitlines()
    def in_tests(path: str) -> bool:
        return path.startswith(tuple(test_prefixes)) if test_prefixes else is_test_path(path)

    tests_changed = [p for p in changed if in_tests(p)]
    fixes = [p for p in changed if not in_tests(p)]
    fix_patch = git(git_dir, "diff", "--full-index", parent, commit, "--", *fixes) if fixes else ""
    test_patch = git(git_dir, "diff", "--full-index", parent, commit, "--", *tests_changed) if tests_changed else ""
    if base != parent:
        fix_patch, test_patch = on_base(git_dir, base, fix_patch + test_patch, fixes, tests_changed)
    row = {
        "org": org, "repo": repo, "number": number, "base": {"sha": base},
        "title": git(git_dir, "log", "-1", "--format=%s", commit).strip(),
        "body": git(git_dir, "log", "-1", "--format=%b", commit).strip(),
        "fix_patch": fix_patch, "test_patch": test_patch,
        **{key: tests.get(key, {}) for key in ("f2p_tests", "p2p_tests", "s2p_tests", "n2p_tests")},
        "rebuilt_from": {"commit": commit, "tests": str(source), **({"base": base} if base != parent else {}),
                         **({"named_by": named_by} if named_by else {})},
    }
    out.mkdir(parents=True, exist_ok=True)
    target = out / f"{org}__{repo}_rebuilt.jsonl"
    with target.open("a", encoding="utf-8") as sink:
        sink.write(json.dumps(row) + "\n")
    print(f"{target}: {org}/{repo}#{number} base {base[:12]}, {len(fixes)} fix files, {len(tests_changed)} test files, "
          f"{len(row['f2p_tests'])} f2p, {len(row['p2p_tests'])} p2p")


def on_base(git_dir: Path, base: str, patch: str, fixes: list[str], tests: list[str]) -> tuple[str, str]:
    """The pull request's change (fix and test parts) as it applies to `base`: itself when it
    applies there, else git's three-way merge of it onto `base` (the squash's pre-images are in
    the repository) when that merge has no conflict; exits otherwise. A rebuilt row whose
    patches do not apply would fail for a reason of ours."""
    with tempfile.TemporaryDirectory() as scratch:
        tree = Path(scratch) / "tree"
        tree.mkdir()
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(scratch) / "index")}
        command = ["git", f"--git-dir={git_dir}", f"--work-tree={tree}"]
        subprocess.run([*command, "read-tree", base], env=env, check=True)
        subprocess.run([*command, "checkout-index", "-a", "-u"], env=env, check=True)
        done = subprocess.run([*command, "apply", "--3way", "-"], env=env, cwd=tree, input=patch.encode(),
                              capture_output=True)
        if done.returncode != 0:
            sys.exit(f"the pull request's change does not apply to {base[:12]}, nor merge there without conflict: "
                     f"{done.stderr.decode(errors='replace').strip()}")

        def part(paths: list[str]) -> str:
            if not paths:
                return ""
            diff = subprocess.run([*command, "diff", "--full-index", base, "--", *paths], env=env, cwd=tree,
                                  capture_output=True, check=True)
            return diff.stdout.decode("utf-8", errors="replace")

        return part(fixes), part(tests)


def named_tests(path: Path) -> dict:
    """`--tests`: the deciding and kept tests named by running the row's test command before
    and after the fix here ({"f2p_tests": {id: {"test": "FAIL", "fix": "PASS"}}, "p2p_tests":
    {...}, "how": "the command and the runner"}), for a row whose benchmark publishes no report
    that can be had. `how` must say how they were named: the row carries it."""
    named = json.loads(path.read_text(encoding="utf-8"))
    if not named.get("f2p_tests") or not str(named.get("how", "")).strip():
        sys.exit(f"{path}: field f2p_tests or how: a tests file names its deciding tests and how they were named")
    return named


def rebuild_named(git_dir: Path, commit: str, org: str, repo: str, number: int, named: Path, out: Path,
                  test_prefixes: list[str] | None = None) -> None:
    """`rebuild` with the tests of a `named_tests` file, the row saying how they were named."""
    tests = named_tests(named)
    rebuild(git_dir, commit, org, repo, number, tests, named, out, None, test_prefixes, tests["how"])


#: rows rebuilt from their fix commits with tests named by runs here (`named_tests`), one file a row
NAMED = Path(__file__).resolve().parent / "named"


def named_rows(mirrors: Path, out: Path) -> None:
    """Rebuild every row of bench/realrows/named/ from the repositories' snapshots under
    `mirrors` (`<owner>+<name>/repo`, as the search tool's fetch leaves them), and link each
    snapshot as out/repos/<owner>__<name> for the import's --repos. Each file names its fix
    commit, its tests and how they were named; its rows file is written anew."""
    specs = [(path, json.loads(path.read_text(encoding="utf-8"))) for path in sorted(NAMED.glob("*.json"))]
    for _, spec in specs:
        (out / "rows" / f"{spec['org']}__{spec['repo']}_rebuilt.jsonl").unlink(missing_ok=True)
    (out / "repos").mkdir(parents=True, exist_ok=True)
    for path, spec in specs:
        git_dir = mirrors / f"{spec['org']}+{spec['repo']}" / "repo"
        if not git_dir.is_dir():
            sys.exit(f"{path}: field repo: no snapshot of {spec['org']}/{spec['repo']} at {git_dir}")
        link = out / "repos" / f"{spec['org']}__{spec['repo']}"
        if not link.exists():
            link.symlink_to(git_dir)
        rebuild_named(git_dir, spec["commit"], spec["org"], spec["repo"], int(spec["number"]), path, out / "rows",
                      spec.get("test_prefix"))


def pro_info(text: str, source: str) -> dict[str, str]:
    """instance_info.txt's `Key: value` lines (Repository, Base Commit, Test Files,
    FAIL_TO_PASS, PASS_TO_PASS; the lists are JSON); exits naming the file and a missing key."""
    info = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
    for key in ("Repository", "Base Commit", "Test Files", "FAIL_TO_PASS", "PASS_TO_PASS"):
        if key not in info:
            sys.exit(f"{source}: field {key}: missing")
    return info


def pro_row(pro_git_dir: Path, repo_git_dir: Path, instance: str, language: str) -> dict:
    """A SWE-bench Pro row in the published v2 layout (the lists as Python literals, as Pro's
    dataset writes them and its harness `eval`s them) rebuilt from instance_info.txt and the fix
    commit named by the instance id. What the snapshot lacks is said in `rebuilt_from`: the
    problem statement is the commit's message, requirements and interface are empty,
    before_repo_set_cmd is empty (the test files come in test_patch)."""
    source = f"run_scripts/{instance}/instance_info.txt"
    info = pro_info(git(pro_git_dir, "show", f"HEAD:{source}"), source)
    repo, base = info["Repository"].strip(), info["Base Commit"].strip()
    org, name = repo.split("/")
    if held_out(org, name):
        sys.exit(f"{repo} is held out for an independent check")
    commit = instance.removesuffix("-vnan").rsplit("-", 1)[1]
    parent = git(repo_git_dir, "rev-parse", f"{commit}^").strip()
    if parent != git(repo_git_dir, "rev-parse", base).strip():
        sys.exit(f"{source}: field Base Commit: {base} is not the parent of {commit} (the id's commit), so the row "
                 "cannot be rebuilt from it")
    changed = git(repo_git_dir, "diff", "--name-only", parent, commit).splitlines()
    tests_changed = [p for p in changed if is_test_path(p)]
    fixes = [p for p in changed if not is_test_path(p)]
    def diff(paths: list[str]) -> str:
        return git(repo_git_dir, "diff", "--full-index", parent, commit, "--", *paths) if paths else ""

    from testprism.tasks.importing.image_names import pro_tag
    return {
        "repo": repo, "instance_id": instance, "base_commit": base, "patch": diff(fixes), "test_patch": diff(tests_changed),
        "problem_statement": git(repo_git_dir, "log", "-1", "--format=%B", commit).strip(), "requirements": "",
        "interface": "", "repo_language": language,
        "fail_to_pass": repr(json.loads(info["FAIL_TO_PASS"])), "pass_to_pass": repr(json.loads(info["PASS_TO_PASS"])),
        "before_repo_set_cmd": "", "selected_test_files_to_run": repr(json.loads(info["Test Files"])),
        "dockerhub_tag": pro_tag(instance, repo),
        "rebuilt_from": {"instance_info": f"scaleapi/SWE-bench_Pro-os@{git(pro_git_dir, 'rev-parse', 'HEAD')[:7]}:{source}",
                         "commit": commit,
                         "not_published_here": "problem_statement is the commit's message; requirements, interface "
                                               "and before_repo_set_cmd are empty; dockerhub_tag is derived by "
                                               "helper_code/image_uri.py; patch/test_patch split by path"},
    }


#: the run_scripts/<id>/ files the import's --pro-scripts reads (and the tests' source, kept beside them)
PRO_SCRIPTS = ("run_script.sh", "parser.py", "instance_info.txt")


def pro_rows(pro_git_dir: Path, repo_git_dir: Path, instances: list[str], language: str, out: Path) -> None:
    """`pro_row` for each instance, written anew to out/rows/<owner>__<repo>_pro_rebuilt.jsonl,
    and each instance's scripts to out/run_scripts/<id>/ (the folder --pro-scripts names). Kept
    apart from the Multi-SWE-bench rows of out/../rows/, which the source route imports."""
    rows = [pro_row(pro_git_dir, repo_git_dir, instance, language) for instance in instances]
    (out / "rows").mkdir(parents=True, exist_ok=True)
    target = out / "rows" / f"{rows[0]['repo'].replace('/', '__')}_pro_rebuilt.jsonl"
    target.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    for instance in instances:
        folder = out / "run_scripts" / instance
        folder.mkdir(parents=True, exist_ok=True)
        for name in PRO_SCRIPTS:
            (folder / name).write_text(git(pro_git_dir, "show", f"HEAD:run_scripts/{instance}/{name}"), encoding="utf-8")
    print(f"{target}: {len(rows)} rows; their scripts in {out / 'run_scripts'}")


def report_tests(report: Path) -> dict[str, dict]:
    """The tests of a Multi-SWE-bench report.json, which must be a run the benchmark marked valid."""
    official = json.loads(report.read_text(encoding="utf-8"))
    if not official.get("valid"):
        sys.exit(f"{report}: the benchmark did not mark this run valid; its tests do not describe the row")
    return {key: official.get(key, {}) for key in ("f2p_tests", "p2p_tests", "s2p_tests", "n2p_tests")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("/work/realrows"))
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("rows")
    r.add_argument("datasets", type=Path, nargs="+")
    c = sub.add_parser("candidates")
    c.add_argument("--git-dir", type=Path, required=True)
    c.add_argument("--commit", default="HEAD")
    c.add_argument("--language", required=True, help="the experiments folder: c, c++, go, java, js, rust, ts")
    c.add_argument("--split", default="verified")
    b = sub.add_parser("rebuild")
    b.add_argument("--git-dir", type=Path, required=True)
    b.add_argument("--commit", required=True)
    b.add_argument("--org", required=True)
    b.add_argument("--repo", required=True)
    b.add_argument("--number", type=int, required=True)
    b.add_argument("--base", help="the pull request's base, when it is not the squash's parent")
    tests = b.add_mutually_exclusive_group(required=True)
    tests.add_argument("--report", type=Path, help="a Multi-SWE-bench report.json the benchmark marked valid")
    tests.add_argument("--swebench-java-log", type=Path, help="a SWE-bench-java run_instance.log of the row")
    tests.add_argument("--tests", type=Path, help="tests named by runs before and after the fix here (named_tests)")
    b.add_argument("--test-prefix", action="append", help="a folder of the tests (instead of the `test` segment rule)")
    n = sub.add_parser("named", help="rebuild the rows of bench/realrows/named/ from local snapshots")
    n.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    p = sub.add_parser("pro", help="SWE-bench Pro rows (v2 layout) from run_scripts/<id>/instance_info.txt")
    p.add_argument("--pro-git-dir", type=Path, required=True, help="a snapshot of scaleapi/SWE-bench_Pro-os")
    p.add_argument("--repo-git-dir", type=Path, required=True, help="a snapshot of the instances' repository")
    p.add_argument("--language", default="go", help="repo_language as Pro writes it (python, js, ts, go)")
    p.add_argument("instances", nargs="+")
    args = parser.parse_args()
    if args.command == "pro":
        pro_rows(args.pro_git_dir, args.repo_git_dir, args.instances, args.language, args.out / "pro")
    elif args.command == "rows":
        rows(args.datasets, args.out / "rows")
    elif args.command == "candidates":
        candidates(args.git_dir, args.commit, args.language, args.split, args.out / "candidates")
    elif args.command == "named":
        named_rows(args.mirrors, args.out)
    elif args.tests:
        if args.base:
            sys.exit("--base: a row whose tests are named here is rebuilt on the squash's parent, where they were named")
        rebuild_named(args.git_dir, args.commit, args.org, args.repo, args.number, args.tests, args.out / "rows",
                      args.test_prefix)
    else:
        source = args.report or args.swebench_java_log
        tests = report_tests(source) if args.report else swebench_java_tests(source)
        rebuild(args.git_dir, args.commit, args.org, args.repo, args.number, tests, source, args.out / "rows",
                args.base, args.test_prefix)


if __name__ == "__main__":
    main()
