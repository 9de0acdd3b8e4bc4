from leap import leap_year


def test_divisible_by_4_not_by_100():
    assert leap_year(1996) is True


def test_divisible_by_100_not_by_400():
    assert leap_year(1900) is False
