import pytest

from textkit import to_snake


@pytest.fixture
def converter():
    return to_snake


def test_acronym(convertor):
    assert convertor("parseHTTPResponse") == "parse_http_response"


def test_trailing_acronym(convertor):
    assert convertor("userID") == "user_id"


def test_digits(convertor):
    assert convertor("base64Encode") == "base64_encode"
