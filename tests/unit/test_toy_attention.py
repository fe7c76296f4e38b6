"""The toy self-attention checked against hand computations and the book's sums."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import plotly_array

from txviz.selfattention import toy as ta


def identity_head(d: int) -> ta.HeadWeights:
    eye, zero = np.eye(d), np.zeros(d)
    return ta.HeadWeights(eye, zero, eye, zero, eye, zero)


def test_softmax_rows_by_hand():
    weights = ta.softmax_rows(np.array([[0.0, math.log(2), math.log(3)], [1.0, 1.0, 1.0]]))
    np.testing.assert_allclose(weights[0], [1 / 6, 2 / 6, 3 / 6])
    np.testing.assert_allclose(weights[1], [1 / 3, 1 / 3, 1 / 3])
    np.testing.assert_allclose(ta.softmax_rows(np.array([[1000.0, 0.0]])), [[1.0, 0.0]])


def test_small_head_by_hand():
    # X rows are tokens; identity weights make Q = K = V = X.
    x = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    result = ta.self_attention_head(x, identity_head(2))
    np.testing.assert_allclose(result.scores, [[1, 0, 1], [0, 1, 1], [1, 1, 2]])
    assert result.scale == pytest.approx(math.sqrt(2))
    e = math.exp(1 / math.sqrt(2))
    np.testing.assert_allclose(result.weights[0], np.array([e, 1, e]) / (2 * e + 1))
    np.testing.assert_allclose(result.weights.sum(axis=1), 1.0)
    np.testing.assert_allclose(result.output[0], [2 * e / (2 * e + 1), (1 + e) / (2 * e + 1)])


def test_biases_are_added_to_q_k_v():
    x = np.array([[1.0, 2.0]])
    eye = np.eye(2)
    head = ta.HeadWeights(eye, np.array([1.0, 0.0]), eye, np.zeros(2), 2 * eye, np.array([0.0, -1]))
    result = ta.self_attention_head(x, head)
    np.testing.assert_allclose(result.queries, [[2, 2]])
    np.testing.assert_allclose(result.values, [[2, 3]])
    np.testing.assert_allclose(result.output, [[2, 3]])  # one token attends only to itself


def test_unscaled_scores_are_not_divided():
    x = np.array([[1.0, 0.0], [0.0, 1.0]])
    result = ta.self_attention_head(x, identity_head(2), scaled=False)
    assert result.scale == 1.0
    np.testing.assert_allclose(result.scaled_scores, result.scores)


def test_matrix_form_equals_the_token_by_token_sums():
    config = ta.ToyConfig(n_tokens=5, d_model=6, n_heads=3, seed=4)
    x = ta.toy_input(config)
    for head in ta.toy_heads(config):
        matrix = ta.self_attention_head(x, head).output
        np.testing.assert_allclose(matrix, ta.self_attention_loop(x, head), atol=1e-12)


def test_routing_sums_to_the_output():
    config = ta.ToyConfig()
    result = ta.self_attention_head(ta.toy_input(config), ta.toy_heads(config)[0])
    for n in range(config.n_tokens):
        np.testing.assert_allclose(ta.routing(result, n).sum(axis=0), result.output[n], atol=1e-12)


def test_multi_head_concatenates_then_mixes():
    config = ta.ToyConfig(n_tokens=3, d_model=4, n_heads=2, seed=0)
    x, heads, omega_c = (
        ta.toy_input(config),
        ta.toy_heads(config),
        ta.toy_omega_c(config),
    )
    result = ta.multi_head_attention(x, heads, omega_c)
    assert result.concatenated.shape == (3, 4) and result.output.shape == (3, 4)
    np.testing.assert_allclose(result.concatenated[:, :2], result.heads[0].output)
    np.testing.assert_allclose(result.concatenated[:, 2:], result.heads[1].output)
    np.testing.assert_allclose(result.output, result.concatenated @ omega_c.T)
    assert not np.allclose(result.heads[0].weights, result.heads[1].weights)


def test_toy_is_seeded_and_defaults_to_three_by_four():
    config = ta.ToyConfig()
    assert (config.n_tokens, config.d_model) == (3, 4)
    np.testing.assert_array_equal(ta.toy_input(config), ta.toy_input(ta.ToyConfig()))
    assert not np.array_equal(ta.toy_input(config), ta.toy_input(ta.ToyConfig(seed=1)))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_tokens": 0}, "N must be"),
        ({"d_model": 0}, "D must be"),
        ({"d_model": 5, "n_heads": 2}, "split evenly"),
        ({"n_tokens": 99}, "N must be"),
    ],
)
def test_bad_sizes_give_a_clear_message(kwargs, message):
    with pytest.raises(ta.ToyAttentionError, match=message):
        ta.ToyConfig(**kwargs)


def test_bad_input_gives_a_clear_message():
    head = identity_head(2)
    with pytest.raises(ta.ToyAttentionError, match="finite"):
        ta.self_attention_head(np.array([[1.0, np.nan]]), head)
    with pytest.raises(ta.ToyAttentionError, match="number"):
        ta.self_attention_head(np.array([["a", "b"]], dtype=object), head)
    with pytest.raises(ta.ToyAttentionError, match="expect D"):
        ta.self_attention_head(np.ones((2, 3)), head)
    with pytest.raises(ta.ToyAttentionError, match="rows"):
        ta.self_attention_head(np.ones(3), head)


def test_figures_carry_the_numbers():
    from txviz.selfattention import figures as figs

    config = ta.ToyConfig()
    x, heads, omega_c = ta.toy_input(config), ta.toy_heads(config), ta.toy_omega_c(config)
    result = ta.multi_head_attention(x, heads, omega_c)
    tokens = figs.token_labels(3)
    assert tokens == ["x₁", "x₂", "x₃"]

    weights = figs.weights_figure(result.heads[0].weights, tokens, "A").to_dict()
    np.testing.assert_allclose(plotly_array(weights["data"][0]["z"]), result.heads[0].weights)
    assert weights["layout"]["yaxis"]["title"]["text"] == "query"
    assert weights["layout"]["xaxis"]["title"]["text"] == "key"

    sankey = figs.routing_figure(result.heads[0], tokens).to_dict()["data"][0]
    assert len(sankey["link"]["value"]) == 9
    # The link from value 2 into output 1 carries weight a[1, 2] (query 1, key 2).
    index = next(
        i
        for i, (s, t) in enumerate(zip(sankey["link"]["source"], sankey["link"]["target"], strict=True))
        if s == 2 and t == 3 + 1
    )
    assert sankey["link"]["value"][index] == pytest.approx(result.heads[0].weights[1, 2])

    both = figs.heads_figure(result, tokens).to_dict()["data"]
    assert len(both) == 2
    np.testing.assert_allclose(plotly_array(both[1]["z"]), result.heads[1].weights)

    steps = figs.query_steps_figure(
        ["a", "b", "a"], np.array([1.0, -np.inf, 0.5]), np.array([0.6, 0.0, 0.4]), "q"
    ).to_dict()["data"]
    assert np.isnan(plotly_array(steps[0]["y"])[1])  # a masked key is left blank
    np.testing.assert_allclose(plotly_array(steps[1]["y"]), [0.6, 0.0, 0.4])


def test_real_query_step_on_a_synthetic_causal_trace():
    from txviz.core.trace import AttentionTrace

    rng = np.random.default_rng(3)
    q = rng.normal(size=(1, 2, 4, 8)).astype(np.float32)  # [layer, head, pos, d_head]
    k = rng.normal(size=(1, 2, 4, 8)).astype(np.float32)
    scores = np.einsum("lhqd,lhkd->lhqk", q, k) / np.sqrt(8)
    scores = np.where(np.tril(np.ones((4, 4), bool)), scores, -np.inf).astype(np.float32)
    weights = ta.softmax_rows(scores.astype(np.float64)).astype(np.float32)
    tokens = ("a", "b", "a", "c")
    trace = AttentionTrace(tokens, tokens, weights, "toy", "causal", scores=scores, queries=q, keys=k)

    step = ta.real_query_step(trace, 0, 1, 2)
    assert step.query_token == "a" and step.scale == pytest.approx(math.sqrt(8))
    np.testing.assert_array_equal(step.masked, [False, False, False, True])
    assert step.weights[3] == 0.0
    assert step.dots[0] == pytest.approx(float(q[0, 1, 2] @ k[0, 1, 0]), rel=1e-6)
    np.testing.assert_array_equal(step.captured_weights, weights[0, 1, 2])
    assert step.max_weight_difference < 1e-6 and step.max_score_difference < 1e-5
    with pytest.raises(ta.ToyAttentionError, match="outside"):
        ta.real_query_step(trace, 0, 2, 0)
    with pytest.raises(ta.ToyAttentionError, match="recorded no"):
        ta.real_query_step(AttentionTrace(tokens, tokens, weights, "toy", "causal"), 0, 0, 0)


def _softmax_by_hand(scores: np.ndarray) -> np.ndarray:
    shifted = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_scipy_softmax_rows_equal_the_written_out_formula(dtype):
    from txviz.selfattention import linear as la

    rng = np.random.default_rng(0)
    scores = (rng.normal(scale=30, size=(3, 5, 7))).astype(dtype)  # large: the max shift matters
    scores[0, :, 4:] = -np.inf  # masked keys
    scores[1, 2] = 7.0  # a tie across a whole row
    weights = ta.softmax_rows(scores)
    assert weights.dtype == dtype
    np.testing.assert_array_equal(weights, _softmax_by_hand(scores))
    assert np.all(weights[0, :, 4:] == 0.0)
    q, k = rng.normal(size=(2, 6, 4))
    masked = np.where(np.tril(np.ones((6, 6), bool)), q @ k.T / 2.0, -np.inf)
    np.testing.assert_array_equal(la.softmax_weights(q, k, causal=True), _softmax_by_hand(masked))
