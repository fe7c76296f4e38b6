"""Linformer and Performer checked against softmax attention computed independently (scipy)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax

from txviz.selfattention import efficient as ef


def small_head(n: int = 12, d: int = 8, seed: int = 0, size: float = 0.6):
    rng = np.random.default_rng(seed)
    return (rng.normal(scale=size, size=(n, d)) for _ in range(3))


def exact(q, k, v):
    weights = softmax(q @ k.T / np.sqrt(q.shape[1]), axis=1)
    return weights, weights @ v


def test_linformer_with_kp_n_and_identity_projection_is_softmax():
    q, k, v = small_head()
    weights, out = ef.linformer(q, k, v, np.eye(len(q)))
    np.testing.assert_allclose(weights, exact(q, k, v)[0], atol=1e-12)
    np.testing.assert_allclose(out, exact(q, k, v)[1], atol=1e-12)
    # segment means with kp = n are the identity; with fewer segments they are not
    np.testing.assert_array_equal(ef.projection(12, 12, "segment means"), np.eye(12))
    assert (
        ef.relative_error(ef.linformer(q, k, v, ef.projection(12, 4, "segment means"))[1], exact(q, k, v)[1])
        > 1e-3
    )


def test_segment_means_average_contiguous_keys():
    e = ef.projection(7, 3, "segment means")
    np.testing.assert_allclose(e.sum(axis=1), 1.0)
    assert [list(np.flatnonzero(row)) for row in e] == [[0, 1, 2], [3, 4], [5, 6]]
    with pytest.raises(ValueError, match="kp must be"):
        ef.projection(7, 8)


def test_gaussian_projection_has_the_johnson_lindenstrauss_scale():
    e = ef.projection(400, 100, seed=1)
    assert abs(e.var() * 100 - 1) < 0.05  # entries N(0, 1/kp): E|E x|^2 = |x|^2
    x = np.random.default_rng(2).normal(size=400)
    assert abs(np.linalg.norm(e @ x) / np.linalg.norm(x) - 1) < 0.2


def test_positive_features_are_unbiased_for_the_softmax_kernel():
    rng = np.random.default_rng(0)
    x, y = rng.normal(scale=0.4, size=(2, 6))
    w = rng.normal(size=(100_000, 6))  # iid features: E[phi(x).phi(y)] = exp(x.y)
    estimate = ef.unshifted_features(x[None], w) @ ef.unshifted_features(y[None], w).T
    assert estimate.item() == pytest.approx(np.exp(x @ y), rel=0.01)
    assert (ef.unshifted_features(x[None], w) > 0).all()


def test_orthogonal_features_are_orthogonal_within_blocks():
    w = ef.orthogonal_gaussian(10, 4, np.random.default_rng(0))
    block = w[:4] / np.linalg.norm(w[:4], axis=1, keepdims=True)
    np.testing.assert_allclose(block @ block.T, np.eye(4), atol=1e-12)
    assert w.shape == (10, 4)


def test_performer_converges_to_softmax_as_features_grow():
    q, k, v = small_head()
    weights, out = exact(q, k, v)
    errors = [
        np.mean([ef.relative_error(ef.performer(q, k, v, m, seed), out) for seed in range(6)])
        for m in (8, 256, 16384)
    ]
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.03
    mean_weights = np.mean([ef.performer_weights(q, k, 16384, seed) for seed in range(6)], axis=0)
    np.testing.assert_allclose(mean_weights, weights, atol=0.01)


def test_orthogonal_features_are_unbiased_like_iid_ones():
    q, k, _ = small_head(n=4, d=4)
    truth = np.exp(q @ k.T / 2)  # d = 4: sqrt(d) = 2
    rng = np.random.default_rng(5)
    w = np.concatenate([ef.orthogonal_gaussian(4, 4, rng) for _ in range(50_000)])  # many blocks of 4
    estimate = ef.unshifted_features(q / np.sqrt(2), w) @ ef.unshifted_features(k / np.sqrt(2), w).T
    np.testing.assert_allclose(estimate, truth, rtol=0.02)


def test_performer_linear_form_equals_its_matrix_form():
    q, k, v = small_head(size=2.0)  # large scores: the stabilisers must cancel
    np.testing.assert_allclose(
        ef.performer(q, k, v, 64, 3), ef.performer_weights(q, k, 64, 3) @ v, atol=1e-10
    )
    assert np.isfinite(ef.performer(q * 3, k * 3, v, 64)).all()


def test_families_point_at_pages_that_exist():
    from txviz import page_map

    assert [f.name for f in ef.FAMILIES] == [
        "Fixed patterns",
        "Learnable patterns",
        "Low rank and kernels",
        "Memory",
        "Recurrence",
    ]
    for family in ef.FAMILIES:
        for page, _ in family.shown:
            assert page_map.page(page).path.exists(), page


def test_one_features_relative_variance_is_lemma_2s():
    rng = np.random.default_rng(3)
    x, y = rng.normal(scale=0.3, size=(2, 4))  # |x + y|^2 near 1: the sample variance settles
    w = rng.normal(size=(400_000, 4))
    single = np.exp(w @ x - x @ x / 2) * np.exp(w @ y - y @ y / 2)  # one feature each, m = 1
    relative = single.var() / np.exp(x @ y) ** 2
    assert relative == pytest.approx(np.expm1(np.sum((x + y) ** 2)), rel=0.05)
    assert ef.feature_variance(np.sum((x + y) ** 2)) == pytest.approx(np.expm1(np.sum((x + y) ** 2)))


def test_cooling_divides_every_spread_by_the_temperature():
    from txviz.selfattention.linear import HeadQKV

    q, k, v = small_head(n=6, d=16, size=2.0)
    head = HeadQKV(tuple("abcdef"), q, k, v, np.zeros((6, 6)))
    wide = max(np.sum((a + b) ** 2) for a in q for b in k) / 4  # sqrt(16) = 4
    assert ef.spread(head) == pytest.approx(wide)
    t = ef.calm_temperature(wide)
    assert wide / t <= ef.WELL_CONDITIONED < wide / (t / 2) or t == 1
    assert ef.spread(ef.cooled(head, t)) == pytest.approx(wide / t)
    cooled = ef.cooled(head, t)
    np.testing.assert_allclose(cooled.queries @ cooled.keys.T, q @ k.T / t)  # scores at temperature T
    assert ef.calm_temperature(1.0) == 1 and ef.calm_temperature(30.8) == 8


def test_learnable_patterns_say_top_k_saves_nothing():
    (learnable,) = [f for f in ef.FAMILIES if f.name == "Learnable patterns"]
    assert "save" in learnable.note and "n² scores" in learnable.note and "Not shown" in learnable.note
    assert all("not this family" in what for _, what in learnable.shown)


def test_a_head_already_well_conditioned_gets_no_second_curve():
    from txviz.selfattention.linear import HeadQKV

    q, k, v = small_head(size=0.3)
    calm = ef.versus_softmax(
        HeadQKV(tuple("abcdefghijkl"), q, k, v, np.zeros((12, 12))), 4, "segment means", 64
    )
    assert calm.calm_temperature == 1 and calm.spread <= ef.WELL_CONDITIONED
    assert [name for name in calm.curves if name.startswith("Performer")] == [ef.PERFORMER]
    q, k, v = small_head(size=2.0)
    wide = ef.versus_softmax(
        HeadQKV(tuple("abcdefghijkl"), q, k, v, np.zeros((12, 12))), 4, "segment means", 64
    )
    assert wide.calm_temperature > 1
    _, trained = wide.curves[ef.PERFORMER]
    _, cooled = wide.curves[ef.calm_name(wide.calm_temperature)]
    assert cooled[-1] < trained[-1]
