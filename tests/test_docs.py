"""The README and docs/ as a newcomer reads them: the README stays short (issue 42: at most
20 KB, the details in docs/), its reason table names every reason a run can end in, and no
relative link or #anchor between the documents points at nothing (sections move between
files; a link left behind is a dead end for the reader)."""

from __future__ import annotations

import re
from pathlib import Path

from testprism.tasks.model.outcome import RUN_REASONS

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCUMENTS = [README, ROOT / "SECURITY.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks, where `#` starts a heading and `[x](y)` is a link."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def unclosed_fence(text: str) -> bool:
    """Whether a fenced code block is left open: the rest of the file would render as code."""
    return sum(1 for line in text.splitlines() if FENCE.match(line)) % 2 == 1


def anchors(text: str) -> set[str]:
    """GitHub's anchors of a markdown file's headings: lower case, punctuation dropped, spaces
    to hyphens, a repeated one suffixed -1, -2, ..."""
    found: set[str] = set()
    for line in prose_lines(text):
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        base = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-")
        slug, n = base, 0
        while slug in found:
            n += 1
            slug = f"{base}-{n}"
        found.add(slug)
    return found


def dead_links(document: Path) -> list[str]:
    """Every relative link of `document` whose file, or whose #anchor in that file, is missing."""
    dead = []
    for line in prose_lines(document.read_text()):
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, file:
                continue
            path, _, anchor = target.partition("#")
            file = (document.parent / path).resolve() if path else document
            if not file.exists():
                dead.append(f"{target}: no such file")
            elif anchor and file.suffix == ".md" and anchor not in anchors(file.read_text()):
                dead.append(f"{target}: no such heading in {file.name}")
    return dead


def reason_table(text: str) -> set[str]:
    """The reasons the README's `| reason | when |` table lists."""
    lines = text.splitlines()
    start = lines.index("| reason | when |")
    names = set()
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        names.add(line.split("|")[1].strip().strip("`"))
    return names


def test_readme_is_at_most_20_kb() -> None:
    assert len(README.read_bytes()) <= 20_000


def test_readme_lists_every_run_reason() -> None:
    assert reason_table(README.read_text()) == {reason.value for reason in RUN_REASONS}


def test_reason_table_check_sees_a_missing_row() -> None:
    """Control: the README with one reason's row taken out no longer matches."""
    text = "\n".join(line for line in README.read_text().splitlines() if not line.startswith("| `results_disagree` |"))
    assert {reason.value for reason in RUN_REASONS} - reason_table(text) == {"results_disagree"}


def test_readme_links_every_document_under_docs() -> None:
    """A newcomer finds every doc from the README: a file added to docs/ gets its line there."""
    linked = {(README.parent / target.partition("#")[0]).resolve()
              for line in prose_lines(README.read_text()) for target in LINK.findall(line)}
    assert sorted(p.name for p in (ROOT / "docs").iterdir() if p.resolve() not in linked) == []


def test_no_dead_links_between_documents() -> None:
    dead = {doc.relative_to(ROOT).as_posix(): found for doc in DOCUMENTS if (found := dead_links(doc))}
    assert dead == {}


def test_every_code_block_closes() -> None:
    assert [doc.name for doc in DOCUMENTS if unclosed_fence(doc.read_text())] == []


def test_unclosed_fence_check_sees_one() -> None:
    """Control: a block that opens and never closes is seen; a closed one is not."""
    assert unclosed_fence("# A\n\n```bash\nmake demo\n\n## B\n")
    assert not unclosed_fence("# A\n\n```bash\nmake demo\n```\n\n## B\n")


def test_dead_link_check_sees_missing_files_and_headings(tmp_path: Path) -> None:
    """Control: a link to a missing file and one to a missing heading are reported; a link to
    a heading spelt with punctuation, one inside a code block and a web address are not."""
    (tmp_path / "other.md").write_text("# Other\n\n## Setting up: `make demo` and `make test`\n")
    doc = tmp_path / "doc.md"
    doc.write_text(
        "# Doc\n\n[a](other.md#setting-up-make-demo-and-make-test) [b](https://example.org/x)\n"
        "[c](gone.md) [d](other.md#no-such-part) [e](#doc)\n\n```\n[f](inside-a-fence.md)\n```\n"
    )
    assert dead_links(doc) == ["gone.md: no such file", "other.md#no-such-part: no such heading in other.md"]
