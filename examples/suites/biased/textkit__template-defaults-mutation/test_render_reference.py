"""Tests written against the reference implementation of textkit.template."""
import pytest

from textkit import render


def test_issue_example():
    ctx = {"user": "ann"}
    out = render("Hi ${user}, welcome to ${site}", ctx, defaults={"site": "example.org"})
    assert out == "Hi ann, welcome to example.org"
    assert ctx == {"user": "ann"}


def test_spaces_inside_braces_are_ignored():
    assert render("${ user }", {"user": "ann"}) == "ann"


def test_unterminated_placeholder_message():
    with pytest.raises(ValueError, match=r"^unterminated placeholder at position 3$"):
        render("Hi ${user", {"user": "ann"})


def test_missing_key_error_args():
    with pytest.raises(KeyError) as info:
        render("${who}", {})
    assert info.value.args == ("who",)


def test_precedence_and_defaults_untouched():
    defaults = {"lang": "en"}
    assert render("${lang}", {"lang": "fr"}, defaults=defaults) == "fr"
    assert defaults == {"lang": "en"}


def test_dollars():
    assert render("$$5 and $5", {}) == "$5 and $5"
