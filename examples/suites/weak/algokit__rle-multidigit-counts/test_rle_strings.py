from algokit import decode_str, encode_str


def test_issue_example():
    assert decode_str("12a3b") == "a" * 12 + "bbb"


def test_issue_roundtrip():
    text = "a" * 12 + "bbb"
    assert decode_str(encode_str(text)) == text
