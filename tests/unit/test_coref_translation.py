"""The il/elle example: the French each sentence needs, and which pronoun a head's attention points to."""

from __future__ import annotations

import numpy as np

from txviz.coref import translation
from txviz.coref.spans import PairAttention


def attention(a: list[float], b: list[float]) -> PairAttention:
    """Two layers x one head: layer 0 gets both right, layer 1 looks at the animal in both."""
    to_a = np.array([[a], [[0.6, 0.1]]])
    to_b = np.array([[b], [[0.5, 0.2]]])
    return PairAttention(to_a, to_b, ("animal", "street"), answer_a=0, answer_b=1)


def test_the_book_pair_is_in_the_set_with_its_answers():
    pair = translation.book_pair()
    assert pair.candidate_texts == ("animal", "street")
    assert (pair.answer_a, pair.answer_b) == (0, 1)  # tired: the animal; wide: the street


def test_rows_give_il_for_the_animal_and_elle_for_the_street():
    pair = translation.book_pair()
    rows = translation.rows(pair, attention([0.3, 0.1], [0.1, 0.4]), (0, 0))
    assert [r["French needs"] for r in rows] == ["il (l'animal, masculine)", "elle (la rue, feminine)"]
    assert [r["the head points to"] for r in rows] == ["il", "elle"]
    assert "qu'il" in rows[0]["hand translation"] and "qu'elle" in rows[1]["hand translation"]
    assert rows[1]["head → street"] == 0.4
    wrong = translation.rows(pair, attention([0.3, 0.1], [0.1, 0.4]), (1, 0))
    assert [r["the head points to"] for r in wrong] == ["il", "il"]


def test_heads_getting_both_counts_ties_as_misses():
    both = translation.heads_getting_both(attention([0.3, 0.1], [0.1, 0.4]))
    np.testing.assert_array_equal(both, [[True], [False]])
    assert translation.head_gets_both(attention([0.3, 0.1], [0.1, 0.4]), (0, 0))
    assert not translation.heads_getting_both(attention([0.2, 0.2], [0.1, 0.4]))[0, 0]
