"""Behavioural tests for textkit.render (issue: defaults written into the caller's context)."""
import copy
from collections import OrderedDict
from types import MappingProxyType

import pytest

from textkit import render


def test_context_untouched_across_calls():
    ctx = {"user": "ann"}
    before = copy.deepcopy(ctx)
    first = render("Hi ${user}, welcome to ${site}", ctx, defaults={"site": "example.org"})
    second = render("Hi ${user}, welcome to ${site}", ctx, defaults={"site": "other.net"})
    assert first == "Hi ann, welcome to example.org"
    assert second == "Hi ann, welcome to other.net"
    assert ctx == before


def test_defaults_untouched():
    defaults = {"a": "1", "b": "2"}
    render("${a}${b}${c}", {"b": "x", "c": "y"}, defaults=defaults)
    assert defaults == {"a": "1", "b": "2"}


@pytest.mark.parametrize("wrap", [MappingProxyType, OrderedDict])
def test_other_mapping_types_as_context(wrap):
    ctx = wrap({"user": "ann"})
    assert render("${user}:${role}", ctx, defaults={"role": "admin"}) == "ann:admin"


def test_precedence():
    assert render("${x}${y}", {"x": "ctx"}, defaults={"x": "def", "y": "!"}) == "ctx!"
    assert render("${x}", {"x": ""}, defaults={"x": "def"}) == ""


def test_no_defaults():
    assert render("${a}-${b}", {"a": 1, "b": 2.5}) == "1-2.5"
    assert render("${a}", {"a": "v"}, defaults=None) == "v"
    assert render("${a}", {"a": "v"}, defaults={}) == "v"


@pytest.mark.parametrize("defaults", [None, {}, {"other": 1}])
def test_missing_placeholder(defaults):
    with pytest.raises(KeyError) as info:
        render("x ${missing_name} y", {"present": 1}, defaults=defaults)
    assert "missing_name" in str(info.value)


@pytest.mark.parametrize(
    "template, expected",
    [("$$", "$"), ("a$$b", "a$b"), ("$$$$", "$$"), ("$${v}", "${v}"), ("$$${v}", "$V")],
)
def test_escapes(template, expected):
    assert render(template, {"v": "V"}) == expected


@pytest.mark.parametrize("template", ["$", "a $ b", "$5.00", "end$", "$x"])
def test_lone_dollar_copied(template):
    assert render(template, {"x": "NO"}) == template
