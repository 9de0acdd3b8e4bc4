"""textkit: small text-processing helpers."""

from textkit.case import to_camel, to_snake

__all__ = ["to_camel", "to_snake"]
__version__ = "0.3.1"
