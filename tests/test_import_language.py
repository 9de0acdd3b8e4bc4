"""How the importers name an instance's language (tasks/importing/language.py): every
benchmark's spelling through one table, and, where no row names one, the program's files,
read by a walk that never follows a link and stops at its bound."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from testprism.tasks.model.removal import remove_tree
from testprism.tasks.importing.language import (
    TABLE,
    LanguageTable,
    detect_language,
    language_named,
    language_table,
    name_language,
)
from testprism.tasks.importing.rows import RowError
from testprism.tasks.model.syntax import LANGUAGES

TEN = ("python", "go", "javascript", "typescript", "rust", "java", "c", "cpp", "php", "ruby")


# -- the names benchmarks give ------------------------------------------------------------------


@pytest.mark.parametrize(("benchmark", "spellings"), [
    # SWE-bench / Multilingual's per-repository languages (image_specs/swebench.toml)
    ("swe-bench", {"python": "python", "javascript": "javascript", "java": "java", "go": "go", "rust": "rust",
                   "c": "c", "php": "php", "ruby": "ruby", "typescript": "typescript"}),
    # SWE-bench Pro's repo_language
    ("swe-bench-pro", {"python": "python", "js": "javascript", "ts": "typescript", "go": "go"}),
    # Multi-SWE-bench's language/lang
    ("multi-swe-bench", {"c": "c", "cpp": "cpp", "java": "java", "rust": "rust", "ts": "typescript",
                         "js": "javascript", "golang": "go", "go": "go"}),
    # the common spellings
    ("common", {"C++": "cpp", "TypeScript": "typescript", "Golang": "go", " Python ": "python", "JS": "javascript",
                "Node.js": "javascript", "PHP": "php", "Ruby": "ruby", "Rust": "rust", "Java": "java"}),
])
def test_each_benchmarks_spellings_name_testprisms_language(benchmark, spellings):
    assert {spelling: language_named(spelling) for spelling in spellings} == spellings, benchmark


def test_the_table_names_the_ten_languages_each_a_syntax_record():
    table = language_table()
    assert sorted(table.names) == sorted(TEN)
    assert all(language in LANGUAGES for language in table.names)
    assert language_named("kotlin") is None and language_named("") is None


def test_an_unknown_language_is_one_line_naming_the_field():
    with pytest.raises(RowError) as raised:
        name_language("COBOL", "repo_language", "acme/ledger")
    assert raised.value.field == "repo_language"
    message = str(raised.value)
    assert message.startswith("acme/ledger is 'COBOL', not a language testprism knows (c, cpp, go, java, ")
    assert "\n" not in message


def test_a_table_giving_one_spelling_two_languages_is_refused(tmp_path):
    text = TABLE.read_text(encoding="utf-8").replace('c = ["c"]', 'c = ["c", "cpp"]')
    bad = tmp_path / "languages.toml"
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=r"languages\.toml: field names: .*'cpp' names both"):
        language_table(bad)
    assert isinstance(language_table(), LanguageTable)


# -- naming it from the program's files ---------------------------------------------------------


def tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


@pytest.mark.parametrize(("files", "language", "because"), [
    ({"Cargo.toml": "[package]\nname='x'\n", "src/lib.rs": "", "build.py": ""}, "rust", "Cargo.toml"),
    ({"pom.xml": "<project/>", "src/main/java/A.java": ""}, "java", "pom.xml"),
    ({"build.gradle.kts": "", "src/A.java": ""}, "java", "build.gradle.kts"),
    ({"go.mod": "module x\n", "x.go": "", "tools/gen.py": ""}, "go", "go.mod"),
    ({"package.json": '{"name": "x"}', "index.js": ""}, "javascript", "package.json"),
    ({"package.json": '{"name": "x"}', "tsconfig.json": "{}", "src/a.ts": ""}, "typescript",
     "package.json beside tsconfig.json"),
    ({"package.json": '{"devDependencies": {"typescript": "5.4.0"}}', "a.js": ""}, "typescript",
     'package.json, which mentions "typescript"'),
    ({"composer.json": "{}", "src/A.php": ""}, "php", "composer.json"),
    ({"Gemfile": "", "lib/a.rb": ""}, "ruby", "Gemfile"),
    ({"acme.gemspec": "", "lib/a.rb": ""}, "ruby", "acme.gemspec"),
    ({"Makefile": "all:\n", "a.c": "", "b.c": "", "a.h": "", "tool.cpp": ""}, "c", "Makefile and the majority"),
    ({"CMakeLists.txt": "", "a.cpp": "", "b.cc": "", "c.c": "", "x.h": ""}, "cpp", "CMakeLists.txt and the majority"),
    ({"pyproject.toml": "[project]\n", "pkg/__init__.py": "", "site/app.js": ""}, "python", "pyproject.toml"),
    ({"setup.py": "", "pkg/m.py": ""}, "python", "setup.py"),
])
def test_a_manifest_names_the_language(tmp_path, files, language, because):
    found = detect_language(tree(tmp_path / "program", files), "environment/")
    assert found is not None and found.language == language
    assert found.why.startswith(f"detected from environment/{because}")


@pytest.mark.parametrize(("files", "language"), [
    ({"a.py": "", "b.py": "", "c.sh": ""}, "python"),
    ({"main.go": "", "util.go": "", "x.py": ""}, "go"),
    ({"a.rs": ""}, "rust"),
    ({"a.java": "", "b.java": "", "c.js": ""}, "java"),
    ({"a.ts": "", "b.tsx": "", "c.js": ""}, "typescript"),
    ({"a.js": "", "b.mjs": ""}, "javascript"),
    ({"a.c": "", "b.c": "", "a.h": "", "b.h": "", "c.h": ""}, "c"),
    ({"a.cpp": "", "a.hpp": ""}, "cpp"),
    ({"index.php": ""}, "php"),
    ({"a.rb": "", "b.rb": ""}, "ruby"),
])
def test_without_a_manifest_the_most_numerous_sources_name_it(tmp_path, files, language):
    found = detect_language(tree(tmp_path / "program", files))
    assert found is not None and found.language == language
    assert "source files" in found.why


def test_the_shallowest_manifest_decides_and_dependencies_are_not_read(tmp_path):
    root = tree(tmp_path / "program", {
        "Cargo.toml": "", "src/main.rs": "",
        "web/package.json": "{}", "web/a.js": "", "web/b.js": "", "web/c.js": "",  # deeper: not the program's
        "node_modules/x/package.json": "{}", **{f"vendor/v{i}.go": "" for i in range(9)},
    })
    found = detect_language(root)
    assert found is not None and (found.language, found.why) == ("rust", "detected from Cargo.toml")


def test_manifests_of_one_folder_are_decided_by_their_sources(tmp_path):
    # a Python package with a package.json for its docs tooling is Python
    root = tree(tmp_path / "program", {"pyproject.toml": "", "package.json": "{}", "a.py": "", "b.py": "", "c.js": ""})
    found = detect_language(root)
    assert found is not None and found.language == "python"


def test_nothing_names_a_language(tmp_path):
    root = tree(tmp_path / "program", {"README.md": "", "data/access.log": "", "Makefile": "all:\n"})
    assert detect_language(root) is None
    assert detect_language(tmp_path / "missing") is None


def test_links_are_never_followed(tmp_path):
    """A link to a folder of Rust sources (or to a Cargo.toml) names nothing; control: the
    same files in place name Rust."""
    elsewhere = tree(tmp_path / "elsewhere", {"Cargo.toml": "", **{f"src/m{i}.rs": "" for i in range(5)}})
    root = tree(tmp_path / "program", {"a.py": ""})
    (root / "linked").symlink_to(elsewhere, target_is_directory=True)
    (root / "Cargo.toml").symlink_to(elsewhere / "Cargo.toml")
    (root / "loop").symlink_to(root, target_is_directory=True)
    found = detect_language(root)
    assert found is not None and found.language == "python"
    # control: the files themselves, not through links
    assert detect_language(elsewhere).language == "rust"
    # a package.json whose `mentions` would come through a link is not read either
    web = tree(tmp_path / "web", {"a.js": ""})
    (tmp_path / "deps.json").write_text('{"dependencies": {"typescript": "5"}}', encoding="utf-8")
    (web / "package.json").symlink_to(tmp_path / "deps.json")
    assert detect_language(web).language == "javascript"  # from the sources: the link is no manifest
    # the root itself given as a link is not entered
    (tmp_path / "root-link").symlink_to(elsewhere, target_is_directory=True)
    assert detect_language(tmp_path / "root-link") is None


def test_a_huge_tree_is_walked_only_to_the_bound(tmp_path, monkeypatch):
    """Past `max_entries` entries the walk stops and decides on what it saw, saying so: a
    tree with more entries than the bound (deeper than Python's recursion) costs the bound."""
    table = language_table()
    small = table.model_copy(update={"walk": table.walk.model_copy(update={"max_entries": 50})})
    monkeypatch.setattr("testprism.tasks.importing.language.language_table", lambda: small)
    root = tmp_path / "program"
    tree(root, {f"a{i}.go": "" for i in range(30)})
    deep = str(root / "z")
    os.mkdir(deep)
    for _ in range(1200):  # deeper than Python's recursion limit: the walk is iterative
        deep += "/d"
        os.mkdir(deep)
    Path(deep, "Cargo.toml").write_text("", encoding="utf-8")
    visited: list[str] = []
    real_scandir = os.scandir

    def counting(path):
        visited.append(str(path))
        return real_scandir(path)

    monkeypatch.setattr("testprism.tasks.importing.language.os.scandir", counting)
    try:
        found = detect_language(root)
        walked = len(visited)
        # control: with the default bound the walk reaches the deep Cargo.toml, the only manifest
        monkeypatch.setattr("testprism.tasks.importing.language.language_table", lambda: table)
        unbounded = detect_language(root)
    finally:  # pytest's own removal of old tmp folders recurses, and fails past this depth
        monkeypatch.undo()
        remove_tree(root)
    assert found is not None and found.language == "go"
    assert "within the first 50 entries" in found.why
    assert walked <= 50
    assert unbounded is not None and unbounded.language == "rust" and "within" not in unbounded.why
