"""Swin patch merging: 2 x 2 groups concatenated in Swin's order, stages down to one window."""

from __future__ import annotations

import numpy as np
import pytest

from txviz.masks import merging
from txviz.masks.patterns import MaskError


def test_merge_concatenates_each_2x2_group_in_swin_order():
    x = np.arange(4 * 6 * 3, dtype=float).reshape(4, 6, 3)
    merged = merging.merge_patches(x)
    assert merged.shape == (2, 3, 12)
    i, j = 1, 2
    expected = np.concatenate(
        [x[2 * i, 2 * j], x[2 * i + 1, 2 * j], x[2 * i, 2 * j + 1], x[2 * i + 1, 2 * j + 1]]
    )
    np.testing.assert_array_equal(merged[i, j], expected)


def test_odd_sides_are_padded_with_zeros():
    merged = merging.merge_patches(np.ones((3, 5, 2)))
    assert merged.shape == (2, 3, 8)
    assert merged[1, 2].tolist() == [1, 1, 0, 0, 0, 0, 0, 0]  # only the top-left patch exists


@pytest.mark.parametrize(
    ("rows", "columns", "window", "grids", "windows"),
    [
        (16, 16, 2, [(16, 16), (8, 8), (4, 4), (2, 2)], [64, 16, 4, 1]),
        (8, 8, 4, [(8, 8), (4, 4)], [4, 1]),
        (7, 5, 2, [(7, 5), (4, 3), (2, 2)], [12, 4, 1]),
        (4, 4, 4, [(4, 4)], [1]),
    ],
)
def test_stages_down_to_one_window(rows, columns, window, grids, windows):
    stages, features = merging.merge_stages(rows, columns, window, channels=3)
    assert [(s.rows, s.columns) for s in stages] == grids
    assert [s.n_windows for s in stages] == windows
    assert [s.channels for s in stages] == [3 * 2**i for i in range(len(stages))]
    assert [f.shape for f in features] == [(s.rows, s.columns, s.channels) for s in stages]
    assert [s.patch_span for s in stages] == [2**i for i in range(len(stages))]


def test_merged_features_are_the_reduction_of_the_concatenation():
    stages, features = merging.merge_stages(8, 8, 4, channels=2, seed=5)
    expected = merging.merge_patches(features[0]) @ merging.reduction(2, 5 + 1).T
    np.testing.assert_allclose(features[1], expected)


def test_attention_pairs_fall_with_windows():
    stages, _ = merging.merge_stages(16, 16, 4)
    assert stages[0].attention_pairs == 16 * 16**2  # 16 windows of 16 patches
    assert stages[-1].attention_pairs == 16**2  # one window of 4 x 4 patches


def test_bad_sizes():
    with pytest.raises(MaskError, match="1 to 64"):
        merging.merge_stages(0, 4, 2)
    with pytest.raises(MaskError, match="rows, columns, channels"):
        merging.merge_patches(np.ones((4, 4)))
