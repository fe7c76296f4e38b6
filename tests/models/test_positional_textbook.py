"""Embedding lookup as a one-hot product, Shaw's relative bias, and MiniLM's 512-position limit."""

from __future__ import annotations

import numpy as np
import pytest

from txviz.positional import lookup, relative
from txviz.positional.encodings import PositionalError


def test_one_hot_product_is_the_embedding_lookup(minilm):
    product = lookup.lookup_as_product(minilm, "the cat sat on the cat")
    ids = minilm.tokenizer("the cat sat on the cat")["input_ids"]
    table = minilm.model.get_input_embeddings().weight.detach().numpy()
    assert product.one_hot.shape == (len(ids), 30522)
    np.testing.assert_array_equal(product.one_hot.sum(axis=1), 1.0)
    np.testing.assert_array_equal(product.one_hot.argmax(axis=1), ids)
    np.testing.assert_allclose(product.product, table[ids], atol=1e-7)
    np.testing.assert_array_equal(product.lookup, table[ids])
    assert product.max_abs_difference < 1e-7
    assert product.used_columns().tolist() == sorted(set(ids))


def test_one_hot_rejects_ids_outside_the_vocabulary():
    with pytest.raises(PositionalError, match="0..4"):
        lookup.one_hot(np.array([0, 5]), 5)


def test_clipped_offsets():
    offsets = relative.clipped_offsets(5, 2)
    assert offsets.shape == (5, 5)
    assert offsets[0].tolist() == [0, 1, 2, 2, 2] and offsets[4].tolist() == [-2, -2, -2, -1, 0]
    assert offsets[4, 0] == -2 and offsets[2, 3] == 1


def test_shaw_bias_by_the_formula():
    rng = np.random.default_rng(0)
    n, d, k = 7, 8, 2
    q, table = rng.normal(size=(n, d)), relative.seeded_table(k, d, 1)
    assert table.shape == (2 * k + 1, d)
    bias = relative.shaw_bias(q, table, k)
    assert bias.shape == (n, n)
    for i in range(n):
        for j in range(n):
            offset = min(max(j - i, -k), k)
            assert bias[i, j] == pytest.approx(q[i] @ table[offset + k] / np.sqrt(d), abs=1e-12)
    with pytest.raises(PositionalError, match="2k \\+ 1"):
        relative.shaw_bias(q, table[:3], k)


def test_shaw_bias_depends_on_the_clipped_offset_only():
    check = relative.seeded_shaw_check(12, 16, 3)
    assert check.max_diagonal_spread < 1e-12
    assert check.by_offset.shape == (23,)
    np.testing.assert_allclose(check.by_offset[:9], check.by_offset[0])  # offsets -11 .. -3 share a_-3
    np.testing.assert_allclose(check.by_offset[-9:], check.by_offset[-1])
    assert len(set(np.round(check.by_offset[8:15], 9))) > 1  # inside ±k the offsets differ


def test_minilm_stops_at_512_positions(minilm):
    assert relative.learned_limit(minilm.model, 512).error == ""
    past = relative.learned_limit(minilm.model, 513)
    assert past.n_learned == 512 and "index out of range" in past.error
    assert "512 position vectors" in past.notice and "cuts longer texts" in past.notice
