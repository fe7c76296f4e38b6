"""Two models side by side: per-layer profiles on a common depth axis (0 = first layer, 1 = last)."""

from __future__ import annotations

import numpy as np

from txviz.heads.runs import HeadScores

QUANTITIES = ("entropy (nats)", "distance (tokens)")  # and every detector's best head per layer


def depth(n_layers: int) -> np.ndarray:
    """Each layer's relative depth: a 6-layer and a 30-layer model share one axis from 0 to 1."""
    return np.linspace(0.0, 1.0, n_layers) if n_layers > 1 else np.zeros(1)


def layer_at(relative_depth: float, n_layers: int) -> int:
    """The layer nearest a relative depth in [0, 1]."""
    return int(round(min(max(relative_depth, 0.0), 1.0) * (n_layers - 1)))


def profile(scores: HeadScores, quantity: str) -> tuple[np.ndarray, np.ndarray]:
    """(depth, value per layer): the head mean of entropy or distance, or a detector's best head."""
    if quantity == QUANTITIES[0]:
        values = np.nanmean(scores.entropy, axis=1)
    elif quantity == QUANTITIES[1]:
        values = np.nanmean(scores.distance, axis=1)
    else:
        per_head = scores.scores[quantity]
        values = np.full(per_head.shape[0], np.nan)
        measured = ~np.isnan(per_head).all(axis=1)
        values[measured] = np.nanmax(per_head[measured], axis=1)
    return depth(len(values)), values


def quantity_label(scores: HeadScores, quantity: str) -> str:
    labels = {d.name: d.label for d in scores.detectors}
    return f"{labels[quantity]}: best head" if quantity in labels else f"{quantity}: mean of heads"
