"""trace_text on the real packaged models: shapes, sums, causality, truncation, bad input."""

import numpy as np
import pytest
import torch

from txviz import models
from txviz.core.errors import WrongModelKind
from txviz.core.tracing import encode, trace_text, words_of


def test_minilm_trace_is_a_full_encoder_attention(minilm):
    trace = trace_text(minilm, "The cat sat on the mat.")
    assert trace.kind == "self"
    assert trace.query_tokens == ("[CLS]", "the", "cat", "sat", "on", "the", "mat", ".", "[SEP]")
    assert trace.special == (True,) + (False,) * 7 + (True,)
    assert trace.weights.shape == (6, 12, 9, 9) and trace.weights.dtype == np.float32
    np.testing.assert_allclose(trace.weights.sum(-1), 1.0, atol=1e-5)
    assert np.triu(trace.weights, 1).max() > 0.01


def test_smollm2_trace_is_causal_and_matches_eager(smollm2):
    text = "The animal didn't cross the street because it was too tired."
    trace = trace_text(smollm2, text, record=("scores",))
    assert trace.kind == "causal" and trace.weights.shape[:2] == (30, 9)
    assert np.triu(trace.weights, 1).max() == 0.0
    assert np.isneginf(np.triu(trace.scores, 1)[..., 0, 1:]).all()
    ids = torch.tensor([encode(smollm2, text).ids])
    smollm2.model.set_attn_implementation("eager")
    try:
        with torch.no_grad():
            eager = smollm2.model(input_ids=ids, output_attentions=True).attentions
    finally:
        smollm2.model.set_attn_implementation("txviz")
    np.testing.assert_allclose(trace.weights, torch.stack([a[0] for a in eager]).numpy(), atol=1e-5)


def test_long_text_is_truncated_with_a_notice(minilm):
    trace = trace_text(minilm, "word " * 20_000)
    assert len(trace.query_tokens) == 512
    assert "only the first 512" in trace.notice


def test_empty_text_is_refused(minilm):
    with pytest.raises(ValueError, match="empty"):
        trace_text(minilm, "   ")


def test_script_text_stays_text(minilm):
    trace = trace_text(minilm, "<script>alert(1)</script>")
    assert "<" in trace.query_tokens and "script" in trace.query_tokens


def test_word_groups_join_sub_word_pieces(minilm):
    text = "Tokenization isn't trivial"
    groups = words_of(minilm, text)
    tokens = trace_text(minilm, text).query_tokens
    words = {}
    for token, group in zip(tokens, groups, strict=True):
        words.setdefault(group, []).append(token)
    assert ["token", "ization"] in words.values()
    assert len(set(groups)) < len(tokens)


def test_image_models_are_sent_to_their_page(minilm):
    vision = models.LoadedModel("v", "vision", minilm.model, None, object(), "cpu")
    with pytest.raises(WrongModelKind, match="reads images, not text.*Vision Transformer page"):
        trace_text(vision, "text")
