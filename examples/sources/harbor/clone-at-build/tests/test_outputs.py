from widgets import parse


def test_trailing_comma():
    assert parse("a,b,") == ["a", "b"]
