"""SWE-bench Multilingual's harness specifications through the image route, one by one.

The Multilingual rows themselves cannot be had here (Hugging Face is not reachable, and no
public repository the search tool indexes holds them), so issue 40 asks for the next best:
every repository and version in SWE-bench's harness specifications for it, imported or
refused with the reason. In Multilingual a `version` is the instance's pull request number,
so a version is a row.

The specifications are read from SWE-bench's own source at the commit given (by default
25c5235, the one `tasks/importing/image_specs/swebench.toml` was derived from): each
non-Python language file `swebench/harness/constants/<lang>.py` is executed on its own
(they import nothing) and its `MAP_REPO_VERSION_TO_SPECS_<LANG>` walked. Each (repository,
version) goes through `swebench_command`, the very function the image route calls on a row:
it names the language, parser and command the row would get, or the RowError that refuses
it. The held-out repositories (fmtlib/fmt, FasterXML/jackson-core, BurntSushi/ripgrep) are
left out, and so are the SWE-bench Multimodal repositories javascript.py also holds.

    python bench/realrows/multilingual_specs.py --git-dir /work/.mirror/SWE-bench+SWE-bench/repo
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fetch import HELD_OUT  # noqa: E402

from testprism.tasks.importing.image_specs import ImageSpecs, swebench_command  # noqa: E402
from testprism.tasks.importing.rows import RowError  # noqa: E402

#: repositories of SWE-bench Multimodal whose specs javascript.py holds beside Multilingual's
MULTIMODAL = {"Automattic/wp-calypso", "chartjs/Chart.js", "markedjs/marked", "processing/p5.js", "diegomura/react-pdf"}

#: the constants files of SWE-bench Multilingual's languages (C and C++ share c.py, JavaScript
#: and TypeScript javascript.py)
FILES = {"c": "C", "go": "GO", "java": "JAVA", "javascript": "JS", "php": "PHP", "ruby": "RUBY", "rust": "RUST"}


def harness_specs(git_dir: Path, commit: str) -> dict[str, dict[str, list[str]]]:
    """{constants file: {repository: [versions]}} at `commit` (the constants folder exported
    to a temporary directory: rust.py reads Cargo.lock fixtures beside itself)."""
    found: dict[str, dict[str, list[str]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", f"--git-dir={git_dir}", "archive", commit, "swebench/harness/constants"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        for name, suffix in FILES.items():
            path = Path(tmp) / "swebench" / "harness" / "constants" / f"{name}.py"
            namespace: dict = {"__file__": str(path), "__name__": f"constants_{name}"}
            exec(compile(path.read_text(), f"{commit}:{path.name}", "exec"), namespace)  # noqa: S102 - spec tables
            table = namespace[f"MAP_REPO_VERSION_TO_SPECS_{suffix}"]
            found[name] = {repo: sorted(versions, key=str) for repo, versions in table.items()
                           if repo.lower() not in HELD_OUT and repo not in MULTIMODAL}
    return found


def walk(found: dict[str, dict[str, list[str]]]) -> list[dict]:
    """One record per (repository, version): its language and parser, or why it is refused."""
    specs = ImageSpecs.load().swebench
    out = []
    for name, repos in found.items():
        for repo, versions in repos.items():
            for version in versions:
                try:
                    checks = swebench_command(specs, repo, str(version), [])
                    out.append({"file": name, "repo": repo, "version": str(version), "language": checks.language,
                                "parser": checks.parser, "refused": None})
                except RowError as exc:
                    out.append({"file": name, "repo": repo, "version": str(version), "language": None,
                                "parser": None, "refused": f"field {exc.field}: {exc}"})
    return out


def table(records: list[dict]) -> str:
    """Markdown: per language (refused ones by constants file), specs, imported, refused; then
    every refusal's reason with its count and repositories."""
    rows = defaultdict(Counter)
    for r in records:
        key = r["language"] or f"({r['file']}.py)"
        rows[key]["versions"] += 1
        rows[key]["imported" if r["refused"] is None else "refused"] += 1
    lines = ["| language | versions (rows) | imported | refused |", "|---|---|---|---|"]
    for key in sorted(rows):
        c = rows[key]
        lines.append(f"| {key} | {c['versions']} | {c['imported']} | {c['refused']} |")
    total = Counter(r["refused"] is None for r in records)
    lines.append(f"| **all** | {len(records)} | {total[True]} | {total[False]} |")
    reasons: dict[str, set[str]] = defaultdict(set)
    counts: Counter = Counter()
    for r in records:
        if r["refused"]:
            reason = r["refused"].split(" (versions ")[0]
            reasons[reason].add(r["repo"])
            counts[reason] += 1
    if reasons:
        lines += ["", "| refusals | reason |", "|---|---|"]
        lines += [f"| {counts[k]} | {k} |" for k in sorted(reasons, key=lambda k: -counts[k])]
    parsers = Counter(r["parser"] for r in records if r["parser"])
    lines += ["", "parsers: " + ", ".join(f"{p} {n}" for p, n in parsers.most_common())]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--git-dir", type=Path, required=True, help="a git directory of SWE-bench/SWE-bench")
    parser.add_argument("--commit", default="25c5235", help="the harness commit to read the specifications at")
    args = parser.parse_args()
    print(table(walk(harness_specs(args.git_dir, args.commit))))


if __name__ == "__main__":
    main()
