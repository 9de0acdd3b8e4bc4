from reverse_string import reverse


def test_a_word():
    assert reverse("stressed") == "desserts"
