from textkit import fill, wrap


def test_issue_example():
    assert wrap("the quick brown fox", 9) == ["the quick", "brown fox"]


def test_issue_example_fill():
    assert fill("the quick brown fox", 9) == "the quick\nbrown fox"
