"""textkit: small text-processing helpers."""

from textkit.ini import ParseError, parse_ini

__all__ = ["ParseError", "parse_ini"]
__version__ = "0.3.1"
