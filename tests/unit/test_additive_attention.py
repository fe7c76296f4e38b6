"""Additive (Bahdanau) attention scores checked against w^T tanh(W q + U k), one pair at a time."""

from __future__ import annotations

import numpy as np
import pytest

from txviz.selfattention import additive
from txviz.selfattention import toy as ta


def toy(seed: int = 0, hidden: int = 5):
    config = ta.ToyConfig(4, 6, 1, seed)
    head = ta.self_attention_head(ta.toy_input(config), ta.toy_heads(config)[0])
    return head, additive.seeded_weights(config.d_head, hidden, seed)


@pytest.mark.parametrize("seed", [0, 3])
def test_scores_match_the_formula_pair_by_pair(seed):
    head, weights = toy(seed)
    result = additive.additive_attention(head, weights)
    for n, q in enumerate(head.queries):
        for m, k in enumerate(head.keys):
            expected = weights.w_out @ np.tanh(weights.w_query @ q + weights.w_key @ k)
            assert result.scores[n, m] == pytest.approx(expected, abs=1e-12)
    np.testing.assert_allclose(result.weights.sum(axis=1), 1.0)
    np.testing.assert_allclose(result.output, result.weights @ head.values)
    np.testing.assert_allclose(result.dot_weights, head.weights)
    assert np.abs(result.weights - result.dot_weights).max() > 1e-3  # two different scorings


def test_scores_are_bounded_by_the_norm_of_w():
    head, weights = toy(1, hidden=7)
    result = additive.additive_attention(head, weights)
    assert np.abs(result.scores).max() <= np.abs(weights.w_out).sum() + 1e-12
    assert result.hidden.shape == (4, 4, 7)


def test_bad_hidden_size():
    with pytest.raises(ta.ToyAttentionError, match="hidden size"):
        additive.seeded_weights(4, 0)


def test_score_rows():
    head, weights = toy()
    result = additive.additive_attention(head, weights)
    rows = additive.score_rows(result, head, 2, ["a", "b", "c", "d"])
    assert sum(r["additive weight"] for r in rows) == pytest.approx(1.0)
    assert rows[1]["q·k / √d"] == pytest.approx(head.scaled_scores[2, 1])
