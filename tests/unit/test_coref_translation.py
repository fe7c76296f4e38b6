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


def heads(right: int, total: int = 72) -> PairAttention:
    """`total` heads in one layer: the first `right` get both sentences, the rest look at the animal in both."""
    to_a = np.tile([0.6, 0.1], (1, total, 1))
    to_b = np.tile([0.5, 0.2], (1, total, 1))
    to_b[0, :right] = [0.1, 0.5]
    return PairAttention(to_a, to_b, ("animal", "street"), answer_a=0, answer_b=1)


def test_chance_verdict_compares_the_count_with_one_in_four():
    below = translation.chance_verdict(heads(5))
    assert "fewer than the 18 expected by chance" in below and "contradicts the book's clean story" in below
    assert "67 of 72 heads look more at the same noun in both sentences" in below
    assert "about the 18 expected by chance" in translation.chance_verdict(heads(18))
    above = translation.chance_verdict(heads(40))
    assert "more than the 18 expected by chance" in above and "contradicts" not in above
