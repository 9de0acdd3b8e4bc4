import re


def slugify(title: str) -> str:
    """Lower-case words of `title` joined by hyphens."""
    words = re.findall(r"[A-Za-z]+", title)
    return "-".join(word.lower() for word in words)
