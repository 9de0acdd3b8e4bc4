"""Behavioural tests for textkit.parse_ini (issue: values containing '=')."""
import pytest

from textkit import ParseError, parse_ini


@pytest.mark.parametrize(
    "line, key, value",
    [
        ("url = postgres://app@db/app?sslmode=require", "url", "postgres://app@db/app?sslmode=require"),
        ("expr = a == b", "expr", "a == b"),
        ("padding = YWJj==", "padding", "YWJj=="),
        ("empty_after = x=", "empty_after", "x="),
        ("equals==", "equals", "="),
    ],
)
def test_value_keeps_everything_after_first_equals(line, key, value):
    assert parse_ini("[s]\n" + line + "\n")["s"] == {key: value}


def test_strips_only_outer_whitespace():
    result = parse_ini("\t key one \t=\t two  words \n")
    assert result[""] == {"key one": "two  words"}


def test_empty_value_allowed():
    assert parse_ini("[s]\nk =\n")["s"] == {"k": ""}


def test_comments_and_blank_lines():
    text = "; leading\n#hash\n\n   ;indented\n[s]\n\n# more\na = b\n"
    assert parse_ini(text)["s"] == {"a": "b"}


@pytest.mark.parametrize("value", ["#000", "abc # not a comment", "a;b", "x#y"])
def test_hash_and_semicolon_inside_value_are_kept(value):
    assert parse_ini(f"[s]\nv = {value}\n")["s"] == {"v": value}


@pytest.mark.parametrize("key", ["a.b.c", "max-size", "x:y", "Mixed.Case-Key"])
def test_unusual_keys(key):
    assert parse_ini(f"[s]\n{key} = 1\n")["s"] == {key: "1"}


def test_top_level_keys_and_sections():
    result = parse_ini("a = 1\nb = 2\n[one]\nc = 3\n[two]\nd = 4\n")
    assert result[""] == {"a": "1", "b": "2"}
    assert result["one"] == {"c": "3"}
    assert result["two"] == {"d": "4"}


def test_repeated_section_merges_and_later_key_wins():
    result = parse_ini("[a]\nx = 1\ny = 1\n[b]\nq = 0\n[a]\ny = 2\n")
    assert result["a"] == {"x": "1", "y": "2"}
    assert result["b"] == {"q": "0"}


@pytest.mark.parametrize(
    "text, lineno",
    [("junk\n", 1), ("[a]\nk = v\n\nno equals here\n", 4), ("[a]\n# c\n[b]\nbad\n", 4)],
)
def test_bad_line_reports_line_number(text, lineno):
    with pytest.raises(ParseError) as info:
        parse_ini(text)
    assert str(lineno) in str(info.value)


def test_parse_error_is_value_error():
    with pytest.raises(ValueError):
        parse_ini("nope\n")
