import inspect

import pytest

from algokit import decode_str, encode_str, rle


def test_issue_example():
    assert decode_str("12a3b") == "a" * 12 + "bbb"
    assert decode_str("100x") == "x" * 100


def test_roundtrip_with_punctuation_and_empty():
    assert decode_str(encode_str("  ééé--!")) == "  ééé--!"
    assert decode_str("") == ""


def test_error_messages():
    with pytest.raises(ValueError, match=r"^expected a count at position 0, got 'a'$"):
        decode_str("ab")
    with pytest.raises(ValueError, match=r"^count at end of input has no character$"):
        decode_str("3a4")
    with pytest.raises(ValueError, match=r"^zero count at position 2$"):
        decode_str("3a0b")


def test_scans_digits_with_isdigit_loop():
    source = inspect.getsource(rle.decode_str)
    assert "while i < len(encoded)" in source
    assert ".isdigit()" in source
