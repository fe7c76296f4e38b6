"""The shipped learning curves of a small CNN and the digits ViT (probml 15.5.6), and where they cross.

`python -m txviz train curves` measures them (txviz/training/curves.py); this module only reads
assets/curves/runs.json, so the page trains nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from txviz.core import paths

ASSETS_FILE = paths.ASSETS / "curves" / "runs.json"
MODELS = ("small CNN", "ViT (digits-vit's config)")
SIZES = (50, 100, 200, 400, 800, 1437)  # 1,437 is every training image of the shipped split


@dataclass(frozen=True)
class Curves:
    """Held-out accuracy per training-set size, per model and per baseline."""

    sizes: tuple[int, ...]
    accuracy: dict[str, np.ndarray]  # model -> (n_sizes,)
    baselines: dict[str, np.ndarray]  # baseline -> (n_sizes,)
    weights: dict[str, int]
    steps: dict[str, tuple[int, ...]]  # model -> optimiser steps at each size
    heldout_images: int


def load(path=ASSETS_FILE) -> Curves:
    """The shipped curves."""
    runs = json.loads(path.read_text())
    models = runs["models"]
    return Curves(
        sizes=tuple(runs["sizes"]),
        accuracy={m: np.array([p["accuracy"] for p in models[m]]) for m in MODELS},
        baselines={b: np.array(v) for b, v in runs["baselines"].items()},
        weights={m: models[m][0]["weights"] for m in MODELS},
        steps={m: tuple(p["steps"] for p in models[m]) for m in MODELS},
        heldout_images=runs["heldout_images"],
    )


def crossing(sizes, first, second) -> float | None:
    """The training-set size where `second` first overtakes `first` (None if it never does).

    Between two measured sizes the curves are taken as straight in log(size), as they are drawn,
    so the crossing is where the difference's line through those two points meets zero.
    """
    x = np.log(np.asarray(sizes, dtype=float))
    gap = np.asarray(second, dtype=float) - np.asarray(first, dtype=float)
    for i in range(len(gap) - 1):
        if gap[i] < 0 <= gap[i + 1]:
            t = -gap[i] / (gap[i + 1] - gap[i])
            return float(np.exp(x[i] + t * (x[i + 1] - x[i])))
    return None


def reading(curves: Curves) -> str:
    """What the curves say, in words, from the shipped numbers."""
    cnn, vit = (curves.accuracy[m] for m in MODELS)
    cross = crossing(curves.sizes, cnn, vit)
    smallest, largest = curves.sizes[0], curves.sizes[-1]
    text = (
        f"With {smallest} images the CNN scores {cnn[0]:.1%} and the ViT {vit[0]:.1%}; with all {largest} "
        f"images {cnn[-1]:.1%} and {vit[-1]:.1%}. "
    )
    if cross is not None:
        return text + f"The ViT catches up with the CNN at about {cross:,.0f} images."
    gaps = cnn - vit
    if np.all(gaps > 0):
        trend = "shrinks" if gaps[-1] < gaps[0] else "does not shrink"
        return text + (
            f"The ViT never catches up within these sizes: the gap {trend} from {100 * gaps[0]:.1f} "
            f"to {100 * gaps[-1]:.1f} points as the data grow."
        )
    return text + "The ViT is ahead at every size: on these digits the CNN's bias does not pay here."
