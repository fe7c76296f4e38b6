"""A decomposition in words: each pair named by what wrote it and where, with its share of the score."""

from __future__ import annotations

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
