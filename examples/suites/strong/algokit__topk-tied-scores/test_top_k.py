import random

from algokit import largest, top_k


def by_score(record):
    return record["score"]


PLAYERS = [
    {"name": "ann", "score": 7},
    {"name": "bob", "score": 9},
    {"name": "cid", "score": 7},
]


def test_issue_example():
    assert top_k(PLAYERS, 2, key=by_score) == [PLAYERS[1], PLAYERS[0]]


def test_all_tied_records_returned_without_error():
    records = [{"id": i, "score": 1} for i in range(5)]
    result = top_k(records, 5, key=by_score)
    assert sorted(r["id"] for r in result) == [0, 1, 2, 3, 4]


def test_earliest_tied_items_survive_the_cut():
    records = [{"id": i, "score": s} for i, s in enumerate([2, 4, 2, 2, 4, 1])]
    result = top_k(records, 3, key=by_score)
    assert [r["score"] for r in result] == [4, 4, 2]
    assert {r["id"] for r in result} == {1, 4, 0}


def test_zero_and_negative_k():
    assert top_k([1, 2, 3], 0) == []
    assert top_k([1, 2, 3], -2) == []


def test_fewer_items_than_k():
    assert top_k([2, 9, 4], 5) == [9, 4, 2]
    assert top_k([], 1) == []
    assert largest([], default="none") == "none"


def test_generator_input():
    assert top_k((x % 5 for x in range(12)), 4) == [4, 4, 3, 3]


def test_caller_list_untouched():
    data = [3, 8, 1, 8]
    snapshot = list(data)
    top_k(data, 3)
    assert data == snapshot


def test_returns_a_list_with_duplicates():
    result = top_k([1, 1, 1], 2)
    assert isinstance(result, list)
    assert result == [1, 1]


def test_matches_stable_sort_on_random_data():
    rng = random.Random(7)
    for _ in range(200):
        records = [{"id": i, "score": rng.randint(0, 4)} for i in range(rng.randint(0, 9))]
        k = rng.randint(-1, 10)
        expected = sorted(records, key=by_score, reverse=True)[: max(k, 0)]
        result = top_k(iter(records), k, key=by_score)
        assert [r["score"] for r in result] == [r["score"] for r in expected]
        assert sorted(r["id"] for r in result) == sorted(r["id"] for r in expected)
