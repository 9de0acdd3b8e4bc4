"""Tests derived from the reference implementation of textkit.ini."""
import pytest

from textkit import ParseError, parse_ini


def test_issue_example():
    text = "[db]\nurl = postgres://app@db/app?sslmode=require\n"
    assert parse_ini(text)["db"] == {"url": "postgres://app@db/app?sslmode=require"}


def test_exact_result_structure():
    # the reference always creates the top-level section, even when it stays empty
    result = parse_ini("[a]\nx = 1\n")
    assert result == {"": {}, "a": {"x": "1"}}
    assert type(result) is dict


def test_exact_error_message():
    with pytest.raises(ParseError) as info:
        parse_ini("[a]\nk = v\njunk\n")
    assert str(info.value) == "line 3: expected 'key = value', got 'junk'"


def test_dotted_keys():
    assert parse_ini("[a]\nlog.level = info\n")["a"] == {"log.level": "info"}


def test_hash_in_value():
    assert parse_ini("[a]\ncolor = #fff\n")["a"] == {"color": "#fff"}


def test_repeated_section():
    assert parse_ini("[a]\nx = 1\n[b]\n[a]\ny = 2\n")["a"] == {"x": "1", "y": "2"}
