"""Generated test for calkit.add_business_days: the example from the issue."""

from datetime import date

from calkit import add_business_days


def test_good_friday_gives_monday():
    assert add_business_days(date(2024, 3, 28), 1, holidays={date(2024, 3, 29)}) == date(2024, 4, 1)
