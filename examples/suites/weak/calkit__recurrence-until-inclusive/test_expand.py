"""Generated test for calkit.expand: the example from the issue."""

from datetime import date

from calkit import expand


def test_weekly_retro_includes_last_friday():
    result = expand(date(2024, 3, 1), 7, date(2024, 3, 29))
    assert list(result) == [date(2024, 3, 1), date(2024, 3, 8), date(2024, 3, 15), date(2024, 3, 22), date(2024, 3, 29)]
