"""Generated tests for calkit.add_business_days."""

from datetime import date, timedelta

from calkit import add_business_days

THURSDAY = date(2024, 3, 28)
GOOD_FRIDAY = THURSDAY + timedelta(days=1)


def test_good_friday_rolls_to_monday():
    # Friday + the two weekend days -> Monday
    monday = GOOD_FRIDAY + timedelta(days=2)
    assert add_business_days(THURSDAY, 1, holidays={GOOD_FRIDAY}) == monday


def test_week_later():
    # five business days after Thursday is the next Thursday
    assert add_business_days(THURSDAY, 5) == THURSDAY + timedelta(days=5)


def test_zero():
    assert add_business_days(THURSDAY, 0) == THURSDAY
