from datetime import date

from calkit import expand, next_occurrence


def test_weekly_series():
    assert list(expand(date(2024, 1, 1), 7, date(2024, 1, 20))) == [
        date(2024, 1, 1), date(2024, 1, 8), date(2024, 1, 15)]


def test_next_occurrence():
    assert next_occurrence(date(2024, 1, 1), 7, date(2024, 1, 8)) == date(2024, 1, 15)
    assert next_occurrence(date(2024, 1, 1), 7, date(2023, 12, 1)) == date(2024, 1, 1)
