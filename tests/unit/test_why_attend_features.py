"""Why Attend's feature mode: a head's score split into (query feature) x (key feature) pairs of a TopK
dictionary at the block's input sums to the model's own score, the error term is what the features and
biases leave, and row mode is refused."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from atlas_helpers import corpus, decoder

from txviz.core.errors import UserError
from txviz.features.activations import Place, collect, token_windows
from txviz.features.sae import Settings, train
from txviz.whyattend import words
from txviz.whyattend.check import explained, model_scores
from txviz.whyattend.decompose import decompose, record

SMALL = Settings(
    expansion=4, k=5, tokens=512, batch=64, lr=1e-3, aux_k=8, dead_after=128, window=16, held_out=128
)
TEXT = "The cat sat on the mat, and the dog sat on the cat."


@pytest.fixture(scope="module")
def loaded():
    found = decoder()
    # random weights are small: give the stream and the scores some size so relative errors mean something
    with torch.no_grad():
        for p in found.model.parameters():
            p.mul_(8.0) if p.ndim > 1 else None
    return found


@pytest.fixture(scope="module")
def dictionaries(loaded):
    """A tiny dictionary at the input of each of the two blocks."""
    ids = token_windows(loaded, corpus(120), SMALL.window)
    return {layer: train(collect(loaded, Place("resid_pre", layer), ids), SMALL).sae for layer in (0, 1)}


@pytest.fixture(scope="module")
def ids(loaded):
    return loaded.tokenizer(TEXT, return_tensors="pt")["input_ids"]


def close(a: float, b: float, scale: float) -> bool:
    """Equal to float32's accuracy: 1e-4 of the score's size (at least 0.01, so a score near zero is not
    held to a bound below rounding)."""
    return abs(a - b) <= 1e-4 * max(abs(scale), 0.01)


@pytest.mark.parametrize("layer", [0, 1])
@pytest.mark.parametrize("head", [0, 3])
def test_feature_pairs_sum_to_the_models_own_score(loaded, dictionaries, ids, layer, head):
    query, key = ids.shape[1] - 1, 3
    split = decompose(loaded.model, ids, layer, head, query, key, features=dictionaries[layer])
    plain = decompose(loaded.model, ids, layer, head, query, key)
    own = model_scores(loaded.model, ids, layer, head)[query, key]
    assert close(float(split.pairs.sum()), float(own), own)
    assert close(split.score, plain.score, own)
    kinds = {p.kind for p in split.parts_q}
    assert kinds == {"feature", "dict_bias", "error", "bias"}
    assert split.parts_q == split.parts_k  # one stream: the same parts on both sides


def test_contrast_mode_sums_to_the_difference_of_the_two_scores(loaded, dictionaries, ids):
    query, key, other = ids.shape[1] - 1, 4, 1
    split = decompose(
        loaded.model, ids, 1, 2, query, key, mode="contrast", contrast=other, features=dictionaries[1]
    )
    own = explained(split, model_scores(loaded.model, ids, 1, 2))
    assert close(float(split.pairs.sum()), own, own)


def test_the_parts_are_the_features_active_at_either_position(loaded, dictionaries, ids):
    sae, query, key = dictionaries[1], ids.shape[1] - 1, 2
    recorded = record(loaded.model, ids)
    split = decompose(loaded.model, ids, 1, 0, query, key, recorded=recorded, features=sae)
    stream = recorded["resid", 0][0, [key, query]].float()
    z = sae.encode(stream)
    active = sorted(set(torch.nonzero(z)[:, 1].tolist()))
    found = [p.feature for p in split.parts_q if p.kind == "feature"]
    assert found == active
    assert [p.name for p in split.parts_q[-3:]] == ["dictionary bias", "reconstruction error", "biases"]
    # a feature off at the query has a zero vector there, its value times its direction at the key
    for n, f in enumerate(found):
        at_query = split.stream_q[n]
        expected = z[1, f] * sae.W_dec[f] * sae.scale
        assert torch.allclose(at_query, expected, atol=1e-6)
    # the stream's parts sum to the recorded stream at each position
    assert torch.allclose(split.stream_q.sum(0), stream[1], atol=1e-4 * (1 + stream.abs().max().item()))
    assert torch.allclose(split.stream_k.sum(0), stream[0], atol=1e-4 * (1 + stream.abs().max().item()))


def test_the_error_term_is_the_score_less_the_feature_and_bias_terms(loaded, dictionaries, ids):
    sae, query, key = dictionaries[1], ids.shape[1] - 1, 5
    split = decompose(loaded.model, ids, 1, 1, query, key, features=sae)
    terms = words.terms(split)
    own = float(model_scores(loaded.model, ids, 1, 1)[query, key])
    assert close(terms.error, own - terms.features - terms.bias, own)
    # read off the pairs by hand: the error's row and column, the corner counted once
    e_q = [n for n, p in enumerate(split.parts_q) if p.kind == "error"][0]
    e_k = [n for n, p in enumerate(split.parts_k) if p.kind == "error"][0]
    by_hand = split.pairs[e_q].sum() + split.pairs[:, e_k].sum() - split.pairs[e_q, e_k]
    assert np.isclose(terms.error, by_hand, rtol=1e-5, atol=1e-6)
    assert 0 < terms.error_share < 1
    feats = [n for n, p in enumerate(split.parts_q) if p.kind == "feature"]
    assert np.isclose(terms.features, split.pairs[np.ix_(feats, feats)].sum(), rtol=1e-5, atol=1e-6)


def test_the_largest_feature_pairs_in_words(loaded, dictionaries, ids):

    split = decompose(loaded.model, ids, 1, 0, ids.shape[1] - 1, 2, features=dictionaries[1])
    lines = words.feature_ranked(split, loaded.tokenizer.convert_ids_to_tokens(ids[0].tolist()), 3)
    top = words.feature_pairs(split, 3)
    assert len(lines) == len(top) == 3
    assert abs(top[0][2]) >= abs(top[1][2]) >= abs(top[2][2])
    assert lines[0].startswith(f"feature {top[0][0]} at ") and "(query) x feature" in lines[0]


def test_row_mode_is_refused(loaded, dictionaries, ids):
    with pytest.raises(UserError, match="this key rather than another"):
        decompose(loaded.model, ids, 1, 0, ids.shape[1] - 1, 2, mode="row", features=dictionaries[1])


def test_a_dictionary_of_another_width_is_refused(loaded, ids):
    other = train(np.random.default_rng(0).normal(size=(512, 8)).astype(np.float32), SMALL).sae
    with pytest.raises(UserError, match="width 8"):
        decompose(loaded.model, ids, 1, 0, ids.shape[1] - 1, 2, features=other)
