"""The one TOML writer: tomli-w writes the data, comments stand above it as plain lines.

The standard library reads TOML (tomllib) but does not write it; tomli-w is the writer
the loaders' tomllib reads back. tomli-w writes no comments, so a file that explains
itself gets its comment lines before tomli-w's output."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import tomli_w


def dumps(document: Mapping[str, object], comments: Iterable[str] = ()) -> str:
    """The TOML text of `document`, after one `# ` line per comment."""
    return "".join(f"# {comment}\n" for comment in comments) + tomli_w.dumps(document)


def value(item: object) -> str:
    """The TOML text of one value (a string, number, boolean or array), as tomli-w writes
    it on the right of `key = `."""
    if isinstance(item, Mapping):
        raise TypeError("a table is not a value on one key's line: put it in a document")
    return tomli_w.dumps({"v": item})[len("v = "):-1]
