from textkit import render


def test_defaults_do_not_leak():
    ctx = {"user": "ann"}
    render("Hi ${user}, welcome to ${site}", ctx, {"site": "example.org"})
    assert ctx == {"user": "ann"}


def test_keyword_context():
    assert render("Hi ${user}", user="ann") == "Hi ann"


def test_escape():
    assert render("$${user}", {"user": "ann"}) == "$ann"
