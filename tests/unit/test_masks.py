"""Every mask against a definition written out pair by pair, validation, and masks on real models."""

from __future__ import annotations

import base64
import itertools

import numpy as np
import pytest
import torch

from txviz.masks import figures as figs
from txviz.masks import patterns as masks

N = 11


def data(value) -> np.ndarray:
    """A figure array from fig.to_dict(), where plotly may encode it as base64 bytes."""
    if isinstance(value, dict) and "bdata" in value:
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        return array.reshape([int(d) for d in str(value.get("shape", len(array))).split(",")])
    return np.asarray(value)


def by_hand(n_query: int, n_key: int, allowed) -> np.ndarray:
    """A mask from a predicate on (query, key), one pair at a time."""
    out = np.zeros((n_query, n_key), dtype=bool)
    for q, k in itertools.product(range(n_query), range(n_key)):
        out[q, k] = allowed(q, k)
    return out


@pytest.mark.parametrize(
    ("mask", "allowed"),
    [
        (masks.full_mask(N), lambda q, k: True),
        (masks.causal_mask(N), lambda q, k: k <= q),
        (masks.padding_mask(N, 3), lambda q, k: k < N - 3),
        (masks.local_window_mask(N, 2), lambda q, k: abs(q - k) <= 2),
        (masks.local_window_mask(N, 2, causal=True), lambda q, k: 0 <= q - k <= 2),
        (masks.local_window_mask(N, 0), lambda q, k: q == k),
        (masks.dilated_mask(N, 2, 2), lambda q, k: abs(q - k) in (0, 2, 4)),
        (masks.dilated_mask(N, 2, 3, causal=True), lambda q, k: q - k in (0, 3, 6)),
        (masks.strided_mask(N, 3), lambda q, k: k <= q and (q - k < 3 or (q - k) % 3 == 0)),
        (masks.strided_mask(N, 3, causal=False), lambda q, k: abs(q - k) < 3 or (q - k) % 3 == 0),
        # 11 tokens in 3 blocks: sizes 4, 4, 3
        (masks.block_local_mask(N, 3), lambda q, k: min(q // 4, 2) == min(k // 4, 2)),
        (
            masks.selected_queries_mask(masks.local_window_mask(N, 1, causal=True), [3, 7], causal=True),
            lambda q, k: k <= q and (q in (3, 7) or q - k <= 1),
        ),
        (masks.global_tokens_mask(N, 2, 1), lambda q, k: q < 2 or k < 2 or abs(q - k) <= 1),
        (masks.prefix_lm_mask(N, 4), lambda q, k: k <= q or k < 4),
        (masks.prefix_lm_mask(N, 0), lambda q, k: k <= q),
    ],
)
def test_mask_equals_its_definition(mask, allowed):
    assert mask.dtype == bool
    np.testing.assert_array_equal(mask, by_hand(N, N, allowed))


def test_cross_attention_is_rectangular_with_padded_source_hidden():
    np.testing.assert_array_equal(masks.cross_attention_mask(4, 7, 5), by_hand(4, 7, lambda q, k: k < 5))
    assert masks.cross_attention_mask(3, 6).shape == (3, 6) and masks.cross_attention_mask(3, 6).all()
    cross = masks.PATTERNS["cross"].mask(4, n_source=9, n_pad=3)
    np.testing.assert_array_equal(cross, by_hand(4, 9, lambda q, k: k < 6))
    assert masks.pairs_computed(masks.PATTERNS["cross"], [4, 8], n_source=9, n_pad=3) == [24, 48]


@pytest.mark.parametrize("causal", [False, True])
def test_random_mask_draws_the_right_number_of_keys_it_may_see(causal):
    mask = masks.random_mask(40, 5, seed=3, causal=causal)
    expected = [min(5, q + 1) if causal else 5 for q in range(40)]
    assert mask.sum(axis=1).tolist() == expected
    if causal:
        assert not np.triu(mask, 1).any()
    np.testing.assert_array_equal(mask, masks.random_mask(40, 5, seed=3, causal=causal))
    assert not np.array_equal(mask, masks.random_mask(40, 5, seed=4, causal=causal))


def test_random_keys_are_spread_over_every_key():
    # Floyd's draw is uniform: each key is picked by about r / n of the rows (binomial spread 0.015).
    column_share = masks.random_mask(400, 40, seed=1).mean(axis=0)
    assert abs(column_share.mean() - 0.1) < 1e-12 and column_share.std() < 0.03
    assert np.abs(column_share - 0.1).max() < 0.08


def test_random_blocks_pick_whole_blocks():
    mask = masks.random_mask(12, 1, seed=0, block=4)
    blocks = mask.reshape(3, 4, 3, 4)
    assert (blocks.all(axis=(1, 3)) | ~blocks.any(axis=(1, 3))).all()  # each tile all or nothing
    assert (blocks.all(axis=(1, 3)).sum(axis=1) == 1).all()


def test_bigbird_is_the_union_of_its_parts():
    expected = masks.global_tokens_mask(30, 2, 3) | masks.random_mask(30, 2, seed=5)
    np.testing.assert_array_equal(masks.bigbird_mask(30, 3, 2, 2, seed=5), expected)
    np.testing.assert_array_equal(masks.bigbird_mask(30, 3, 2, 0), masks.global_tokens_mask(30, 2, 3))


@pytest.mark.parametrize("shifted", [False, True])
def test_swin_windows_on_a_patch_grid(shifted):
    height, width, window = 7, 5, 4
    shift = 2 if shifted else 0

    def window_of(patch):
        row, col = divmod(patch, width)
        return (row - shift) // window, (col - shift) // window  # Python floor: edge pieces apart

    expected = by_hand(35, 35, lambda q, k: window_of(q) == window_of(k))
    np.testing.assert_array_equal(masks.swin_window_mask(height, width, window, shifted), expected)
    regions = masks.swin_regions(height, width, window, shifted)
    assert regions.shape == (7, 5) and regions.min() == 0
    assert regions.max() + 1 == (6 if shifted else 4)  # rows cut 2+4+1 and columns 2+3 when shifted


def test_textbook_eight_match_the_figure():
    eight = dict(masks.textbook_eight(12))
    assert len(eight) == 8
    expected = {
        "a) Full (encoder)": lambda q, k: True,
        "b) Causal (decoder)": lambda q, k: k <= q,
        "c) Convolutional (encoder)": lambda q, k: abs(q - k) <= 1,
        "d) Convolutional (decoder)": lambda q, k: 0 <= q - k <= 2,
        "e) Dilated, rate 2": lambda q, k: q - k in (0, 2, 4),
        "f) Dilated, rate 3": lambda q, k: q - k in (0, 3, 6),
        "g) Selected tokens see all": lambda q, k: k <= q and (q % 4 == 3 or q - k <= 2),
        "h) Global tokens": lambda q, k: q < 2 or k < 2 or abs(q - k) <= 1,
    }
    for caption, allowed in expected.items():
        np.testing.assert_array_equal(eight[caption], by_hand(12, 12, allowed), err_msg=caption)


@pytest.mark.parametrize("n", [1, 7, 64])
def test_fraction_and_pairs_follow_the_formulas(n):
    assert masks.fraction_kept(masks.causal_mask(n)) == pytest.approx((n + 1) / (2 * n))
    w = 3
    # A band of half-width w: n (2w + 1) pairs minus the w (w + 1) cut off at the two ends.
    expected = n * (2 * w + 1) - min(w, n) * (min(w, n) + 1) if n > w else n * n
    assert masks.pairs_computed(masks.PATTERNS["local"], [n], window=w) == [expected]
    assert masks.pairs_computed(masks.PATTERNS["full"], [n, 2 * n]) == [n * n, 4 * n * n]


def test_every_named_pattern_builds_at_default_and_tiny_sizes():
    for key, pattern in masks.PATTERNS.items():
        for n in (1, 3, 40):
            mask = pattern.mask(n)
            shape = (n, n) if pattern.square else (n, pattern.params[0].default)
            assert mask.shape == shape and mask.dtype == bool, key
            if pattern.causal:
                assert not np.triu(mask, 1).any(), key


def test_window_larger_than_the_text_is_fine():
    np.testing.assert_array_equal(masks.local_window_mask(5, 50), masks.full_mask(5))
    np.testing.assert_array_equal(masks.block_local_mask(4, 9), np.eye(4, dtype=bool))
    np.testing.assert_array_equal(masks.prefix_lm_mask(5, 9), masks.full_mask(5))
    np.testing.assert_array_equal(masks.global_tokens_mask(4, 9), masks.full_mask(4))


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: masks.local_window_mask(8, -1), "Window must be 0 or more"),
        (lambda: masks.dilated_mask(8, 2, 0), "Dilation rate must be at least 1"),
        (lambda: masks.strided_mask(8, -2), "Stride must be at least 1"),
        (lambda: masks.block_local_mask(8, 0), "Number of blocks must be at least 1"),
        (lambda: masks.random_mask(8, 0), "Random keys must be at least 1"),
        (lambda: masks.causal_mask(0), "Sequence length must be at least 1"),
        (lambda: masks.local_window_mask(8, 1.5), "whole number"),
        (lambda: masks.padding_mask(8, -3), "Padding tokens must be 0 or more"),
        (lambda: masks.swin_window_mask(4, 4, 0), "Window must be at least 1"),
        (lambda: masks.selected_queries_mask(masks.causal_mask(4), [9]), r"\[9\] are outside"),
        (lambda: masks.cross_attention_mask(3, 4, 6), "cannot exceed the source length"),
        (lambda: masks.PATTERNS["local"].mask(8, stride=2), "no parameter"),
    ],
)
def test_bad_parameters_get_a_clear_message(build, message):
    with pytest.raises(masks.MaskError, match=message):
        build()


