"""Prince's Fig. 12.1 preset: the solved head gives the book's attention, scaled or not."""

from __future__ import annotations

import numpy as np
import pytest

from txviz.selfattention import prince
from txviz.selfattention import toy as ta


@pytest.mark.parametrize("scaled", [True, False])
def test_solved_head_gives_the_books_attention(scaled: bool):
    x, head = prince.figure_12_1(scaled)
    result = ta.self_attention_head(x, head, scaled)
    assert [f"{w:.2f}" for w in result.weights[0]] == ["0.10", "0.30", "0.60"]
    assert [f"{w:.2f}" for w in result.weights[1]] == ["0.50", "0.20", "0.30"]
    np.testing.assert_allclose(result.weights[:2], prince.TARGET[:2], atol=1e-9)
    # the book's sums, token by token, agree with the matrix form on these weights
    np.testing.assert_allclose(ta.self_attention_loop(x, head, scaled), result.output, atol=1e-9)


def test_only_the_query_weights_are_changed():
    x, head = prince.figure_12_1()
    seeded = ta.toy_heads(prince.CONFIG)[0]
    np.testing.assert_array_equal(x, ta.toy_input(prince.CONFIG))
    for name in ("omega_k", "beta_k", "omega_v", "beta_v"):
        np.testing.assert_array_equal(getattr(head, name), getattr(seeded, name))
    assert not np.allclose(head.omega_q, seeded.omega_q)


def test_scaling_changes_the_query_weights_and_raw_scores_not_the_attention():
    runs = {s: ta.self_attention_head(*prince.figure_12_1(s), s) for s in (True, False)}
    heads = {s: prince.figure_12_1(s)[1] for s in (True, False)}
    np.testing.assert_allclose(runs[True].weights, runs[False].weights, atol=1e-9)
    assert not np.allclose(heads[True].omega_q, heads[False].omega_q)
    assert not np.allclose(runs[True].scores, runs[False].scores)
    # softmax's inputs differ by one constant per row, which softmax ignores
    shift = runs[True].scaled_scores - runs[False].scaled_scores
    np.testing.assert_allclose(shift, shift[:, :1].repeat(3, axis=1), atol=1e-9)


def test_note_says_what_the_caption_and_the_toggle_do():
    note = " ".join(prince.NOTE.split())
    # Prince's caption: "c) The weighting for output sa3[x•] is different again."
    assert "panel (c)" in note and "different again" in note
    assert "does not draw" not in note
    assert "Turning the scaling off re-solves Ω_q and β_q" in note
    assert "attention weights stay the book's" in note and "raw scores Q Kᵀ" in note
