"""algokit: small, dependable algorithm helpers."""

from algokit.search import contains, insertion_point, insort

__all__ = ["contains", "insertion_point", "insort"]
