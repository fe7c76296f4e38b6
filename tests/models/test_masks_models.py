"""Mask patterns applied to minilm and smollm2: exact zeros where forbidden, loss, embeddings, two passes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from txviz.masks import patterns as masks
from txviz.masks.effects import (
    apply_pattern,
    decoder_effect,
    encoder_effect,
    forbidden_weight,
    pattern_for_model,
)

TEXT = "The animal didn't cross the street because it was too tired."


@pytest.mark.parametrize("fixture", ["minilm", "smollm2"])
def test_masked_real_model_puts_exactly_zero_weight_where_forbidden(request, fixture):
    loaded = request.getfixturevalue(fixture)
    run = apply_pattern(loaded, TEXT, "local", window=1)
    n = len(run.before.query_tokens)
    assert run.mask.shape == (n, n) and run.after.weights.shape == run.before.weights.shape
    assert forbidden_weight(run) == 0.0
    assert (run.after.weights[..., ~run.mask] == 0).all()
    np.testing.assert_allclose(run.after.weights.sum(-1), 1.0, atol=1e-5)
    # The unmasked model does attend there, so the check above can fail.
    assert run.before.weights[..., ~run.mask].max() > 0.01


def test_decoder_effect_loss_and_prediction(smollm2):
    ids = torch.tensor([smollm2.tokenizer(TEXT)["input_ids"]])
    with torch.no_grad():
        plain = smollm2.model(input_ids=ids, labels=ids)
    same = decoder_effect(smollm2, ids[0].tolist(), masks.causal_mask(ids.shape[1]))  # its own mask
    assert same.loss_before == pytest.approx(float(plain.loss), abs=1e-4)
    assert same.loss_after == pytest.approx(same.loss_before, abs=1e-4) and same.same_prediction
    probs = torch.softmax(plain.logits[0, -1].float(), -1)
    assert same.top_before.pairs()[0][1] == pytest.approx(float(probs.max()), abs=1e-4)
    local = decoder_effect(smollm2, ids[0].tolist(), masks.local_window_mask(ids.shape[1], 1, causal=True))
    assert local.loss_after > local.loss_before + 0.5


def test_encoder_effect_cosine(minilm):
    assert apply_pattern(minilm, TEXT, "full").effect.sentence_cosine == pytest.approx(1.0, abs=1e-5)
    local = apply_pattern(minilm, TEXT, "local", window=1).effect
    assert local.sentence_cosine < 0.99 and local.token_cosine.shape == (16,)


def test_all_padding_on_a_real_model_is_handled_not_nan(minilm):
    run = apply_pattern(minilm, TEXT, "padding", n_pad=100)
    assert "attends to itself" in run.notice
    assert not np.isnan(run.after.weights).any()
    np.testing.assert_array_equal(run.after.weights[0, 0], np.eye(run.mask.shape[0]))


def test_a_decoder_keeps_its_causal_mask_whatever_the_pattern(smollm2):
    fixed = pattern_for_model(smollm2, 6, "full")
    np.testing.assert_array_equal(fixed.mask, masks.causal_mask(6))
    with pytest.raises(ValueError, match="Unknown pattern"):
        pattern_for_model(smollm2, 6, "nonsense")
    with pytest.raises(ValueError, match="needs an encoder-decoder model"):
        pattern_for_model(smollm2, 6, "cross")


@pytest.mark.parametrize("fixture", ["minilm", "smollm2"])
def test_apply_pattern_runs_the_model_twice_and_matches_the_separate_effect(request, fixture):
    loaded = request.getfixturevalue(fixture)
    calls = []
    hook = loaded.model.register_forward_pre_hook(lambda module, args: calls.append(1))
    try:
        run = apply_pattern(loaded, TEXT, "local", window=1)
    finally:
        hook.remove()
    assert len(calls) == 2  # one traced pass without the pattern, one with; outputs come from those
    ids = loaded.tokenizer(TEXT)["input_ids"]
    if loaded.is_causal:
        alone = decoder_effect(loaded, ids, run.mask)
        assert run.effect.loss_after == pytest.approx(alone.loss_after, abs=1e-4)
        assert run.effect.loss_before == pytest.approx(alone.loss_before, abs=1e-4)
        assert run.effect.top_after.ids == alone.top_after.ids
    else:
        alone = encoder_effect(loaded, ids, run.mask)
        assert run.effect.sentence_cosine == pytest.approx(alone.sentence_cosine, abs=1e-5)
        np.testing.assert_allclose(run.effect.token_cosine, alone.token_cosine, atol=1e-5)
