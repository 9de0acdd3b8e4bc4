"""calkit: small calendar and scheduling helpers."""

from calkit.recurrence import expand, next_occurrence

__all__ = ["expand", "next_occurrence"]
