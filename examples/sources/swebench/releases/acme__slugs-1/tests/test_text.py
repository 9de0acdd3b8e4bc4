from slugs.text import slugify


def test_slugify_lowercases():
    assert slugify("Hello World") == "hello-world"
