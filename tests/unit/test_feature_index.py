"""A dictionary's feature index, direct logit effects and head shares (txviz.features.index, unembed, heads),
each against a brute-force computation from dense activations or from the model's own weights."""

from __future__ import annotations

import dataclasses
from functools import cache

import numpy as np
import pytest
import torch
from atlas_helpers import corpus, decoder

from txviz.core.tokens import readable_tokens
from txviz.features import index as fi
from txviz.features.activations import FeaturesError, Place, at_place, collect, token_windows
from txviz.features.heads import head_shares, written_by
from txviz.features.sae import Settings, TopKSAE, start_state, train
from txviz.features.unembed import direct_logits, promoted

SMALL = Settings(expansion=4, k=5, tokens=512, batch=64, lr=1e-3, aux_k=8, dead_after=128, window=16)
PLACES = (Place("resid_pre", 1), Place("head_out", 1))
TOP, BANDS, PER_BAND = 4, 5, 2


@cache
def setup(place: Place):
    """A tiny decoder, its windows and a dictionary trained on them at ``place``."""
    loaded = decoder()
    ids = token_windows(loaded, corpus(80), 16)[:12]
    data = collect(loaded, place, ids)
    sae = train(data, SMALL).sae
    return loaded, ids, sae


def dense(loaded, place, sae, ids) -> np.ndarray:
    """Every latent of every counted token, (W x (T - 1), m): the brute force the index must never build."""
    with torch.no_grad():
        return sae.encode(torch.from_numpy(collect(loaded, place, ids))).numpy()


