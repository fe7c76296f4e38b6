"""Truncated self-attention over speech frames: the pair count against the formula and a mask counted
cell by cell (edges included), and the windowed computation against dense attention with the mask."""

from __future__ import annotations

import numpy as np
import pytest

from txviz.block import truncated


def counted(frames: int, left: int, right: int) -> int:
    """Pairs counted one query at a time, by a loop over the keys."""
    return sum(1 for t in range(frames) for j in range(frames) if t - left <= j <= t + right)


@pytest.mark.parametrize(
    ("frames", "left", "right"),
    [(1, 0, 0), (5, 1, 0), (10, 3, 3), (10, 0, 9), (7, 20, 2), (3, 5, 5), (50, 16, 4), (64, 63, 0)],
)
def test_the_pair_count_is_the_formula_with_the_edges_taken_off(frames, left, right):
    pairs = truncated.attended_pairs(frames, left, right)
    assert pairs == counted(frames, left, right) == int(truncated.window_mask(frames, left, right).sum())
    if frames > max(left, right):  # no clipping: T (l + r + 1) − l (l + 1)/2 − r (r + 1)/2
        assert pairs == frames * (left + right + 1) - left * (left + 1) // 2 - right * (right + 1) // 2
    assert pairs <= frames * frames and pairs <= frames * (left + right + 1)


def test_a_window_wider_than_the_sequence_is_full_attention_and_a_causal_one_is_the_triangle():
    assert truncated.attended_pairs(30, 100, 100) == 30 * 30
    assert truncated.attended_pairs(30, 29, 0) == 30 * 31 // 2  # causal: the lower triangle with the diagonal
    assert truncated.attended_pairs(0, 4, 4) == 0


def test_costs_grow_as_t_times_w_against_t_squared():
    left, right = 32, 8
    rows = truncated.costs(left, right)
    assert [row.frames for row in rows] == list(truncated.LENGTHS)
    for row in rows:
        assert row.full == row.frames**2
        assert row.truncated == row.frames * 41 - 32 * 33 // 2 - 8 * 9 // 2
    assert rows[-1].ratio == pytest.approx(60_000**2 / rows[-1].truncated)
    assert rows[-1].seconds == 600.0 and rows[2].seconds == 60.0
    assert truncated.multiply_adds(rows[0].truncated, 64) == 2 * 64 * rows[0].truncated
    shown = truncated.table(rows)
    assert shown[2]["speech"] == "1 min" and shown[2]["frames T"] == "6,000"
    assert shown[2]["full: pairs (T²)"] == "36,000,000"


def test_the_windowed_computation_equals_dense_attention_under_the_mask():
    rng = np.random.default_rng(0)
    frames, d, left, right = 40, 8, 5, 2
    q, k, v = rng.normal(size=(3, frames, d))
    scores = q @ k.T / np.sqrt(d)
    scores[~truncated.window_mask(frames, left, right)] = -np.inf
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    dense = weights / weights.sum(axis=1, keepdims=True) @ v
    np.testing.assert_allclose(truncated.truncated_attention(q, k, v, left, right), dense, atol=1e-12)
    # Frame 20's output does not change when a frame outside its window does.
    far = v.copy()
    far[30] += 100.0
    assert np.allclose(truncated.truncated_attention(q, k, far, left, right)[20], dense[20])
