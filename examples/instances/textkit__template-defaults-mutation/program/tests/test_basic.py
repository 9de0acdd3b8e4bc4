from textkit import render


def test_simple_substitution():
    assert render("Hello, ${name}!", {"name": "world"}) == "Hello, world!"


def test_default_value_is_used():
    assert render("${greeting}, ${name}", {"name": "Ann"}, defaults={"greeting": "Hi"}) == "Hi, Ann"
