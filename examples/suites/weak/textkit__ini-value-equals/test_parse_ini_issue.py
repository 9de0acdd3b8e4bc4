from textkit import parse_ini


def test_value_with_equals_from_issue():
    text = "[db]\nurl = postgres://app@db/app?sslmode=require\n"
    assert parse_ini(text)["db"] == {"url": "postgres://app@db/app?sslmode=require"}
