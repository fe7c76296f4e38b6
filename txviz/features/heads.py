"""What each head writes, read off a head_out dictionary.

A head_out place is the heads' outputs concatenated (heads x d_head), so a feature's decoder row
splits into one slice per head; its share of head h is the slice's squared norm over the row's,
so the shares of a feature sum to 1. A head's score for a feature, share x density x mean
activation when firing, is what the head is expected to add to the feature's activity per token.
"""

from __future__ import annotations

import numpy as np

from txviz.features.activations import FeaturesError
from txviz.features.index import FeatureIndex
from txviz.features.sae import TopKSAE


def head_shares(sae: TopKSAE, n_heads: int) -> np.ndarray:
    """Each feature's share of each head, ||W_dec[f, slice_h]||^2 / ||W_dec[f]||^2, float64 (m, H)."""
    w_dec = sae.W_dec.detach().double().cpu().numpy()
    width = w_dec.shape[1]
    if n_heads < 1 or width % n_heads:
        raise FeaturesError(f"A dictionary {width} wide does not split into {n_heads} heads of equal width.")
    power = (w_dec.reshape(len(w_dec), n_heads, -1) ** 2).sum(-1)
    total = power.sum(-1, keepdims=True)
    # a zero row writes nothing: spread evenly, so rows still sum to 1
    return np.where(total > 0, power / np.where(total > 0, total, 1.0), 1.0 / n_heads)


def written_by(
    index: FeatureIndex, sae: TopKSAE, n_heads: int, head: int, n: int = 10
) -> list[tuple[int, float, float]]:
    """The n features head ``head`` writes most: (feature, share, score = share x density x mean), best first."""
    if not 0 <= int(head) < n_heads:
        raise FeaturesError(f"There are heads 0 to {n_heads - 1}; there is no head {head}.")
    if index.width != sae.width:
        raise FeaturesError(f"The index covers {index.width} features but the dictionary has {sae.width}.")
    share = head_shares(sae, n_heads)[:, int(head)]
    score = share * index.density * index.mean.astype(np.float64)
    fired = np.flatnonzero(index.density > 0)  # a feature that never fires says nothing about its heads
    best = fired[np.argsort(-score[fired], kind="stable")][: max(0, int(n))]
    return [(int(f), float(share[f]), float(score[f])) for f in best]
