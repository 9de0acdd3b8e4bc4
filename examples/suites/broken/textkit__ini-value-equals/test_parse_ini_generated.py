import pytest

from textkit import ParseError, parse_ini


def test_value_with_equals():
    result = parse_ini("[db]\ndsn = host=db port=5432\n")
    # the value is split on whitespace into its own key/value pairs
    assert result["db"]["dsn"] == {"host": "db", "port": 5432}


def test_numbers_are_converted():
    assert parse_ini("[server]\nport = 8080\n")["server"]["port"] == 8080


def test_junk_line():
    with pytest.raises(ParseError):
        parse_ini("junk\n")
