"""Behavioural tests for textkit.to_snake (issue: acronyms split into letters)."""
import pytest

from textkit import to_camel, to_snake


@pytest.mark.parametrize(
    "name, expected",
    [
        ("parseHTTPResponse", "parse_http_response"),
        ("getJSONData", "get_json_data"),
        ("simpleXMLParser", "simple_xml_parser"),
        ("aBCDef", "a_bc_def"),
    ],
)
def test_acronym_before_word(name, expected):
    assert to_snake(name) == expected


@pytest.mark.parametrize(
    "name, expected",
    [
        ("userID", "user_id"),
        ("requestURL", "request_url"),
        ("toHTML", "to_html"),
        ("getX", "get_x"),
        ("pointXY", "point_xy"),
    ],
)
def test_capitals_at_end(name, expected):
    assert to_snake(name) == expected


@pytest.mark.parametrize(
    "name, expected",
    [
        ("base64Encode", "base64_encode"),
        ("md5Hash", "md5_hash"),
        ("ipv4Address", "ipv4_address"),
        ("level2", "level2"),
    ],
)
def test_digits_attach_to_previous_word(name, expected):
    assert to_snake(name) == expected


@pytest.mark.parametrize(
    "name, expected",
    [
        ("row_Count", "row_count"),
        ("a_B", "a_b"),
        ("snake_Case_Name", "snake_case_name"),
    ],
)
def test_no_double_underscores(name, expected):
    assert to_snake(name) == expected


@pytest.mark.parametrize(
    "name, expected",
    [("RowCount", "row_count"), ("A", "a"), ("Name", "name"), ("HttpServer", "http_server")],
)
def test_no_leading_underscore(name, expected):
    assert to_snake(name) == expected


@pytest.mark.parametrize("name", ["", "x", "plain", "already_snake_case"])
def test_snake_case_unchanged(name):
    assert to_snake(name) == name


def test_round_trip_without_acronyms():
    for name in ["parseJsonResponse", "rowCount", "value"]:
        assert to_camel(to_snake(name)) == name
