"""calkit: small calendar and scheduling helpers."""

from calkit.slots import free_slots, is_free

__all__ = ["free_slots", "is_free"]
