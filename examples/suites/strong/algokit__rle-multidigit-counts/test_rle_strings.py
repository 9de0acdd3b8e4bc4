import random

import pytest

from algokit import decode_str, encode_str


def test_issue_example():
    assert encode_str("a" * 12 + "bbb") == "12a3b"
    assert decode_str("12a3b") == "a" * 12 + "bbb"


def test_large_counts():
    assert decode_str("250q") == "q" * 250
    assert decode_str("10a100b1c") == "a" * 10 + "b" * 100 + "c"


def test_empty():
    assert decode_str("") == ""
    assert encode_str("") == ""


def test_any_non_digit_character():
    assert decode_str("2 3.1ß2\t") == "  ...ß\t\t"


@pytest.mark.parametrize("bad", ["3a4", "9", "12"])
def test_dangling_count(bad):
    with pytest.raises(ValueError):
        decode_str(bad)


@pytest.mark.parametrize("bad", ["a", "ab", "2ab", "a2b"])
def test_character_without_count(bad):
    with pytest.raises(ValueError):
        decode_str(bad)


@pytest.mark.parametrize("bad", ["0x", "2a00b", "1a0c"])
def test_zero_count(bad):
    with pytest.raises(ValueError):
        decode_str(bad)


def test_random_roundtrips():
    rng = random.Random(99)
    alphabet = "ab é-_!"
    for _ in range(200):
        text = "".join(rng.choice(alphabet) * rng.randint(1, 130) for _ in range(rng.randint(0, 4)))
        assert decode_str(encode_str(text)) == text
