from algokit import decode, decode_str, encode, encode_str


def test_encode_runs():
    assert encode("aaab") == [("a", 3), ("b", 1)]
    assert decode([("a", 3), ("b", 1)]) == list("aaab")


def test_string_roundtrip():
    assert encode_str("aaabcc") == "3a1b2c"
    assert decode_str("3a1b2c") == "aaabcc"
