"""Aggregates against their formulas on small hand-made attention."""

import warnings

import numpy as np
import torch

from txviz.core import aggregate, attention
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


def test_one_entropy_for_tensors_and_traces_with_one_floor():
    w = random_weights((2, 3, 4, 6)).astype(np.float64)
    w[0, 0, 0] = 0.0  # a fully masked row
    w[0, 0, 1] = np.eye(6)[2]  # a one-hot row: the zeros must add nothing, not NaN
    w[1, 2, 3, :3], w[1, 2, 3, 3:] = 1e-13, (1 - 3e-13) / 3  # weights under the floor
    by_formula = -np.sum(np.where(w > 0, w * np.log(np.where(w > 0, w, 1)), 0.0), axis=-1)  # 0 log 0 = 0
    rows = attention.entropy(torch.from_numpy(w)).numpy()
    assert rows.dtype == np.float64 and rows[0, 0, 0] == 0.0 and rows[0, 0, 1] == 0.0
    np.testing.assert_allclose(rows, by_formula, rtol=0, atol=3 * 3e-11)  # the floor's documented bound
    locked = w.astype(np.float32)
    locked.flags.writeable = False  # cached traces are read-only
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        heads = aggregate.head_entropy(locked)
    np.testing.assert_allclose(heads, by_formula.mean(-1), atol=1e-5)
    assert attention.ENTROPY_FLOOR == 1e-12


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
