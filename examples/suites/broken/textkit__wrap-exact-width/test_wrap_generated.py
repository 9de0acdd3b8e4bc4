import pytest

from textkit.wrapping import shorten, wrap


def test_exact_width_line():
    assert wrap("the quick brown fox", 9) == ["the quick", "brown fox"]


def test_shorten_uses_wrap():
    assert shorten("the quick brown fox", 9) == "the quick"


def test_invalid_width():
    with pytest.raises(ValueError):
        wrap("x", 0)
