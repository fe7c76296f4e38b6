"""Adding that is concatenating: give X and P disjoint dimensions and X + P equals [X | P] exactly.

Zero the last K of X's D dimensions and the first D - K of P's: the sum then holds X's first D - K
coordinates and P's K side by side, and every cross term x_i . p_k is a sum of products with a zero
factor, so it is exactly 0. What adding costs is the K dimensions of X given up to positions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from txviz.positional.encodings import (
    PositionalError,
    learned_position_embeddings,
    sinusoidal_encoding,
)

SOURCES = ("sinusoid (C = 10,000)", "one-hot", "MiniLM learned")


@dataclass(frozen=True)
class DisjointSum:
    """X and P moved into disjoint dimensions, their sum and the concatenation it equals."""

    x_part: np.ndarray  # (n, D) X with its last K dimensions zeroed
    p_part: np.ndarray  # (n, D) P (n, K) placed in the last K dimensions, zeros before
    added: np.ndarray  # (n, D) x_part + p_part
    concatenated: np.ndarray  # (n, D) [X[:, :D-K] | P]
    cross: np.ndarray  # (n, n) x_part p_part^T + p_part x_part^T
    kept: float  # share of X's squared norm left in its D - K dimensions

    @property
    def max_abs_difference(self) -> float:
        """Largest |(X' + P') - [X_(:D-K) | P]|: 0 when adding is concatenating."""
        return float(np.abs(self.added - self.concatenated).max())

    @property
    def max_abs_cross(self) -> float:
        """Largest cross term x'_i . p'_k + p'_i . x'_k."""
        return float(np.abs(self.cross).max())


def disjoint_sum(x: np.ndarray, p: np.ndarray) -> DisjointSum:
    """X (n, D) keeps its first D - K dimensions, P (n, K) takes the last K; their sum and concatenation."""
    n, d = x.shape
    k = p.shape[1]
    if p.shape[0] != n:
        raise PositionalError(f"X has {n} rows and P {p.shape[0]}: one position per token.")
    if not 0 < k <= d:
        raise PositionalError(f"K = {k} must lie between 1 and D = {d}.")
    dtype = np.result_type(x, p)  # one precision for both, so the sum rounds nothing
    x, p = x.astype(dtype), p.astype(dtype)
    x_part = x.copy()
    x_part[:, d - k :] = 0.0
    p_part = np.zeros_like(x)
    p_part[:, d - k :] = p
    total = float((x**2).sum())
    return DisjointSum(
        x_part=x_part,
        p_part=p_part,
        added=x_part + p_part,
        concatenated=np.concatenate([x[:, : d - k], p], axis=1),
        cross=x_part @ p_part.T + p_part @ x_part.T,
        kept=float((x_part**2).sum()) / total if total else 1.0,
    )


def positions(source: str, n: int, k: int, model: Any = None) -> np.ndarray:
    """n positions of width K: the sinusoid, one-hot rows e_i (K >= n), or MiniLM's first K columns."""
    if source == SOURCES[1]:
        if k < n:
            raise PositionalError(f"One-hot positions need K >= n: {n} tokens need {n} dimensions, K is {k}.")
        return np.eye(n, k, dtype=np.float32)
    if source == SOURCES[2]:
        return learned_position_embeddings(model)[:n, :k]
    return sinusoidal_encoding(n, k)
