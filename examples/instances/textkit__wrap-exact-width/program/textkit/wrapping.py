"""Greedy word wrapping for plain text."""


def _words(text):
    """Split ``text`` into words on any run of whitespace."""
    return text.split()


def wrap(text, width=70):
    """Wrap ``text`` into lines of at most ``width`` characters.

    Words are separated by runs of whitespace (spaces, tabs, newlines), which
    collapse to a single space in the output.  Lines are filled greedily.  A
    word longer than ``width`` is never broken: it gets a line of its own.

    Returns a list of lines without trailing newlines; empty or
    whitespace-only text gives an empty list.  Raises ValueError if
    ``width`` is smaller than 1.
    """
    if width < 1:
        raise ValueError("width must be positive")
    lines = []
    current = []
    length = 0
    for word in _words(text):
        needed = len(word) if not current else length + 1 + len(word)
        if current and needed >= width:
            lines.append(" ".join(current))
            current = []
            needed = len(word)
        current.append(word)
        length = needed
    if current:
        lines.append(" ".join(current))
    return lines


def fill(text, width=70):
    """Like :func:`wrap`, but return one string with the lines joined by newlines."""
    return "\n".join(wrap(text, width))
