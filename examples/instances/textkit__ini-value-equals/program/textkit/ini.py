"""Minimal INI / ``key = value`` configuration parsing."""


class ParseError(ValueError):
    """A line is neither a section header, a comment nor ``key = value``."""


def parse_ini(text):
    """Parse INI-style ``text`` into ``{section: {key: value}}``.

    * ``[name]`` starts section ``name``; a header that appears again continues
      the existing section.  Keys that appear before any header belong to the
      section ``""``.
    * ``key = value``: whitespace around the key and around the value is
      stripped; everything after the first ``=`` is the value.  Values are
      kept as strings.
    * Blank lines and lines whose first non-blank character is ``#`` or ``;``
      are comments and are ignored.
    * A later key overrides an earlier one in the same section.
    * Any other line raises :class:`ParseError` quoting its line number.
    """
    result = {"": {}}
    section = result[""]
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = result.setdefault(line[1:-1].strip(), {})
            continue
        parts = line.split("=")
        if len(parts) != 2:
            raise ParseError(f"line {lineno}: expected 'key = value', got {raw!r}")
        key, value = parts
        section[key.strip()] = value.strip()
    return result
