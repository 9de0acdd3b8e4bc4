"""textkit: small text-processing helpers."""

from textkit.template import render

__all__ = ["render"]
__version__ = "0.3.1"
