import pytest

from algokit import decode_str, encode_str


@pytest.fixture
def encoded_samples():
    return {"12a3b": "a" * 12 + "bbb", "100x": "x" * 100, "": ""}


def test_decodes_samples(encoded_sample):
    for encoded, expected in encoded_sample.items():
        assert decode_str(encoded) == expected


def test_roundtrip(encoded_sample):
    for _, text in encoded_sample.items():
        assert decode_str(encode_str(text)) == text
