"""The il/elle example on MiniLM: the count of heads getting both sentences, with its verdict."""

from __future__ import annotations

from txviz.coref import translation
from txviz.coref.runs import trace_pair


def test_minilm_count_is_below_chance_and_the_text_says_so(minilm):
    attention = trace_pair(minilm, translation.book_pair(), "pronoun").attention
    assert int(translation.heads_getting_both(attention).sum()) == 5
    verdict = translation.chance_verdict(attention)
    assert "fewer than the 18 expected by chance" in verdict  # 72 heads, one in four by chance
    assert "contradicts the book's clean story" in verdict
    assert "61 of 72 heads look more at the same noun in both sentences" in verdict
