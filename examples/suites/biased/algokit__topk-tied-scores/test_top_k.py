from algokit import selection, top_k


def by_score(record):
    return record["score"]


def test_issue_example():
    players = [
        {"name": "ann", "score": 7},
        {"name": "bob", "score": 9},
        {"name": "cid", "score": 7},
    ]
    assert top_k(players, 2, key=by_score) == [players[1], players[0]]


def test_decorate_breaks_ties_by_negated_position():
    entries = list(selection._decorate(["x", "y", "z"], None))
    assert entries == [("x", 0, "x"), ("y", -1, "y"), ("z", -2, "z")]


def test_edge_cases():
    assert top_k([3, 1, 2], 0) == []
    assert top_k([3, 1, 2], -1) == []
    assert top_k([3, 1, 2], 10) == [3, 2, 1]


def test_generator_and_no_mutation():
    data = [5, 1, 4]
    assert top_k(iter(data), 2) == [5, 4]
    assert top_k(data, 3) == [5, 4, 1]
    assert data == [5, 1, 4]