def test_a_row_with_nothing_to_attend_to_attends_to_itself():
    raw = masks.padding_mask(5, 5) | np.eye(5, dtype=bool) * False
    assert not raw.any()
    fixed = masks.ensure_attendable(raw)
    np.testing.assert_array_equal(fixed.mask, np.eye(5, dtype=bool))
    assert fixed.fixed_rows == (0, 1, 2, 3, 4) and "attends to itself" in fixed.notice
    scores = torch.zeros(5, 5).masked_fill(~torch.as_tensor(fixed.mask), float("-inf"))
    assert not torch.softmax(scores, dim=-1).isnan().any()
    assert masks.ensure_attendable(masks.causal_mask(4)).notice == ""
    wide = masks.ensure_attendable(np.zeros((4, 2), dtype=bool))  # more queries than keys
    assert wide.mask.sum(axis=1).tolist() == [1, 1, 1, 1] and wide.mask[3, 1]


def test_figures_carry_the_mask_data():
    mask = masks.local_window_mask(6, 1)
    grid = figs.mask_grid(mask, "local", query_labels=list("abcdef")).to_dict()
    np.testing.assert_array_equal(data(grid["data"][0]["z"]), mask.astype(int))
    assert grid["layout"]["yaxis"]["ticktext"][:2] == ["a", "b"]
    # the key axis is on top: the title is pinned to the figure's top edge, clear of the axis title
    title, margin = grid["layout"]["title"], grid["layout"]["margin"]
    assert grid["layout"]["xaxis"]["side"] == "top"
    assert (title["yref"], title["y"], title["yanchor"]) == ("container", 1, "top") and margin["t"] >= 100
    gallery = figs.mask_gallery(masks.textbook_eight(10)).to_dict()
    assert len(gallery["data"]) == 8
    np.testing.assert_array_equal(data(gallery["data"][1]["z"]), np.tri(10, dtype=int))
    labels, fractions = masks.fraction_kept_by_pattern(10)
    bars = figs.fraction_kept_bars(labels, fractions, 10).to_dict()
    assert data(bars["data"][0]["x"])[labels.index("Full (encoder)")] == 1.0
    pairs = figs.pairs_vs_n([4, 8], {"causal": [10, 36]}).to_dict()
    assert data(pairs["data"][0]["y"]).tolist() == [16, 64] and data(pairs["data"][1]["y"]).tolist() == [
        10,
        36,
    ]
    cost = figs.cost_curves([256, 512], [1.0, 4.0], [0.5, 1.0], [10, 10]).to_dict()
    np.testing.assert_allclose(data(cost["data"][2]["y"]), [1.0, 4.0])  # n² through the last dense point
    np.testing.assert_allclose(data(cost["data"][3]["y"]), [0.5, 1.0])  # n w through the last sparse one
    swin = figs.swin_figure(masks.swin_regions(4, 4, 2), masks.swin_regions(4, 4, 2, True), 2).to_dict()
    np.testing.assert_array_equal(data(swin["data"][3]["z"]), masks.swin_window_mask(4, 4, 2, True))


@pytest.mark.parametrize(("n", "k"), [(16, 4), (64, 8), (60, 5)])
def test_block_local_keeps_the_books_n_squared_over_k_pairs(n, k):
    assert "N²/K" in masks.PATTERNS["block"].description
    pattern = masks.PATTERNS["block"]
    assert int(pattern.mask(n, n_blocks=k).sum()) == n * n // k  # K blocks of N/K: K (N/K)² = N²/K
    assert int(pattern.mask(n + 1, n_blocks=k).sum()) > (n + 1) ** 2 / k  # uneven blocks keep a few more
