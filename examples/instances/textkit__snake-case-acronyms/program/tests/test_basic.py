from textkit import to_camel, to_snake


def test_to_snake_simple():
    assert to_snake("parseJsonResponse") == "parse_json_response"
    assert to_snake("RowCount") == "row_count"


def test_to_camel_simple():
    assert to_camel("parse_json_response") == "parseJsonResponse"
    assert to_camel("row_count", upper_first=True) == "RowCount"
