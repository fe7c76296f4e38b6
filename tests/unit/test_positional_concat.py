"""Adding X and P in disjoint dimensions is concatenating them, exactly."""

from __future__ import annotations

import numpy as np
import pytest

from txviz.positional import concat
from txviz.positional import encodings as pe


def test_disjoint_sum_is_the_concatenation_bit_for_bit():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, 10)).astype(np.float32)
    p = pe.sinusoidal_encoding(6, 4)
    parts = concat.disjoint_sum(x, p)
    np.testing.assert_array_equal(parts.added, np.hstack([x[:, :6], p]))
    assert parts.max_abs_difference == 0.0 and parts.max_abs_cross == 0.0
    # Without the zeroing the sum mixes: the same X and P added in the same K columns have cross terms.
    assert np.abs(pe.added_vs_concatenated(x[:, 6:], p).cross).max() > 0.1
    # The similarity splits into content and position alone: (X'+P')(X'+P')^T = X'X'^T + P P^T.
    gram = parts.added @ parts.added.T
    np.testing.assert_allclose(gram, x[:, :6] @ x[:, :6].T + p @ p.T, rtol=1e-5, atol=1e-5)
    assert parts.kept == pytest.approx((x[:, :6] ** 2).sum() / (x**2).sum())


def test_one_hot_positions_are_unit_vectors_and_need_k_at_least_n():
    p = concat.positions(concat.SOURCES[1], 3, 5)
    np.testing.assert_array_equal(p, [[1, 0, 0, 0, 0], [0, 1, 0, 0, 0], [0, 0, 1, 0, 0]])
    parts = concat.disjoint_sum(np.ones((3, 8)), p)
    np.testing.assert_array_equal(parts.added[:, 3:], p)
    np.testing.assert_array_equal(parts.p_part @ parts.p_part.T, np.eye(3))  # positions orthonormal
    with pytest.raises(pe.PositionalError, match="K >= n"):
        concat.positions(concat.SOURCES[1], 4, 3)
    np.testing.assert_array_equal(concat.positions(concat.SOURCES[0], 5, 4), pe.sinusoidal_encoding(5, 4))
    with pytest.raises(pe.PositionalError, match="between 1 and D"):
        concat.disjoint_sum(np.ones((2, 3)), np.ones((2, 4)))
