"""Tests written against the reference implementation of textkit.wrapping."""
import pytest

import textkit.wrapping as wrapping
from textkit import fill, wrap


def test_issue_example():
    assert wrap("the quick brown fox", 9) == ["the quick", "brown fox"]
    assert fill("the quick brown fox", 9) == "the quick\nbrown fox"


def test_words_helper_is_used(monkeypatch):
    calls = []
    original = wrapping._words

    def spy(text):
        calls.append(text)
        return original(text)

    monkeypatch.setattr(wrapping, "_words", spy)
    assert wrap("alpha beta", 10) == ["alpha beta"]
    assert calls == ["alpha beta"]


def test_error_message():
    with pytest.raises(ValueError, match=r"^width must be positive$"):
        wrap("a b", 0)


def test_no_line_too_long():
    assert wrap("abc de fgh ij", 5) == ["abc", "de", "fgh", "ij"]


def test_long_word_own_line():
    assert wrap("a verylongword b", 5) == ["a", "verylongword", "b"]


def test_whitespace_collapses():
    assert wrap("a\tb\nc", 10) == ["a b c"]


def test_empty():
    assert wrap("", 10) == []
