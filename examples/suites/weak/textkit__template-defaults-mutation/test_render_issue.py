from textkit import render


def test_issue_example_context_not_modified():
    ctx = {"user": "ann"}
    out = render("Hi ${user}, welcome to ${site}", ctx, defaults={"site": "example.org"})
    assert out == "Hi ann, welcome to example.org"
    assert ctx == {"user": "ann"}
