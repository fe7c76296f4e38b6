"""A decomposition in words: each pair named by what wrote it and where, with its share of the score; a
feature split's terms and largest feature pairs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from txviz.whyattend.decompose import Decomposition
from txviz.whyattend.stream import Part


def phrase(part: Part, token: str) -> str:
    """'L1H4's output at 'it'', 'the embedding of 'animal'', 'the biases'."""
    at = repr(token)
    if part.kind == "token":
        return f"the embedding of {at}"
    if part.kind in ("position", "segment"):
        return f"the {part.kind} embedding at {at}"
    if part.kind == "head":
        return f"{part.name}'s output at {at}"
    if part.kind == "ffn":
        return f"L{part.layer} MLP's output at {at}"
    if part.kind == "attn":
        return f"L{part.layer} attention's output at {at}"
    if part.kind == "o_bias":
        return f"L{part.layer}'s output bias"
    if part.kind == "feature":
        return f"feature {part.feature} at {at}"
    if part.kind == "dict_bias":
        return "the dictionary's bias"
    if part.kind == "error":
        return f"the reconstruction error at {at}"
    return "the biases"


def ranked(d: Decomposition, tokens: list[str], top: int = 8) -> list[str]:
    """The ``top`` largest pairs by size, one line each: "A x B: +3.1 of 5.2"."""
    flat = np.argsort(-np.abs(d.pairs), axis=None)[:top]
    key_token = tokens[d.key]
    lines = []
    for index in flat:
        a, b = np.unravel_index(index, d.pairs.shape)
        lines.append(
            f"{phrase(d.parts_q[a], tokens[d.query])} x {phrase(d.parts_k[b], key_token)}: "
            f"{d.pairs[a, b]:+.3g} of {d.score:.3g}"
        )
    return lines


def key_shares(d: Decomposition) -> list[tuple[str, float]]:
    """Key-side parts by their column sum's share of the sum of |column sums|, largest first."""
    sums = d.key_sums
    total = np.abs(sums).sum() or 1.0
    order = np.argsort(-np.abs(sums))
    return [(d.parts_k[n].name, float(sums[n] / total)) for n in order]


@dataclass(frozen=True)
class Terms:
    """A feature split's score in three terms that sum to it, and the error's share of the pairs."""

    features: float  # (query feature) x (key feature) pairs
    bias: float  # pairs with a bias (the dictionary's or the block's) on a side and no error
    error: float  # pairs with the reconstruction error on either side
    error_share: float  # the error pairs' sum of sizes over every pair's


def _is(parts, kind: str) -> np.ndarray:
    return np.array([p.kind == kind for p in parts])


def terms(d: Decomposition) -> Terms:
    """The score of a feature split as features x features, bias and error terms."""
    error = _is(d.parts_q, "error")[:, None] | _is(d.parts_k, "error")[None]
    feature = _is(d.parts_q, "feature")[:, None] & _is(d.parts_k, "feature")[None]
    bias = ~error & ~feature
    size = np.abs(d.pairs)
    return Terms(
        float(d.pairs[feature].sum()),
        float(d.pairs[bias].sum()),
        float(d.pairs[error].sum()),
        float(size[error].sum() / (size.sum() or 1.0)),
    )


def feature_pairs(d: Decomposition, top: int = 8) -> list[tuple[int, int, float]]:
    """The ``top`` largest (query feature, key feature, what the pair adds), by size."""
    rows = np.flatnonzero(_is(d.parts_q, "feature"))
    cols = np.flatnonzero(_is(d.parts_k, "feature"))
    grid = d.pairs[np.ix_(rows, cols)]
    order = np.argsort(-np.abs(grid), axis=None)[:top]
    found = []
    for index in order:
        a, b = np.unravel_index(index, grid.shape)
        found.append((d.parts_q[rows[a]].feature, d.parts_k[cols[b]].feature, float(grid[a, b])))
    return found


def key_place(d: Decomposition, tokens: list[str]) -> str:
    """The key side's token, or in contrast mode the key against the other key."""
    if d.mode == "contrast":
        return f"{tokens[d.key]!r} rather than {tokens[d.contrast]!r}"
    return repr(tokens[d.key])


def feature_ranked(d: Decomposition, tokens: list[str], top: int = 8) -> list[str]:
    """The ``top`` largest (query feature) x (key feature) pairs, one line each, with what they add."""
    query, key = repr(tokens[d.query]), key_place(d, tokens)
    return [
        f"feature {a} at {query} (query) x feature {b} at {key} (key) adds {value:+.3g}"
        for a, b, value in feature_pairs(d, top)
    ]
