"""The nested-phrase measures: the flat-distance baseline, phrase grouping and the spans, each against a
plain loop written from the definition."""

from __future__ import annotations

import numpy as np
import pytest

from txviz.why import hierarchy as hy


def random_rows(shape, causal: bool, seed: int = 0) -> np.ndarray:
    """Random attention rows over n keys (lower triangle only when causal), each summing to 1."""
    rng = np.random.default_rng(seed)
    a = rng.random(shape)
    if causal:
        a = np.tril(a)
    return a / a.sum(axis=-1, keepdims=True)


def loop_baseline(a: np.ndarray, causal: bool) -> np.ndarray:
    """B[i, j] = profile(j - i) over the row's readable keys, renormalised; profile by explicit loops."""
    n = a.shape[0]
    readable = [[j for j in range(n) if not causal or j <= i] for i in range(n)]
    profile = {}
    for delta in range(-(n - 1), n):
        cells = [a[i, i + delta] for i in range(n) if 0 <= i + delta < n and (i + delta) in readable[i]]
        profile[delta] = sum(cells) / len(cells) if cells else 0.0
    b = np.zeros_like(a)
    for i in range(n):
        for j in readable[i]:
            b[i, j] = profile[j - i]
        b[i] /= b[i].sum()
    return b


@pytest.mark.parametrize("causal", [False, True])
def test_distance_baseline_matches_the_definition(causal):
    a = random_rows((2, 3, 7, 7), causal)
    b = hy.distance_baseline(a, causal)
    for layer in range(2):
        for head in range(3):
            np.testing.assert_allclose(b[layer, head], loop_baseline(a[layer, head], causal), atol=1e-12)
    np.testing.assert_allclose(b.sum(axis=-1), 1.0, atol=1e-12)
    if causal:
        assert np.all(np.triu(b[0, 0], 1) == 0)


def test_the_baseline_keeps_attention_that_already_depends_only_on_distance():
    n = 6
    offsets = np.arange(n)[None, :] - np.arange(n)[:, None]
    toeplitz = np.exp(-np.abs(offsets + 1.0))  # peaks on the previous token, a function of j - i only
    rows = toeplitz / toeplitz.sum(axis=-1, keepdims=True)
    # Row scales differ at the edges, so the fitted profile is a mean of rescaled copies: only a
    # row-independent profile (uniform) comes back exactly.
    uniform = np.full((1, 1, n, n), 1 / n)
    np.testing.assert_allclose(hy.distance_baseline(uniform, False), uniform, atol=1e-15)
    b = hy.distance_baseline(rows[None, None], False)[0, 0]
    assert int(np.argmax(b[3])) == 2  # still the previous token
    assert np.abs(b - rows).max() < 0.1


def test_grouping_is_the_mean_row_mass_on_the_span():
    a = random_rows((4, 9, 9), False, seed=3)
    span = (2, 3, 4)
    expected = [np.mean([sum(a[h, i, j] for j in span) for i in span]) for h in range(4)]
    np.testing.assert_allclose(hy.grouping(a, span), expected, atol=1e-12)


def test_content_attention_drops_columns_and_renormalises():
    a = random_rows((1, 1, 5, 5), False, seed=1)
    keep = np.array([False, True, True, True, False])
    cut = hy.content_attention(a, keep)[0, 0]
    inner = a[0, 0][1:4, 1:4]
    np.testing.assert_allclose(cut, inner / inner.sum(axis=1, keepdims=True), atol=1e-12)


def test_phrase_spans_nest_and_map_to_tokens():
    text = "She drove slowly into the blue car by the gate."
    levels = ("car", "blue car", "the blue car", "into the blue car")
    chars = hy.phrase_chars(text, levels)
    assert [text[s:e] for s, e in chars] == list(levels)
    assert all(o[0] <= i[0] and i[1] <= o[1] for i, o in zip(chars, chars[1:], strict=False))
    # Whitespace word pieces with character offsets, a [CLS]-like special token with (0, 0) first.
    words, offsets, at = text.rstrip(".").split(), [(0, 0)], 0
    for word in words:
        at = text.index(word, at)
        offsets.append((at, at + len(word)))
        at += len(word)
    assert hy.token_positions(offsets, chars[1]) == (6, 7)  # "blue", "car"
    assert hy.token_positions(offsets, chars[3]) == (4, 5, 6, 7)
    with pytest.raises(hy.HierarchyError):
        hy.phrase_chars(text, ("bus", "blue bus"))


def test_measure_against_a_hand_computation():
    text = "She drove slowly into the blue car by the gate."
    example = hy.Example(text, ("blue car", "into the blue car"))
    words = text.split()
    offsets, at = [(0, 0)], 0
    for word in words:
        at = text.index(word, at)
        offsets.append((at, at + len(word)))
        at += len(word)
    offsets.append((0, 0))
    n = len(offsets)
    special = [True] + [False] * (n - 2) + [True]
    weights = random_rows((2, 2, n, n), False, seed=5)
    result = hy.measure(weights, offsets, special, ["t"] * n, example, causal=False)
    assert result.spans == ((5, 6), (3, 4, 5, 6)) and result.controls == ((6, 7), (4, 5, 6, 7))
    for layer in range(2):
        for head in range(2):
            a = weights[layer, head][1:-1, 1:-1]
            a = a / a.sum(axis=1, keepdims=True)
            b = loop_baseline(a, False)
            for level, span in enumerate(result.spans):
                mine = np.mean([a[i, list(span)].sum() for i in span])
                base = np.mean([b[i, list(span)].sum() for i in span])
                assert result.actual[level, layer, head] == pytest.approx(mine, abs=1e-12)
                assert result.baseline[level, layer, head] == pytest.approx(base, abs=1e-12)
                moved = result.controls[level]
                other = np.mean([a[i, list(moved)].sum() - b[i, list(moved)].sum() for i in moved])
                assert result.control[level, layer, head] == pytest.approx(other, abs=1e-12)
    layers = result.grouping_layers(0)
    for layer in range(2):
        grouped = result.layer_excess[0, layer] > max(0.0, result.layer_control[0, layer])
        assert (layer in layers) == grouped
    assert [row["phrase"] for row in result.rows()] == list(example.levels)
