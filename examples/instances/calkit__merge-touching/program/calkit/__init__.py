"""calkit: small calendar and scheduling helpers."""

from calkit.ranges import merge_ranges, total_busy

__all__ = ["merge_ranges", "total_busy"]
