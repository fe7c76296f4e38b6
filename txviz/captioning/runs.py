"""One canvas captioned by both models, ready for the page: words, attention per word, chosen patches."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from txviz.captioning.canvas import WORDS, CanvasError, Canvases, from_image, make_canvases, photo_note
from txviz.captioning.evaluate import written
from txviz.captioning.model import Captioner, caption


@dataclass(frozen=True, eq=False)
class Written:
    """What one captioner wrote for one canvas."""

    method: str
    words: tuple[str, ...]  # digit words, then "(end)" when it stopped
    weights: np.ndarray  # (T, 64) the attention read for each word (one-hot for hard)
    policy: np.ndarray  # (T, 64) the distribution it came from
    chosen: np.ndarray  # (T,) the patch read (hard) or the most attended patch (soft)

    @property
    def text(self) -> str:
        return " ".join(w for w in self.words if w != "(end)") or "(nothing)"


def write(models: dict[str, Captioner], pixels: np.ndarray, sample_seed: int = 0) -> dict[str, Written]:
    """Caption one (32, 32) canvas with each model; hard attention samples with the given seed."""
    out = {}
    for method, model in models.items():
        generator = torch.Generator().manual_seed(sample_seed)
        result = caption(
            model, torch.tensor(pixels, dtype=torch.float32)[None], True, generator
        )  # a copy: cached arrays are read-only
        digits = written(result, 0)
        n = min(len(digits) + 1, result.words.shape[1])  # the words and the END step
        words = tuple(WORDS[d] for d in digits) + (("(end)",) if n > len(digits) else ())
        out[method] = Written(
            method,
            words,
            result.attention[0, :n].numpy(),
            result.policy[0, :n].numpy(),
            result.chosen[0, :n].numpy(),
        )
    return out


def random_canvas(images: np.ndarray, labels: np.ndarray, n_digits: int, seed: int) -> Canvases:
    """One new canvas of n_digits held-out digits; more than the captioner learned gets a CanvasError."""
    return make_canvases(images, labels, 1, seed=seed, n_digits=n_digits)


__all__ = ["CanvasError", "Written", "from_image", "photo_note", "random_canvas", "write"]
