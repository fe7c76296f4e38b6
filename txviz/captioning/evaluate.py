"""Held-out scores of a captioner: exact captions, words, and whether attention lands on the right digit."""

from __future__ import annotations

import numpy as np
import torch

from txviz.captioning.canvas import END, WORDS, Canvases, regions
from txviz.captioning.model import Caption, Captioner, caption

HELDOUT_CANVASES = 500
HELDOUT_SEED = 1  # canvases of held-out digits, fixed: the README's numbers are measured on them


def held_out_canvases(n: int = HELDOUT_CANVASES) -> tuple[np.ndarray, np.ndarray, Canvases]:
    """The held-out digits (the digits-vit split) and the fixed canvases made of them."""
    from txviz.captioning.canvas import make_canvases
    from txviz.imagegpt.data import split

    _, x_test, _, y_test = split()
    return x_test, y_test, make_canvases(x_test, y_test, n, seed=HELDOUT_SEED)


def written(result: Caption, index: int) -> list[int]:
    """The digit ids written for one canvas, up to the first END."""
    out = []
    for word in result.words[index].tolist():
        if word == END:
            break
        out.append(word)
    return out


def as_text(digits: list[int]) -> str:
    return " ".join(WORDS[d] for d in digits if 0 <= d < len(WORDS)) or "(nothing)"


def scores(result: Caption, canvases: Canvases) -> dict:
    """Exact-caption accuracy, word accuracy, localisation (arg-max or chosen patch in digit i's box)."""
    exact = words_right = words_total = located = located_total = 0
    mass = []
    boxes = regions(canvases.corners)  # (N, 4, 64)
    for i in range(len(canvases)):
        truth = [int(d) for d in canvases.captions[i] if d >= 0]
        predicted = written(result, i)
        exact += predicted == truth
        words_total += len(truth)
        words_right += sum(p == t for p, t in zip(predicted, truth, strict=False))
        for t in range(min(len(truth), len(predicted))):
            located_total += 1
            located += bool(boxes[i, t, int(result.chosen[i, t])])
            mass.append(float(result.policy[i, t][torch.as_tensor(boxes[i, t])].sum()))
    return {
        "exact_caption_accuracy": round(exact / len(canvases), 4),
        "word_accuracy": round(words_right / max(words_total, 1), 4),
        "localisation": round(located / max(located_total, 1), 4),
        "attention_mass_on_digit": round(float(np.mean(mass)) if mass else 0.0, 4),
    }


def evaluate(model: Captioner, canvases: Canvases, seed: int = 0, sample_locations: bool = True) -> dict:
    """Scores on the canvases; hard attention samples its patches with a seeded generator."""
    model.eval()
    generator = torch.Generator().manual_seed(seed)
    result = caption(model, torch.as_tensor(canvases.pixels), sample_locations, generator)
    return scores(result, canvases) | {"canvases": len(canvases)}
