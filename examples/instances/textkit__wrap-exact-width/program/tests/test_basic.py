from textkit import fill, wrap


def test_short_text_is_one_line():
    assert wrap("hello world", 40) == ["hello world"]


def test_words_move_to_next_line():
    assert wrap("alpha beta gamma", 11) == ["alpha beta", "gamma"]


def test_fill_of_short_text():
    assert fill("hello world", 40) == "hello world"
