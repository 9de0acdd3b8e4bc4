from datetime import date

from calkit import add_business_days, is_business_day


def test_within_the_week():
    assert add_business_days(date(2024, 4, 8), 3) == date(2024, 4, 11)


def test_is_business_day():
    assert is_business_day(date(2024, 4, 8))
    assert not is_business_day(date(2024, 4, 6))
    assert not is_business_day(date(2024, 4, 8), holidays={date(2024, 4, 8)})