def brute_bands(z: np.ndarray, length: int, seed: int) -> dict[int, list[set]]:
    """Each feature's band draws by the interval rule: a feature's list of sets of (window, position, value)."""
    rows, features = np.nonzero(z)  # row-major: the (place, feature) order the priorities follow
    priority = np.random.default_rng(seed).random(len(rows))
    drawn = {}
    for f in range(z.shape[1]):
        mine = features == f
        r, p = rows[mine], priority[mine]
        v = z[r, f]
        if not len(v):
            continue
        peak = v.max()
        bands = []
        for d in range(BANDS):
            upper, lower = peak * (1 - d / BANDS), peak * (1 - (d + 1) / BANDS)
            inside = (v <= upper) & ((v > lower) | (d == BANDS - 1))
            chosen = np.flatnonzero(inside)[np.argsort(p[inside], kind="stable")][:PER_BAND]
            bands.append(
                {(int(r[i] // (length - 1)), int(r[i] % (length - 1) + 1), float(v[i])) for i in chosen}
            )
        drawn[f] = bands
    return drawn


@pytest.mark.parametrize("place", PLACES, ids=lambda p: p.name)
def test_the_index_matches_a_dense_brute_force(place):
    loaded, ids, sae = setup(place)
    z = dense(loaded, place, sae, ids)
    found = fi.index(loaded, place, sae, ids, top=TOP, bands=BANDS, per_band=PER_BAND, seed=7, batch=5)
    length = ids.shape[1]
    fires = z > 0
    assert found.tokens == len(z) == len(ids) * (length - 1)
    np.testing.assert_allclose(found.density, fires.mean(0))
    mean = np.where(fires.any(0), z.sum(0) / np.maximum(fires.sum(0), 1), 0)
    np.testing.assert_allclose(found.mean, mean, rtol=1e-5)
    np.testing.assert_allclose(found.peak, z.max(0))
    assert fires.any(0).sum() > 10  # enough live features for the comparison to mean something
    bands = brute_bands(z, length, seed=7)
    for f in range(sae.width):
        rows = np.argsort(-z[:, f], kind="stable")[: min(TOP, fires[:, f].sum())]
        expected = [(int(r // (length - 1)), int(r % (length - 1) + 1), float(z[r, f])) for r in rows]
        got = found.contexts(f)
        assert [(w, p) for w, p, _ in got] == [(w, p) for w, p, _ in expected]
        np.testing.assert_allclose([v for *_, v in got], [v for *_, v in expected], rtol=1e-6)
        assert (
            np.isnan(found.top_value[f, len(got) :]).all() and (found.top_window[f, len(got) :] == -1).all()
        )
        drawn = found.band_contexts(f)
        if f not in bands:
            assert drawn == [[] for _ in range(BANDS)]
            continue
        for d, band in enumerate(drawn):
            assert {(w, p) for w, p, _ in band} == {(w, p) for w, p, _ in bands[f][d]}
            values = [v for *_, v in band]
            assert values == sorted(values, reverse=True)  # largest first within a band


def test_the_index_does_not_depend_on_the_batch_size():
    place = PLACES[0]
    loaded, ids, sae = setup(place)
    one = fi.index(loaded, place, sae, ids, top=TOP, bands=BANDS, per_band=PER_BAND, batch=1)
    many = fi.index(loaded, place, sae, ids, top=TOP, bands=BANDS, per_band=PER_BAND, batch=7)
    for field in dataclasses.fields(one):
        np.testing.assert_allclose(getattr(one, field.name), getattr(many, field.name), rtol=1e-5)


def test_the_index_keeps_only_the_nonzero_latents(monkeypatch):
    place = PLACES[0]
    loaded, ids, sae = setup(place)
    l0 = (dense(loaded, place, sae, ids) > 0).sum(1)
    assert (l0 <= sae.k).all()
    seen = []
    encode = TopKSAE.encode

    def spy(self, x):
        seen.append(tuple(x.shape))
        return encode(self, x)

    monkeypatch.setattr(TopKSAE, "encode", spy)
    found = fi.triplets(loaded, place, sae, ids, batch=3)
    assert len(found.value) == len(found.feature) == len(found.place) == l0.sum()
    assert (found.value > 0).all()
    # every encode saw one batch of windows' counted positions, never all the tokens at once
    assert seen and all(rows <= 3 * (ids.shape[1] - 1) for rows, _ in seen)
    assert sum(rows for rows, _ in seen) == found.tokens


def test_band_rule_puts_an_edge_value_in_the_band_below():
    # bands of 4 against a peak of 1: (0.75, 1], (0.5, 0.75], (0.25, 0.5], down to 0; the edges are exact
    values = np.array([1.0, 0.8, 0.75, 0.5, 0.3, 0.25, 0.0625], np.float32)
    assert fi.band_of(values, np.ones(7, np.float32), 4).tolist() == [0, 0, 1, 2, 2, 3, 3]


def test_save_and_load_round_trip(tmp_path):
    place = PLACES[1]
    loaded, ids, sae = setup(place)
    found = fi.index(loaded, place, sae, ids, top=TOP, bands=BANDS, per_band=PER_BAND)
    path = found.save(tmp_path / "dictionary")
    assert path.name == "index.npz"
    assert sorted(p.name for p in path.parent.iterdir()) == ["index.npz"]  # the temporary file is gone
    again = fi.FeatureIndex.load(tmp_path / "dictionary")
    assert again.tokens == found.tokens and isinstance(again.tokens, int)
    for field in dataclasses.fields(found):
        np.testing.assert_array_equal(getattr(again, field.name), getattr(found, field.name))
    found.save(tmp_path / "dictionary")  # replaced over the old one
    with pytest.raises(FeaturesError, match="No feature index"):
        fi.FeatureIndex.load(tmp_path / "elsewhere")


def test_a_windows_activations_from_the_index_match_a_forward():
    place = PLACES[0]
    loaded, ids, sae = setup(place)
    found = fi.index(loaded, place, sae, ids, top=TOP, bands=BANDS, per_band=PER_BAND)
    feature = int(np.argmax(found.density))
    window, position, value = found.contexts(feature)[0]
    kept = found.activations(feature, window)  # from the kept firings, position 0 never read
    assert kept.shape == (ids.shape[1],)
    assert kept[position] == pytest.approx(value, rel=1e-4)
    with torch.no_grad():
        whole = sae.encode(at_place(loaded, place, torch.from_numpy(ids[window : window + 1]))[0])
    np.testing.assert_allclose(kept[1:], whole[1:, feature].numpy(), rtol=1e-4, atol=1e-6)
    assert kept[0] == 0
    assert len(found.fired_value) == found.starts[-1] == int(round(found.density.sum() * found.tokens))


def test_bad_input_is_refused_with_a_reason():
    place = PLACES[0]
    loaded, ids, sae = setup(place)
    found = fi.index(loaded, place, sae, ids[:2], top=2, bands=2, per_band=1)
    with pytest.raises(FeaturesError, match="no 999"):
        found.contexts(999)
    with pytest.raises(FeaturesError, match="no 999"):
        found.activations(999, 0)
    with pytest.raises(FeaturesError, match="no 999"):
        direct_logits(loaded, place, sae, 999)
    other = start_state(np.random.default_rng(0).normal(size=(64, 8)).astype(np.float32), SMALL).sae
    with pytest.raises(FeaturesError, match="another place"):
        fi.index(loaded, place, other, ids[:2])
    with pytest.raises(FeaturesError, match="shape"):
        fi.index(loaded, place, sae, ids[0])


def with_random_norm(loaded):
    """The tiny llama's final norm gain is all ones: make it random so that folding it in is tested."""
    with torch.no_grad():
        norm = loaded.model.model.norm.weight
        norm.copy_(torch.linspace(0.2, 2.0, len(norm)) * torch.sign(torch.randn(len(norm))))
    return loaded


@pytest.mark.parametrize("place", PLACES, ids=lambda p: p.name)
def test_direct_logits_equal_the_weights_by_hand(place):
    _, _, sae = setup(place)
    loaded = with_random_norm(decoder())  # the same weights as setup's, but the gain
    feature = 3
    direction = sae.W_dec[feature].double() * sae.scale
    if place.kind == "head_out":
        o_proj = loaded.model.model.layers[place.layer].self_attn.o_proj.weight.double()  # (D, H x d_head)
        direction = o_proj @ direction
    gain = loaded.model.model.norm.weight.double()
    hand = loaded.model.lm_head.weight.double() @ (direction * gain)
    found = direct_logits(loaded, place, sae, feature)
    assert found.shape == (loaded.model.config.vocab_size,)
    np.testing.assert_allclose(found, hand.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_promoted_and_suppressed_tokens_are_the_extremes_readably():
    place = PLACES[1]
    loaded, _, sae = setup(place)
    effect = direct_logits(loaded, place, sae, 5)
    up, down = promoted(loaded, place, sae, 5, n=4)
    assert [v for _, v in up] == pytest.approx(sorted(effect, reverse=True)[:4])
    assert [v for _, v in down] == pytest.approx(sorted(effect)[:4])
    best = [int(i) for i in np.argsort(-effect)[:4]]
    assert [t for t, _ in up] == list(readable_tokens(loaded.tokenizer, best)[0])


def sae_of(w_dec: np.ndarray) -> TopKSAE:
    m, d = w_dec.shape
    weights = {
        "W_enc": torch.zeros(d, m), "b_enc": torch.zeros(m),
        "W_dec": torch.from_numpy(w_dec.astype(np.float32)), "b_dec": torch.zeros(d),
    }  # fmt: skip
    return TopKSAE(weights, k=1, scale=1.0)


def test_head_shares_sum_to_one_and_a_single_head_feature_is_all_its_head():
    place = PLACES[1]
    loaded, _, sae = setup(place)
    shares = head_shares(sae, loaded.n_heads)
    assert shares.shape == (sae.width, loaded.n_heads)
    np.testing.assert_allclose(shares.sum(1), 1.0)
    w_dec = np.zeros((3, 8))
    w_dec[0, 2:4] = [3.0, -4.0]  # head 1 of four heads 2 wide
    w_dec[1, :] = 1.0
    w_dec[2, [0, 6]] = [1.0, 2.0]
    hand = head_shares(sae_of(w_dec), 4)
    np.testing.assert_allclose(hand[0], [0, 1, 0, 0])
    np.testing.assert_allclose(hand[1], [0.25] * 4)
    np.testing.assert_allclose(hand[2], [0.2, 0, 0, 0.8])
    with pytest.raises(FeaturesError, match="equal width"):
        head_shares(sae_of(w_dec), 3)


def test_written_by_ranks_by_share_times_density_times_mean():
    w_dec = np.zeros((4, 4))
    w_dec[0, 0:2] = 1.0  # all head 0
    w_dec[1, :] = 1.0  # half head 0
    w_dec[2, 0] = 1.0  # all head 0, never fires
    w_dec[3, 2:] = 1.0  # all head 1
    sae = sae_of(w_dec)
    index = fi.FeatureIndex(
        np.zeros((1, 2), np.int64), 1, np.array([0.1, 0.5, 0.0, 0.9]), np.array([2.0, 1.0, 0.0, 3.0], np.float32),
        np.ones(4, np.float32), *(np.zeros((4, 1)),) * 3, *(np.zeros((4, 1, 1)),) * 3,
        np.zeros(5, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32),
    )  # fmt: skip
    found = written_by(index, sae, 2, 0)
    assert [f for f, *_ in found] == [1, 0, 3]  # 0.5 x 0.5 x 1 > 1 x 0.1 x 2 > 0; feature 2 never fires
    for f, share, score in found:
        assert score == pytest.approx(share * index.density[f] * index.mean[f])
    assert found[0][1] == pytest.approx(0.5)
    assert written_by(index, sae, 2, 1, n=1) == [(3, pytest.approx(1.0), pytest.approx(2.7))]
    with pytest.raises(FeaturesError, match="no head 2"):
        written_by(index, sae, 2, 2)
