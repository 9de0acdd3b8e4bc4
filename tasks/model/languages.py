"""The languages an instance may be written in: the one list the benchmark format accepts.

What testprism knows of each language's code (syntax trees, test functions, coverage) lives
with the code that reads it; this names the set, so a new language is one entry here plus
whatever a reader adds for it. docs/languages.md says what each language gets.
"""

from __future__ import annotations

#: accepted by `instance.toml`'s `language`
LANGUAGES: tuple[str, ...] = ("python", "go", "javascript", "typescript", "java")
