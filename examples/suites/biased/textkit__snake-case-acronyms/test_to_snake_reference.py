"""Tests written against the reference implementation of textkit.case."""
from textkit import case, to_snake


def test_issue_examples():
    assert to_snake("parseHTTPResponse") == "parse_http_response"
    assert to_snake("userID") == "user_id"


def test_starts_word_helper():
    name = "parseHTTPResponse"
    starts = [i for i in range(1, len(name)) if name[i].isupper() and case._starts_word(name, i)]
    assert starts == [5, 9]


def test_starts_word_after_underscore():
    assert case._starts_word("my_Value", 3) is False


def test_digits():
    assert to_snake("base64Encode") == "base64_encode"


def test_underscores():
    assert to_snake("my_Value") == "my_value"


def test_leading_capital():
    assert to_snake("ParseResult") == "parse_result"
