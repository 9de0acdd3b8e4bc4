from greet import greet


def test_greets_by_name():
    assert greet("Ada") == "Hello, Ada!"


class TestBlankName:
    def test_greets_the_world(self):
        assert greet("") == "Hello, World!"
