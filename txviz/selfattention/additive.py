"""Additive attention (Bahdanau et al., 2015): score(q, k) = w^T tanh(W q + U k), beside q . k / sqrt(d)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from txviz.selfattention import toy as ta

MAX_HIDDEN = 32


@dataclass(frozen=True)
class AdditiveWeights:
    """The small feed-forward net that scores a query against a key."""

    w_query: np.ndarray  # (h, d) W
    w_key: np.ndarray  # (h, d) U
    w_out: np.ndarray  # (h,) w


@dataclass(frozen=True)
class AdditiveResult:
    """Additive and scaled dot-product attention on the same queries, keys and values."""

    hidden: np.ndarray  # (N, N, h) tanh(W q_n + U k_m)
    scores: np.ndarray  # (N, N) w^T tanh(W q_n + U k_m)
    weights: np.ndarray  # (N, N) softmax of each row
    output: np.ndarray  # (N, d) weights @ V
    dot_weights: np.ndarray  # (N, N) softmax(Q K^T / sqrt(d))
    dot_output: np.ndarray  # (N, d)


def seeded_weights(d: int, hidden: int, seed: int = 0) -> AdditiveWeights:
    """W, U ~ N(0, 1/d) and w ~ N(0, 1/h): seeded, rounded to two decimals to be readable."""
    if not 1 <= hidden <= MAX_HIDDEN:
        raise ta.ToyAttentionError(f"The hidden size h must be between 1 and {MAX_HIDDEN} (got {hidden}).")
    rng = np.random.default_rng(seed + 3)
    w_query = np.round(rng.normal(scale=1 / np.sqrt(d), size=(hidden, d)), 2)
    w_key = np.round(rng.normal(scale=1 / np.sqrt(d), size=(hidden, d)), 2)
    w_out = np.round(rng.normal(scale=1 / np.sqrt(hidden), size=hidden), 2)
    return AdditiveWeights(w_query, w_key, w_out)


def additive_scores(queries: np.ndarray, keys: np.ndarray, weights: AdditiveWeights) -> tuple:
    """(tanh(W q_n + U k_m) of shape (N, M, h), scores w^T tanh(...) of shape (N, M))."""
    if queries.shape[1] != weights.w_query.shape[1] or keys.shape[1] != weights.w_key.shape[1]:
        raise ta.ToyAttentionError("W and U must take vectors of the queries' and keys' size.")
    projected_q = queries @ weights.w_query.T  # (N, h)
    projected_k = keys @ weights.w_key.T  # (M, h)
    hidden = np.tanh(projected_q[:, None, :] + projected_k[None, :, :])  # (N, M, h)
    return hidden, hidden @ weights.w_out


def additive_attention(head: ta.HeadResult, weights: AdditiveWeights) -> AdditiveResult:
    """Both scorings on one toy head's Q, K, V: additive softmax(w^T tanh(Wq + Uk)) and dot-product."""
    hidden, scores = additive_scores(head.queries, head.keys, weights)
    attention = ta.softmax_rows(scores)
    return AdditiveResult(hidden, scores, attention, attention @ head.values, head.weights, head.output)


def score_rows(result: AdditiveResult, head: ta.HeadResult, query: int, tokens: list[str]) -> list[dict]:
    """One query's two scores per key, additive and scaled dot-product, with both weights."""
    return [
        {
            "key": tokens[m],
            "w·tanh(Wq + Uk)": float(result.scores[query, m]),
            "additive weight": float(result.weights[query, m]),
            "q·k / √d": float(head.scaled_scores[query, m]),
            "dot-product weight": float(head.weights[query, m]),
        }
        for m in range(len(tokens))
    ]
