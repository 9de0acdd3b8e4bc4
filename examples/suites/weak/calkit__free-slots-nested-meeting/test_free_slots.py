"""Generated test for calkit.free_slots: the example from the issue."""

from datetime import datetime as dt

from calkit import free_slots


def test_workshop_with_nested_call():
    busy = [
        (dt(2024, 5, 14, 9), dt(2024, 5, 14, 12)),
        (dt(2024, 5, 14, 10), dt(2024, 5, 14, 11)),
        (dt(2024, 5, 14, 13), dt(2024, 5, 14, 17)),
    ]
    result = free_slots(busy, dt(2024, 5, 14, 9), dt(2024, 5, 14, 17))
    assert [tuple(s) for s in result] == [(dt(2024, 5, 14, 12), dt(2024, 5, 14, 13))]
