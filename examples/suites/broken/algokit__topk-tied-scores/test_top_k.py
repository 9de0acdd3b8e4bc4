from algokit.heaps import top_k


def test_issue_example():
    players = [
        {"name": "ann", "score": 7},
        {"name": "bob", "score": 9},
        {"name": "cid", "score": 7},
    ]
    result = top_k(players, 2, key=lambda p: p["score"])
    assert [p["name"] for p in result] == ["bob", "ann"]


def test_negative_k():
    assert top_k([1, 2, 3], -1) == []
