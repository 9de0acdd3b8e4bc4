"""Which of a candidate's changes touch test infrastructure, by the data in
test_infrastructure.toml beside this module (its header says what each list means and why).

The checks that label a candidate run in the candidate's tree, so a candidate that also
changes how the runner runs (a `conftest.py` hook that reports every failure as a pass, a
Surefire configuration that ignores failures, a `.cargo/config.toml` runner that exits 0)
would label itself. `to_restore` names those files; tasks/collect/verification.py puts the
program's version of each back (or removes what the program lacks) before the checks patch
is applied, and records what it put back, which the candidates' rows and the report show.

Both trees are read without following links and each file up to MAX_CONFIG_BYTES: a
configuration past it is taken as changed (and put back). A section file that cannot be
parsed on one side reads as its bytes' digest there, so a change that breaks it is a
change.
"""

from __future__ import annotations

import configparser
import os
import fnmatch
import json
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path, PurePosixPath

from defusedxml import ElementTree

from testprism.tasks.model.hashing import digest
from testprism.tasks.sandbox.nofollow import read_file

DATA = Path(__file__).with_name("test_infrastructure.toml")
#: bytes of a configuration file read to compare its sections
MAX_CONFIG_BYTES = 1024 * 1024


@dataclass(frozen=True)
class SectionRule:
    """A file of which only `keys` configure a runner (test_infrastructure.toml)."""

    file: str
    format: str  # toml | ini | json | pom
    keys: tuple[str, ...]


@dataclass(frozen=True)
class Rules:
    """Every language's lists, joined (test_infrastructure.toml's header says why)."""

    files: tuple[str, ...]
    added: tuple[str, ...]
    sections: tuple[SectionRule, ...]
    key: str  #: what the rules are: part of every checked tree's key

    def section_rule(self, rel: str) -> SectionRule | None:
        return next((r for r in self.sections if _matches(rel, r.file)), None)


@cache
def rules() -> Rules:
    """The rules of test_infrastructure.toml (read once)."""
    text = DATA.read_text(encoding="utf-8")
    data = tomllib.loads(text)
    files: list[str] = []
    added: list[str] = []
    sections: list[SectionRule] = []
    for language in data.values():
        files += [f for f in language.get("files", []) if f not in files]
        added += [f for f in language.get("added", []) if f not in added]
        for rule in language.get("sections", []):
            found = SectionRule(rule["file"], rule["format"], tuple(rule["keys"]))
            if found not in sections:
                sections.append(found)
    return Rules(tuple(files), tuple(added), tuple(sections), digest("test-infrastructure", text))


def _matches(rel: str, pattern: str) -> bool:
    """A pattern starting with `/` matches the path from the program's root; another
    holding `/`, the path at any depth; another, the file's name."""
    if pattern.startswith("/"):
        return fnmatch.fnmatchcase(rel, pattern[1:])
    if "/" in pattern:
        return fnmatch.fnmatchcase(rel, pattern) or fnmatch.fnmatchcase(rel, "*/" + pattern)
    return fnmatch.fnmatchcase(PurePosixPath(rel).name, pattern)


def _dotted(data: object, key: str) -> object:
    for part in key.split("."):
        if not isinstance(data, dict) or part not in data:
            return None
        data = data[part]
    return data


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _sections(rule: SectionRule, data: bytes | None) -> object:
    """What `rule.keys` hold in the file's bytes `data` (None: the file is absent)."""
    if data is None:
        return None
    if len(data) > MAX_CONFIG_BYTES:
        return ("too large", digest("bytes", data.hex()))
    try:
        text = data.decode("utf-8")
        if rule.format == "toml":
            parsed: object = tomllib.loads(text)
            return {key: _dotted(parsed, key) for key in rule.keys}
        if rule.format == "json":
            parsed = json.loads(text)
            return {key: _dotted(parsed, key) for key in rule.keys}
        if rule.format == "ini":
            ini = configparser.ConfigParser(interpolation=None, strict=False)
            ini.read_string(text)
            return {key: dict(ini[key]) if ini.has_section(key) else None for key in rule.keys}
        if rule.format == "pom":
            root = ElementTree.fromstring(data, forbid_dtd=True)
            found = []
            for element in root.iter():
                name = _local(element.tag) if isinstance(element.tag, str) else ""
                artifact = next((c.text for c in element if isinstance(c.tag, str) and _local(c.tag) == "artifactId"),
                                None) if name == "plugin" else None
                if artifact in rule.keys or name in rule.keys:
                    found.append(_canonical(element))
            return found
    except Exception:  # noqa: BLE001 - any file the parser refuses reads as its bytes
        return ("unparsed", digest("bytes", data.hex()))
    raise ValueError(f"{DATA}: unknown section format {rule.format!r}")


def _canonical(element) -> str:
    """An element's tags, text and attributes, in order, namespace prefixes dropped."""
    parts = []
    for node in element.iter():
        if isinstance(node.tag, str):
            parts.append(f"<{_local(node.tag)} {sorted(node.attrib.items())}>{(node.text or '').strip()}")
    return "".join(parts)


def to_restore(program: Path, tree: Path, touched: Iterable[str]) -> list[str]:
    """The files of `touched` (what a candidate's patch changed, added or removed, as paths
    relative to the program) that are test infrastructure and that the patched `tree`
    holds otherwise than the `program` does, sorted."""
    found = rules()
    out: list[str] = []
    for rel in sorted(set(touched)):
        parts = PurePosixPath(rel).parts
        before = read_file(program, parts, MAX_CONFIG_BYTES + 1)
        if any(_matches(rel, p) for p in found.files):
            after = read_file(tree, parts, MAX_CONFIG_BYTES + 1)  # None too for a link the patch made
            changed = after != before or (after is None and os.path.lexists(tree / rel))
        elif before is None and any(_matches(rel, p) for p in found.added):
            changed = True  # added (as a file or a link) by the candidate
        else:
            rule = found.section_rule(rel)
            changed = rule is not None and _sections(rule, before) != _sections(
                rule, read_file(tree, parts, MAX_CONFIG_BYTES + 1))
        if changed:
            out.append(rel)
    return out
