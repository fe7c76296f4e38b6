"""Attention against attribution: a linear toy's attributions are its weights x inputs; real models."""

import numpy as np
import pytest
import torch

from txviz.core.errors import WrongModelKind
from txviz.heads import attribution


def test_linear_toy_attributions_equal_weights_times_inputs():
    torch.manual_seed(0)
    w = torch.randn(5, 3)
    x = torch.randn(1, 5, 3)

    def forward(inputs):
        return (inputs * w).sum(dim=(1, 2))

    expected = w * x[0]
    gxi = attribution.gradient_x_input(forward, x)
    torch.testing.assert_close(gxi[0], expected)
    ig, delta = attribution.integrated_gradients(forward, x, steps=4)
    torch.testing.assert_close(ig[0], expected)  # a linear path integral is exact at any step count
    assert delta < 1e-5
    baseline = torch.randn(1, 5, 3)
    ig_b, _ = attribution.integrated_gradients(forward, x, baseline, steps=4)
    torch.testing.assert_close(ig_b[0], w * (x[0] - baseline[0]))


def test_spearman_matrix_and_too_few_tokens():
    measures = {
        "a": np.array([0.1, 0.2, 0.7]),
        "b": np.array([0.7, 0.2, 0.1]),
        "c": np.array([0.2, 0.3, 0.5]),
    }
    rho = attribution.spearman_matrix(measures, np.ones(3, dtype=bool))
    np.testing.assert_allclose(rho, [[1, -1, 1], [-1, 1, -1], [1, -1, 1]])
    with pytest.raises(attribution.AttributionError, match="at least 3 tokens"):
        attribution.spearman_matrix(measures, np.array([True, True, False]))


def test_minilm_similarity_comparison(minilm):
    result = attribution.explain_similarity(minilm, "A man plays a guitar.", "Someone makes music.", steps=16)
    assert result.tokens[0] == "[CLS]" and len(result.tokens) == 8
    for values in result.measures.values():
        assert values.shape == (8,) and np.all(values >= 0)
        np.testing.assert_allclose(values.sum(), 1.0)
    assert not result.compared[0] and not result.compared[-1]  # [CLS] and [SEP] left out of the ranks
    assert result.correlations.shape == (4, 4)
    np.testing.assert_allclose(np.diag(result.correlations), 1.0)
    assert result.ig_delta < 0.05  # the path integral adds up to the change in similarity
    with pytest.raises(WrongModelKind, match="cannot explain a next-token prediction.*Choose a decoder"):
        attribution.explain_next_token(minilm, "Hello there")


def test_smollm2_next_token_and_a_one_token_text(smollm2):
    result = attribution.explain_next_token(smollm2, "The capital of France is", steps=8)
    assert "Paris" in result.target
    np.testing.assert_allclose(result.measures["attention rollout"].sum(), 1.0)
    with pytest.raises(attribution.AttributionError, match="at least 3 tokens"):
        attribution.explain_next_token(smollm2, "Hi")
