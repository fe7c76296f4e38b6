"""Swin's patch merging: each 2 x 2 group of patches becomes one, until the grid is one window.

Window attention keeps the cost linear in the number of patches; merging halves the grid each stage
(concatenate the 2 x 2 neighbours: 4C channels, then a linear map to 2C), so a fixed window covers
four times the image each time, and at the last stage one window sees everything.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from txviz.masks.patterns import MaskError, swin_regions

MAX_STAGES = 8


def merge_patches(features: np.ndarray) -> np.ndarray:
    """(H, W, C) -> (H/2, W/2, 4C): Swin's order x[0::2, 0::2], x[1::2, 0::2], x[0::2, 1::2], x[1::2, 1::2].

    An odd side is padded with a row or column of zeros first, as Swin does.
    """
    if features.ndim != 3:
        raise MaskError(f"Patch features must be (rows, columns, channels), got shape {features.shape}.")
    height, width, _ = features.shape
    features = np.pad(features, ((0, height % 2), (0, width % 2), (0, 0)))
    parts = (features[0::2, 0::2], features[1::2, 0::2], features[0::2, 1::2], features[1::2, 1::2])
    return np.concatenate(parts, axis=-1)


def reduction(channels: int, seed: int = 0) -> np.ndarray:
    """A seeded linear map 4C -> 2C, Swin's `reduction` layer (no bias); (2C, 4C)."""
    rng = np.random.default_rng(seed)
    return rng.normal(scale=1 / np.sqrt(4 * channels), size=(2 * channels, 4 * channels))


@dataclass(frozen=True)
class Stage:
    """One stage of the hierarchy: its grid, channels, windows and how much image a patch covers."""

    rows: int
    columns: int
    channels: int
    window: int
    patch_span: int  # one patch here covers patch_span x patch_span patches of the first stage
    regions: np.ndarray  # (rows, columns) window index of each patch

    @property
    def n_windows(self) -> int:
        return int(self.regions.max()) + 1

    @property
    def attention_pairs(self) -> int:
        """Query-key pairs window attention computes: each window's patches squared."""
        return int((np.bincount(self.regions.ravel()) ** 2).sum())


def merge_stages(rows: int, columns: int, window: int, channels: int = 4, seed: int = 0):
    """Stages from the first grid down to one window, and the features at each (seeded input).

    Returns (stages, features) where features[s] is the (rows, columns, channels) array of stage s.
    """
    if not (1 <= rows <= 64 and 1 <= columns <= 64):
        raise MaskError(f"The patch grid must be 1 to 64 patches a side (got {rows} x {columns}).")
    if window < 1:
        raise MaskError(f"The window must be at least one patch (got {window}).")
    rng = np.random.default_rng(seed)
    features = [rng.normal(size=(rows, columns, channels))]
    stages = [Stage(rows, columns, channels, window, 1, swin_regions(rows, columns, window))]
    while max(stages[-1].rows, stages[-1].columns) > window:
        if len(stages) > MAX_STAGES:
            raise MaskError("Too many stages: use a larger window.")
        last = stages[-1]
        merged = (
            merge_patches(features[-1]) @ reduction(last.channels, seed + len(stages)).T
        )  # (h/2, w/2, 2C)
        features.append(merged)
        h, w = merged.shape[:2]
        stages.append(Stage(h, w, merged.shape[-1], window, last.patch_span * 2, swin_regions(h, w, window)))
    return tuple(stages), tuple(features)
