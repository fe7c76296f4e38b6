"""Soft vs hard attention on minilm and smollm2: every normalizer in every layer, and its effect."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import plotly_array

from txviz.core.tracing import encode, trace_text
from txviz.softhard import compare as soft_hard
from txviz.softhard import figures

# ---------------------------------------------------------------- real models under each normalizer

TEXT = "The animal didn't cross the street because it was too tired."


@pytest.fixture(scope="module")
def minilm_comparison(minilm) -> soft_hard.Comparison:
    return soft_hard.compare(minilm, TEXT, soft_hard.NormalizerSettings(temperature=0.5, k=3))


def test_each_normalizer_shapes_the_rows_of_every_head(minilm_comparison) -> None:
    traces = minilm_comparison.traces
    assert tuple(traces) == soft_hard.NAMES
    for trace in traces.values():
        np.testing.assert_allclose(trace.weights.sum(-1), 1.0, atol=1e-5)
    hard = traces["hard"].weights
    assert set(np.unique(hard)) == {0.0, 1.0}
    assert ((traces["top-k"].weights > 0).sum(-1) == 3).all()
    sparse = (traces["sparsemax"].weights > 0).sum(-1)
    assert sparse.min() >= 1 and sparse.mean() < hard.shape[-1] / 2
    assert ((traces["softmax"].weights > 0).sum(-1) == hard.shape[-1]).all()


def test_layer_zero_is_the_normalizer_applied_to_softmax_scores(minilm, minilm_comparison) -> None:
    # layer 0 reads the embeddings, so its scores are the same whatever the normalizer
    scores = torch.from_numpy(trace_text(minilm, TEXT, record=("scores",)).scores[0])  # (H, Q, K)
    for name, normalize in minilm_comparison.settings.normalizers().items():
        expected = normalize(scores).numpy()
        np.testing.assert_allclose(minilm_comparison.traces[name].weights[0], expected, atol=1e-5)


def test_entropy_and_kept_fraction_per_head(minilm_comparison) -> None:
    entropy = minilm_comparison.entropy()
    kept = minilm_comparison.kept_fraction()
    weights = minilm_comparison.traces["softmax"].weights.astype(np.float64)
    by_formula = -(weights * np.log(weights)).sum(-1).mean(-1)  # [layer, head]
    np.testing.assert_allclose(entropy["softmax"], by_formula, rtol=1e-4)
    assert entropy["hard"].shape == by_formula.shape and np.abs(entropy["hard"]).max() < 1e-6
    assert (entropy["temperature"] < entropy["softmax"]).all()  # T < 1 sharpens every head
    n = weights.shape[-1]
    np.testing.assert_allclose(kept["hard"], 1 / n)
    np.testing.assert_allclose(kept["top-k"], 3 / n)
    np.testing.assert_allclose(kept["softmax"], 1.0)


def test_encoder_embedding_similarity(minilm) -> None:
    n = len(encode(minilm, TEXT, soft_hard.MAX_TOKENS).ids)
    # temperature 1 is softmax, and top-k with k = n keeps every key: both must match softmax
    same = soft_hard.output_effect(minilm, TEXT, soft_hard.NormalizerSettings(1.0, n))
    assert same.kind == "encoder"
    assert same.similarity["temperature"] == pytest.approx(1.0, abs=1e-5)
    assert same.similarity["top-k"] == pytest.approx(1.0, abs=1e-5)
    assert same.similarity["hard"] < 0.99


def test_decoder_continuations_and_loss(smollm2) -> None:
    text = "The cat sat on the"
    effect = soft_hard.output_effect(smollm2, text, soft_hard.NormalizerSettings(1.0, 2), new_tokens=1)
    assert effect.kind == "decoder" and set(effect.continuations) == set(soft_hard.NAMES)
    assert effect.continuations["temperature"] == effect.continuations["softmax"]
    ids = torch.tensor([encode(smollm2, text, soft_hard.MAX_TOKENS).ids])
    with torch.no_grad():
        logits = smollm2.model(input_ids=ids).logits[0]  # the plain model, SDPA path
    loss = torch.nn.functional.cross_entropy(logits[:-1].float(), ids[0, 1:])
    assert effect.loss["softmax"] == pytest.approx(float(loss), abs=1e-3)
    assert effect.loss["hard"] > effect.loss["softmax"]
    with pytest.raises(ValueError, match="New tokens"):
        soft_hard.output_effect(smollm2, text, soft_hard.NormalizerSettings(1.0, 2), new_tokens=0)


# ---------------------------------------------------------------- figures


def test_normalizer_heatmaps_show_one_head_per_normalizer(minilm_comparison) -> None:
    data = figures.normalizer_heatmaps(minilm_comparison, layer=2, head=5).to_dict()
    assert len(data["data"]) == 5
    for trace, name in zip(data["data"], soft_hard.NAMES, strict=True):
        expected = minilm_comparison.traces[name].weights[2, 5]
        np.testing.assert_allclose(plotly_array(trace["z"]), expected)
    titles = [a["text"] for a in data["layout"]["annotations"]]
    assert titles == ["softmax", "softmax, T = 0.5", "top-3", "sparsemax", "hard (argmax)"]
