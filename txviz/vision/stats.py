"""What a vision transformer's attention shows on its patch grid: maps, rollout, entropy, distance."""

from __future__ import annotations

import numpy as np

from txviz.core import aggregate
from txviz.vision.patches import PatchGrid
from txviz.vision.runs import VisionAttention


def cls_attention(weights: np.ndarray, grid: PatchGrid, layer: int, head: int | None = None) -> np.ndarray:
    """[CLS] -> patches of one head (or the mean over heads when head is None): (rows, cols)."""
    return query_attention(weights, grid, layer, head, query=0)


def patch_attention(
    weights: np.ndarray, grid: PatchGrid, layer: int, head: int | None, patch: int
) -> np.ndarray:
    """Attention from one patch to every patch: (rows, cols)."""
    return query_attention(weights, grid, layer, head, query=grid.token_of_patch(patch))


def query_attention(
    weights: np.ndarray, grid: PatchGrid, layer: int, head: int | None, query: int
) -> np.ndarray:
    """Row `query` of weights [layer, head, query_pos, key_pos] on the patch grid: (rows, cols)."""
    per_head = weights[layer, :, query, :]  # (H, T)
    row = per_head.mean(axis=0) if head is None else per_head[head]  # (T,)
    return grid.to_grid(row)


def attention_rollout(weights: np.ndarray, residual: bool = True) -> np.ndarray:
    """Attention rollout (Abnar & Zuidema 2020): (L, H, T, T) -> (L, T, T), up to each layer."""
    return aggregate.attention_rollout(weights, residual)


def attention_entropy(weights: np.ndarray) -> np.ndarray:
    """Mean entropy in nats of each head's attention rows, as the Attention Explorer's: (L, H, T, T) -> (L, H)."""
    return aggregate.head_entropy(weights.astype(np.float64))


def mean_attention_distance(weights: np.ndarray, grid: PatchGrid) -> np.ndarray:
    """Mean distance in input pixels from each patch to the patches it attends to: (L, H).

    As in Dosovitskiy et al. (2021): for patch queries, attention over the patch keys
    (renormalised without the prefix tokens) weights the distance between patch centres.
    """
    centres = grid.patch_centres()  # (P, 2)
    distance = np.linalg.norm(centres[:, None, :] - centres[None, :, :], axis=-1)  # (P, P)
    patches = weights[..., grid.n_prefix :, grid.n_prefix :].astype(np.float64)  # (L, H, P, P)
    patches = patches / np.clip(patches.sum(axis=-1, keepdims=True), 1e-12, None)
    return (patches * distance).sum(axis=-1).mean(axis=-1)


VIEWS = ("[CLS] attention", "Attention from a patch", "Attention rollout from [CLS]")


def overlay_values(
    result: VisionAttention, view: str, layer: int, head: int | None, patch: int = 0
) -> tuple[np.ndarray, str]:
    """The (rows, cols) values to lay over the image for one view, and a title saying what they are."""
    weights, grid = result.trace.weights, result.grid
    heads = "mean over heads" if head is None else f"head {head}"
    if view == VIEWS[0]:
        return cls_attention(weights, grid, layer, head), f"[CLS] attention, layer {layer}, {heads}"
    if view == VIEWS[1]:
        row, col = grid.position(patch)
        values = patch_attention(weights, grid, layer, head, patch)
        return values, f"Attention from patch {patch} (row {row}, col {col}), layer {layer}, {heads}"
    if view == VIEWS[2]:
        rollout = attention_rollout(weights)[layer]  # (T, T)
        return grid.to_grid(rollout[0]), f"Attention rollout from [CLS] through layers 0 to {layer}"
    raise ValueError(f"Unknown view {view!r}; choose one of {VIEWS}.")
