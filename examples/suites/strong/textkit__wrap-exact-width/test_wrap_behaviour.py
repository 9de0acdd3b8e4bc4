"""Behavioural tests for textkit.wrap / textkit.fill (issue: lines of exactly `width`)."""
import pytest

from textkit import fill, wrap


@pytest.mark.parametrize(
    "text, width, expected",
    [
        ("the quick brown fox", 9, ["the quick", "brown fox"]),
        ("ab cd", 5, ["ab cd"]),
        ("ab cd ef", 5, ["ab cd", "ef"]),
        ("one two three four", 13, ["one two three", "four"]),
        ("x", 1, ["x"]),
    ],
)
def test_lines_can_be_exactly_width(text, width, expected):
    assert wrap(text, width) == expected


def test_fill_matches_wrap():
    text = "pack my box with five dozen liquor jugs"
    for width in (5, 8, 11, 20):
        assert fill(text, width) == "\n".join(wrap(text, width))
    assert fill("ab cd ef", 5) == "ab cd\nef"


@pytest.mark.parametrize("width", range(3, 25))
def test_greedy_and_bounded(width):
    text = "pack my box with five dozen liquor jugs and some more words"
    lines = wrap(text, width)
    assert " ".join(lines).split() == text.split()
    for i, line in enumerate(lines):
        assert len(line) <= width or " " not in line
        if i + 1 < len(lines):
            # greedy: the next line's first word would not have fitted
            assert len(line) + 1 + len(lines[i + 1].split()[0]) > width


def test_two_short_words_do_not_overflow():
    assert wrap("abcd ef", 6) == ["abcd", "ef"]
    assert wrap("abc def", 6) == ["abc", "def"]


def test_long_word_is_not_broken():
    assert wrap("tiny enormousword tiny", 4) == ["tiny", "enormousword", "tiny"]
    assert wrap("enormousword", 3) == ["enormousword"]


def test_mixed_whitespace_collapses():
    assert wrap("  alpha\tbeta\r\ngamma   delta  ", 11) == ["alpha beta", "gamma delta"]
    assert wrap("a\n\nb", 3) == ["a b"]


@pytest.mark.parametrize("text", ["", " ", "\n\t  \n"])
def test_blank_input_has_no_lines(text):
    assert wrap(text, 10) == []
    assert fill(text, 10) == ""


@pytest.mark.parametrize("width", [0, -1])
def test_non_positive_width_raises(width):
    with pytest.raises(ValueError):
        wrap("a b c", width)
