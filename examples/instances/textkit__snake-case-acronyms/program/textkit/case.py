"""Identifier case conversion (camelCase / PascalCase <-> snake_case)."""


def to_snake(name):
    """Convert a camelCase or PascalCase identifier to snake_case.

    Each word starts with a capital letter; the result is lower case with
    the words joined by single underscores::

        >>> to_snake("parseJsonResponse")
        'parse_json_response'
        >>> to_snake("RowCount")
        'row_count'

    Underscores already in ``name`` are kept and never doubled, and a name
    that is already snake_case comes back unchanged.
    """
    out = []
    for i, ch in enumerate(name):
        if ch.isupper():
            if i > 0 and name[i - 1] != "_":
                out.append("_")
            out.append(ch.lower())
        else:
            out.append(ch)
    return "".join(out)


def to_camel(name, upper_first=False):
    """Convert a snake_case identifier to camelCase (PascalCase if ``upper_first``)."""
    words = [word for word in name.split("_") if word]
    if not words:
        return ""
    head = words[0].capitalize() if upper_first else words[0].lower()
    return head + "".join(word.capitalize() for word in words[1:])
