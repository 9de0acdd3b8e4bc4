from textkit import parse_ini


def test_simple_file():
    text = "name = demo\n\n[server]\nhost = localhost\nport = 8080\n"
    result = parse_ini(text)
    assert result[""] == {"name": "demo"}
    assert result["server"] == {"host": "localhost", "port": "8080"}


def test_comment_lines_are_skipped():
    result = parse_ini("# settings\n[a]\n; note\nx = 1\n")
    assert result["a"] == {"x": "1"}
