from textkit import to_snake


def test_issue_example():
    assert to_snake("parseHTTPResponse") == "parse_http_response"
