"""Aggregates against their formulas on small hand-made attention."""

import numpy as np

from txviz.core import aggregate
from txviz.core.trace import AttentionTrace


def random_weights(shape, seed=0):
    w = np.random.default_rng(seed).random(shape).astype(np.float32)
    return w / w.sum(-1, keepdims=True)


def test_rollout_matches_the_formula_by_hand():
    w = random_weights((2, 3, 4, 4))
    a = [0.5 * w[layer].mean(0) + 0.5 * np.eye(4) for layer in range(2)]
    a = [m / m.sum(-1, keepdims=True) for m in a]
    rollout = aggregate.attention_rollout(w)
    np.testing.assert_allclose(rollout[0], a[0], atol=1e-6)
    np.testing.assert_allclose(rollout[1], a[1] @ a[0], atol=1e-6)
    np.testing.assert_allclose(rollout.sum(-1), 1.0, atol=1e-6)


def test_entropy_of_uniform_rows_is_log_n_and_one_hot_is_zero():
    uniform = np.full((1, 1, 5, 5), 0.2, dtype=np.float32)
    np.testing.assert_allclose(aggregate.head_entropy(uniform), np.log(5), atol=1e-6)
    np.testing.assert_allclose(aggregate.head_entropy(np.eye(5)[None, None]), 0.0, atol=1e-6)


def test_mean_distance():
    previous_token = np.eye(4, k=-1)[None, None]
    previous_token[0, 0, 0, 0] = 1.0  # the first token can only look at itself
    np.testing.assert_allclose(aggregate.mean_attention_distance(previous_token), [[0.75]])
    assert aggregate.mean_attention_distance(np.eye(4)[None, None])[0, 0] == 0.0


def trace_of(weights, tokens, special):
    return AttentionTrace(tokens, tokens, weights, "m", "self", special=special, raw_tokens=tokens)


def test_hide_special_drops_rows_and_columns_and_renormalises():
    w = random_weights((1, 2, 4, 4))
    trace = aggregate.hide_special(trace_of(w, ("[CLS]", "a", "b", "[SEP]"), (True, False, False, True)))
    assert trace.query_tokens == ("a", "b")
    expected = w[:, :, 1:3, 1:3] / w[:, :, 1:3, 1:3].sum(-1, keepdims=True)
    np.testing.assert_allclose(trace.weights, expected, atol=1e-6)


def test_merge_words_sums_keys_and_averages_queries():
    w = random_weights((1, 1, 3, 3))
    merged = aggregate.merge_words(
        trace_of(w, ("token", "ization", "!"), (False,) * 3), [0, 0, 1], ["tokenization", "!"]
    )
    assert merged.query_tokens == ("tokenization", "!")
    to_word = np.stack([w[0, 0, :, :2].sum(-1), w[0, 0, :, 2]], -1)  # (3 queries, 2 words)
    np.testing.assert_allclose(merged.weights[0, 0, 0], to_word[:2].mean(0), atol=1e-6)
    np.testing.assert_allclose(merged.weights[0, 0, 1], to_word[2], atol=1e-6)
    np.testing.assert_allclose(merged.weights.sum(-1), 1.0, atol=1e-6)


def test_head_max_and_mean():
    w = random_weights((2, 3, 4, 4))
    np.testing.assert_array_equal(aggregate.head_max(w), w.max(1))
    np.testing.assert_allclose(aggregate.head_mean(w).sum(-1), 1.0, atol=1e-6)
