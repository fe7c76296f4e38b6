"""Views derived from a trace: head aggregates, rollout, entropy, distance, token regrouping."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import torch

from txviz.core import attention
from txviz.core.trace import AttentionTrace


def renormalize(weights: np.ndarray) -> np.ndarray:
    """Rows scaled to sum to 1 again; a row of zeros stays zero."""
    total = weights.sum(axis=-1, keepdims=True)
    return np.divide(weights, total, out=np.zeros_like(weights), where=total > 0)


def hide_special(trace: AttentionTrace) -> AttentionTrace:
    """Drop [CLS]/[SEP]-like tokens from both axes and renormalise rows (attention sinks)."""
    if not any(trace.special) or trace.query_tokens != trace.key_tokens:
        return trace
    keep = np.array([not s for s in trace.special])
    if not keep.any():
        return trace
    weights = renormalize(trace.weights[:, :, keep][:, :, :, keep])
    tokens = tuple(t for t, k in zip(trace.query_tokens, keep, strict=True) if k)
    raw = tuple(t for t, k in zip(trace.raw_tokens, keep, strict=False) if k)
    return dataclasses.replace(
        trace,
        weights=weights,
        query_tokens=tokens,
        key_tokens=tokens,
        raw_tokens=raw,
        special=tuple(False for _ in tokens),
        scores=None,
        queries=None,
        keys=None,
    )


def merge_words(trace: AttentionTrace, groups: list[int], text_of_word: list[str]) -> AttentionTrace:
    """Sub-words joined into words: attention to a word is summed, from a word averaged."""
    groups_arr = np.asarray(groups)
    n_words = int(groups_arr.max()) + 1
    member = np.zeros((n_words, len(groups)), dtype=np.float32)  # (W, T) one-hot membership
    member[groups_arr, np.arange(len(groups))] = 1.0
    to_word = trace.weights @ member.T  # (L, H, T, W): sum over a word's key pieces
    from_word = (member / member.sum(axis=1, keepdims=True)) @ to_word  # mean over query pieces
    tokens = tuple(text_of_word)
    return dataclasses.replace(
        trace,
        weights=from_word.astype(np.float32),
        query_tokens=tokens,
        key_tokens=tokens,
        raw_tokens=tokens,
        special=tuple(
            all(trace.special[i] for i in np.flatnonzero(groups_arr == w)) if trace.special else False
            for w in range(n_words)
        ),
        scores=None,
        queries=None,
        keys=None,
    )


def word_texts(tokens: tuple[str, ...], groups: list[int]) -> list[str]:
    """Readable text of each word group: its pieces joined."""
    words: dict[int, str] = {}
    for token, group in zip(tokens, groups, strict=True):
        words[group] = words.get(group, "") + token
    return [words[g] for g in sorted(words)]


def head_mean(weights: np.ndarray) -> np.ndarray:
    """[layer, head, Q, K] -> [layer, Q, K], the mean over heads."""
    return weights.mean(axis=1)


def head_max(weights: np.ndarray) -> np.ndarray:
    """[layer, head, Q, K] -> [layer, Q, K], the max over heads (rows no longer sum to 1)."""
    return weights.max(axis=1)


def attention_rollout(weights: np.ndarray, residual: bool = True) -> np.ndarray:
    """Abnar and Zuidema (2020): [layer, head, T, T] -> [layer, T, T], rollout up to each layer."""
    n = weights.shape[-1]
    rollout = np.eye(n, dtype=np.float64)
    out = np.empty((weights.shape[0], n, n), dtype=np.float32)
    for layer, heads in enumerate(weights.astype(np.float64)):
        a = heads.mean(axis=0)
        if residual:  # the skip connection carries half of each token's own state forward
            a = 0.5 * a + 0.5 * np.eye(n)
        a = renormalize(a)
        rollout = a @ rollout
        out[layer] = rollout
    return out


def head_entropy(weights: np.ndarray) -> np.ndarray:
    """[layer, head, Q, K] -> [layer, head]: mean over queries of each row's entropy (nats)."""
    with warnings.catch_warnings():  # cached traces are read-only; the entropy only reads them
        warnings.simplefilter("ignore", UserWarning)
        rows = attention.entropy(torch.from_numpy(np.ascontiguousarray(weights)))  # no copy
    return rows.mean(dim=-1).numpy()


def mean_attention_distance(weights: np.ndarray) -> np.ndarray:
    """[layer, head, Q, K] -> [layer, head]: expected |query - key| in positions, averaged over queries."""
    q, k = weights.shape[-2:]
    shift = max(k - q, 0)  # queries are the last q of k positions (cache-aligned)
    distance = np.abs(np.arange(q)[:, None] + shift - np.arange(k)[None, :])
    return (weights * distance).sum(axis=-1).mean(axis=-1)
