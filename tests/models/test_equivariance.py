"""Permutation equivariance: shuffled inputs give shuffled outputs, until positions are added."""

from __future__ import annotations

import numpy as np
import pytest

from txviz.selfattention import equivariance as eq
from txviz.selfattention import toy as ta


@pytest.mark.parametrize("seed", [0, 1, 5])
def test_toy_is_equivariant_without_positions(seed):
    config = ta.ToyConfig(6, 4, 2, seed)
    check = eq.toy_check(config, eq.seeded_permutation(6, seed + 3), positions=False)
    assert check.max_abs_difference < 1e-6
    # and not trivially: the shuffled outputs really moved
    assert np.abs(check.shuffled - check.original).max() > 1e-2


def test_positions_break_equivariance():
    check = eq.toy_check(ta.ToyConfig(6, 4, 2, 0), eq.seeded_permutation(6, 0), positions=True)
    assert check.max_abs_difference > 1e-2


def test_loop_form_agrees_on_shuffled_rows():
    config = ta.ToyConfig(5, 4, 1, 2)
    x, head = ta.toy_input(config), ta.toy_heads(config)[0]
    perm = eq.seeded_permutation(5, 7)
    np.testing.assert_allclose(
        ta.self_attention_loop(x[perm], head), ta.self_attention_loop(x, head)[perm], atol=1e-6
    )


def test_bad_permutation_is_refused():
    with pytest.raises(eq.EquivarianceError, match="not a permutation"):
        eq.toy_check(ta.ToyConfig(3, 2, 1, 0), np.array([0, 0, 1]), positions=False)


def test_minilm_equivariant_without_position_order(minilm):
    for mode in ("none", "carried"):
        check, tokens = eq.model_check(minilm, "the cat sat on the mat", 0, mode)
        assert len(tokens) == 8 and check.max_abs_difference < 1e-4
    check, _ = eq.model_check(minilm, "the cat sat on the mat", 0, "slots")
    assert check.max_abs_difference > 0.1


def test_minilm_empty_text(minilm):
    with pytest.raises(eq.EquivarianceError, match="empty"):
        eq.model_check(minilm, "  ", 0, "none")
