"""How an imported instance's language is named: from its row, else from its program's files.

Benchmarks spell languages their own way (SWE-bench Pro's `js`, Multi-SWE-bench's `golang`
and `cpp`, `C++`, `TypeScript`): `[names]` of `languages.toml` maps every spelling to one of
testprism's languages (the records of tasks/model/syntax/languages.py), and every importer names a
row's language through it (`name_language`), so a language is added or a spelling corrected
by editing data. Where a row names none (a Harbor task, a folder), the program tree does
(`detect_language`): manifest files first (Cargo.toml, go.mod, package.json...), else the
most numerous source files. The tree is untrusted: the walk never follows a link, skips
dependency and build folders, and looks at a bounded number of entries, deciding on those.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import stat
import tomllib
from collections import Counter, deque
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from testprism.tasks.importing.rows import RowError
from testprism.tasks.model.benchmark_format import known_language
from testprism.tasks.model.syntax import LANGUAGES

log = logging.getLogger(__name__)

TABLE = Path(__file__).parent / "languages.toml"


class _Data(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Becomes(_Data):
    """The language a manifest names instead, when a file beside it or a word in it says so."""

    language: str
    siblings: tuple[str, ...] = ()
    mentions: tuple[str, ...] = ()

    _known = field_validator("language")(known_language)


class ManifestRule(_Data):
    """Files whose presence names a language: one `language`, or the most numerous of `among`."""

    files: tuple[str, ...] = Field(min_length=1)
    language: str | None = None
    among: tuple[str, ...] = ()
    becomes: Becomes | None = None

    @field_validator("among")
    @classmethod
    def _known_among(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for language in value:
            known_language(language)
        return value

    @field_validator("language")
    @classmethod
    def _known(cls, value: str | None) -> str | None:
        return None if value is None else known_language(value)

    @model_validator(mode="after")
    def _one_way(self) -> ManifestRule:
        if (self.language is None) == (not self.among):
            raise ValueError("give either language or among")
        return self

    def matches(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.files)


class WalkBounds(_Data):
    max_entries: int = Field(gt=0)
    max_manifest_bytes: int = Field(gt=0)
    skip: frozenset[str] = frozenset()
    ambiguous: frozenset[str] = frozenset()


class LanguageTable(_Data):
    """`languages.toml`: spellings → language, the walk's bounds, the manifest rules."""

    names: dict[str, tuple[str, ...]]
    walk: WalkBounds
    manifests: tuple[ManifestRule, ...]

    @field_validator("names")
    @classmethod
    def _spellings(cls, value: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        seen: dict[str, str] = {}
        for language, spellings in value.items():
            known_language(language)
            for spelling in spellings:
                key = spelling.strip().lower()
                if seen.setdefault(key, language) != language:
                    raise ValueError(f"{spelling!r} names both {seen[key]} and {language}")
        return value

    @property
    def spellings(self) -> dict[str, str]:
        """Every spelling (lower case), and each language's own name, → the language."""
        return {**{lang: lang for lang in self.names},
                **{s.strip().lower(): lang for lang, spellings in self.names.items() for s in spellings}}


@cache
def language_table(path: Path = TABLE) -> LanguageTable:
    """The table (read once); ValueError naming the file and the field when it is invalid."""
    try:
        return LanguageTable.model_validate(tomllib.loads(path.read_text(encoding="utf-8")))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"{path}: field (file): {exc}") from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ValueError(f"{path}: field {'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from exc


def language_named(spelling: str) -> str | None:
    """testprism's language a benchmark's spelling names (`C++` → cpp, `golang` → go), None
    when it names none."""
    return language_table().spellings.get(spelling.strip().lower())


def known_languages() -> str:
    """testprism's languages, for messages."""
    return ", ".join(sorted(language_table().names))


def name_language(spelling: str, field: str, whose: str = "") -> str:
    """The language a row's `field` names (`whose` language it is, for the message);
    RowError naming the field when it names none."""
    language = language_named(spelling)
    if language is None:
        raise RowError(field, f"{whose + ' is ' if whose else ''}{spelling!r}, not a language testprism knows "
                              f"({known_languages()}; the spellings read are in {TABLE.name})")
    return language


# -- naming it from the program's files ---------------------------------------------------------


@dataclass(frozen=True)
class Detected:
    """A language named by the program's files, and which files."""

    language: str
    why: str  #: "detected from Cargo.toml", for the import's caveat


@dataclass
class _Seen:
    """What the bounded walk saw: manifests (depth, path relative to the root), source
    files per language, and whether the walk stopped at its bound."""

    manifests: list[tuple[int, str]] = field(default_factory=list)
    sources: Counter[str] = field(default_factory=Counter)
    complete: bool = True


def _extension_languages(table: LanguageTable) -> dict[str, str]:
    """Each source extension of syntax/languages.py's records → the language it counts for."""
    found = {}
    for record in LANGUAGES.values():
        language = table.spellings.get(record.name, record.name)
        for extension in record.extensions:
            if extension not in table.walk.ambiguous:
                found[extension] = language
    return found


def _walk(root: Path, table: LanguageTable) -> _Seen:
    """Breadth first over `root`, never through a link, at most `max_entries` entries."""
    seen = _Seen()
    bounds = table.walk
    extensions = _extension_languages(table)
    entries = 0
    folders: deque[tuple[str, int]] = deque([("", 0)])
    while folders:
        rel, depth = folders.popleft()
        try:
            with os.scandir(root / rel if rel else root) as listing:
                for entry in listing:
                    entries += 1
                    if entries > bounds.max_entries:
                        seen.complete = False
                        return seen
                    path = f"{rel}/{entry.name}" if rel else entry.name
                    if entry.is_symlink():
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name not in bounds.skip:
                            folders.append((path, depth + 1))
                    elif entry.is_file(follow_symlinks=False):
                        if any(rule.matches(entry.name) for rule in table.manifests):
                            seen.manifests.append((depth, path))
                        language = extensions.get(PurePosixPath(entry.name).suffix)
                        if language is not None:
                            seen.sources[language] += 1
        except OSError as exc:  # unreadable folder: decided on the rest
            log.debug("language detection: %s not read: %s", rel or root, exc)
    return seen


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _mentions(path: Path, words: tuple[str, ...], limit: int) -> str | None:
    """The first of `words` the manifest's first `limit` bytes hold (never through a link)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        text = handle.read(limit).decode("utf-8", errors="replace")
    return next((word for word in words if word in text), None)


def _manifest_language(rule: ManifestRule, root: Path, rel: str, seen: _Seen,
                       table: LanguageTable) -> tuple[str, str] | None:
    """(language, which files) a manifest names, None when it names none (a C/C++ build
    file beside neither's sources)."""
    if rule.among:
        counts = {language: seen.sources[language] for language in rule.among}
        best = max(rule.among, key=lambda language: counts[language])  # first of a tie
        if not counts[best]:
            return None
        shares = ", ".join(f"{counts[language]} {language}" for language in rule.among)
        return best, f"{rel} and the majority of the sources ({shares})"
    assert rule.language is not None
    becomes = rule.becomes
    if becomes is not None:
        folder = PurePosixPath(rel).parent
        sibling = next((s for s in becomes.siblings if _regular(root / folder / s)), None)
        if sibling is not None:
            return becomes.language, f"{rel} beside {(folder / sibling).as_posix()}"
        word = _mentions(root / rel, becomes.mentions, table.walk.max_manifest_bytes)
        if word is not None:
            return becomes.language, f"{rel}, which mentions {word}"
    return rule.language, rel


def detect_language(root: Path, shown: str = "") -> Detected | None:
    """The language `root`'s files name (paths in the reason prefixed with `shown`), None
    when no manifest and no source file names one. Manifests of the shallowest folders that
    hold any decide, the language with the most sources among several; else the most
    numerous sources (ties: by name)."""
    table = language_table()
    if root.is_symlink() or not root.is_dir():
        return None
    seen = _walk(root, table)
    bound = "" if seen.complete else f" (within the first {table.walk.max_entries} entries of the tree)"
    if not seen.complete:
        log.warning("language detection stopped after %d entries of %s", table.walk.max_entries, root)
    for depth in sorted({depth for depth, _ in seen.manifests}):
        named: list[tuple[int, int, str, str]] = []
        for found_at, rel in seen.manifests:
            if found_at != depth:
                continue
            name = PurePosixPath(rel).name
            order, rule = next((i, r) for i, r in enumerate(table.manifests) if r.matches(name))
            language = _manifest_language(rule, root, rel, seen, table)
            if language is not None:
                named.append((-seen.sources[language[0]], order, *language))
        if named:
            _, _, language, files = min(named)
            return Detected(language, f"detected from {shown}{files}{bound}")
    if not seen.sources:
        return None
    total = sum(seen.sources.values())
    language, count = min(seen.sources.items(), key=lambda item: (-item[1], item[0]))
    return Detected(language, f"detected from the source files under {shown or './'}: {count} of {total} are "
                              f"{language}{bound}")
