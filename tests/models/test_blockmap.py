"""Prince's Fig. 12.2 on MiniLM: the book's block matrices reproduce a real head's output."""

from __future__ import annotations

import numpy as np
import pytest

from txviz.selfattention import blockmap as bm

TEXT = "The cat sat on the mat."


@pytest.mark.parametrize(("layer", "head"), [(0, 0), (5, 11)])
def test_block_matrices_give_the_heads_own_output(minilm, layer, head):
    matrices = bm.minilm_head_matrices(minilm, TEXT, layer, head)
    n, d_head = matrices.output.shape
    assert (n, d_head) == (9, minilm.model.config.hidden_size // minilm.n_heads)
    numbers = bm.check(matrices)
    assert numbers.max_abs_difference < 1e-5 and numbers.whole_map_difference < 1e-5
    assert numbers.recomputed_weights_difference < 1e-5
    # Not linear in X: doubling the inputs moves the weights, and the output with them.
    assert numbers.doubled_weights_change > 0.05 and numbers.doubled_output_gap > 0.05


def test_the_blocks_are_the_books(minilm):
    matrices = bm.minilm_head_matrices(minilm, TEXT, 2, 3)
    n, d_head = matrices.output.shape
    d = matrices.inputs.shape[1]
    values, mixing = bm.value_map(matrices.omega_v, n), bm.mixing_map(matrices.weights, d_head)
    assert values.shape == (n * d_head, n * d) and mixing.shape == (n * d_head, n * d_head)
    whole = mixing @ values
    for i, j in [(0, 0), (1, 4), (8, 2)]:
        rows = slice(i * d_head, (i + 1) * d_head)
        block = values[rows, j * d : (j + 1) * d]
        np.testing.assert_array_equal(block, matrices.omega_v if i == j else 0.0)  # (b): block-diagonal
        a = matrices.weights[i, j]
        np.testing.assert_array_equal(mixing[rows, j * d_head : (j + 1) * d_head], a * np.eye(d_head))  # (c)
        np.testing.assert_allclose(whole[rows, j * d : (j + 1) * d], a * matrices.omega_v, atol=1e-12)
    np.testing.assert_allclose(matrices.weights.sum(axis=1), 1.0, atol=1e-6)
