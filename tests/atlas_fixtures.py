"""A hand-made atlas from arrays: the page's and views' tests without a build."""

from __future__ import annotations

import numpy as np

from txviz.atlas.atlas import Atlas, Contexts, Settings

METRIC_NAMES = ("previous_token", "first_token", "entropy")


def contexts(layers: int, heads: int, k: int, windows: int, window: int, seed: int = 0) -> Contexts:
    """Contexts in the full windows, values descending, keys before their queries, one band empty."""
    rng = np.random.default_rng(seed)
    shape, band_shape = (layers, heads, k), (layers, heads, 3, 2)
    query = rng.integers(1, window, shape).astype(np.int32)
    band_query = rng.integers(1, window, band_shape).astype(np.int32)
    band_window = rng.integers(0, windows - 1, band_shape).astype(np.int32)
    band_window[:, :, 2] = -1  # a band with no sample
    return Contexts(
        "attention",
        rng.integers(0, windows - 1, shape).astype(np.int32),
        query,
        (query - 1).astype(np.int32),
        np.sort(rng.uniform(0.5, 1, shape), -1)[..., ::-1].astype(np.float32),
        band_window,
        band_query,
        (band_query - 1).astype(np.int32),
        rng.uniform(0, 0.5, band_shape).astype(np.float32),
    )


def atlas(layers: int = 2, heads: int = 3, windows: int = 4, window: int = 8, model: str = "toy") -> Atlas:
    rng = np.random.default_rng(1)
    scores = {name: rng.uniform(0, 1, (layers, heads)).astype(np.float32) for name in METRIC_NAMES}
    scores["first_token"][0, 0] = np.nan  # a head where the metric could not be measured
    tokens = rng.integers(4, 50, (windows, window)).astype(np.int32)
    tokens[-1, window // 2 :] = -1  # a short last window
    return Atlas(model, model, "toy corpus", "0" * 64, Settings(window=window, top_k=3), True, layers, heads,
                 tokens, scores, {"attention": contexts(layers, heads, 3, windows, window)})  # fmt: skip
