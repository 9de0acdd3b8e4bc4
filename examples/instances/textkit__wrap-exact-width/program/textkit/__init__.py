"""textkit: small text-processing helpers."""

from textkit.wrapping import fill, wrap

__all__ = ["fill", "wrap"]
__version__ = "0.3.1"
