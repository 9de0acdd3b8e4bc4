"""algokit: small, dependable algorithm helpers."""

from algokit.graphs import CycleError, toposort

__all__ = ["CycleError", "toposort"]
