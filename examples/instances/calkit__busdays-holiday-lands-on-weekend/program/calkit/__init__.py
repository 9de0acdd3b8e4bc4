"""calkit: small calendar and scheduling helpers."""

from calkit.busdays import add_business_days, is_business_day

__all__ = ["add_business_days", "is_business_day"]
