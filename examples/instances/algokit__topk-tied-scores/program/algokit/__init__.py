"""algokit: small, dependable algorithm helpers."""

from algokit.selection import largest, top_k

__all__ = ["largest", "top_k"]
