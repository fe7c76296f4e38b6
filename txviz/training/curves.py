"""Learning curves: a small CNN and the digits ViT trained on growing subsets of the digits.

probml 15.5.6: a CNN's locality and weight sharing are an inductive bias that a ViT must learn
from data instead, so the ViT needs more images to catch up. Both models here read the same
24 px images (the shipped digits-vit's processor), take the same number of optimiser steps on
each subset with the same recipe (AdamW, one-cycle schedule, one pixel of random shift), and are
scored on the same 360 held-out images; a logistic regression on the raw 8x8 pixels
and the training subset's most common digit are the baselines of the same run.
`python -m txviz train curves` writes assets/curves/runs.json, which the Vision Transformer
page reads; it trains nothing itself.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from txviz.core.threads import torch_threads
from txviz.training import vit
from txviz.vision.curves import ASSETS_FILE, MODELS, SIZES
from txviz.vision.digits import SEED, split_digits


@dataclass(frozen=True)
class CurveSettings:
    """Each run takes `epochs` passes over its subset (digits-vit's 30), and at least `min_steps`
    steps so the smallest subsets are trained to fit too (a fixed step count would leave the
    ViT far from converged on the full set: 300 steps gave it 37%)."""

    epochs: int = 30
    min_steps: int = 400
    batch_size: int = 32
    learning_rate: float = 2e-3
    weight_decay: float = 0.05
    seed: int = SEED


class SmallCNN(nn.Module):
    """Three 3x3 convolutions with pooling, then a global average and a linear read-out."""

    def __init__(self, classes: int = 10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # 24 -> 12
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # 12 -> 6
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        )  # fmt: skip
        self.head = nn.Linear(64, classes)

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(pixel_values).flatten(1))


class ViTLogits(nn.Module):
    """The digits-vit architecture (the shipped config), returning logits like SmallCNN."""

    def __init__(self):
        super().__init__()
        from transformers import ViTForImageClassification

        self.vit = ViTForImageClassification(vit.make_config())
        self.vit.set_attn_implementation("sdpa")

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return self.vit(pixel_values=pixel_values).logits


def build(name: str) -> nn.Module:
    """A fresh model of MODELS' name (the caller seeds torch first)."""
    return {MODELS[0]: SmallCNN, MODELS[1]: ViTLogits}[name]()


def subset_order(labels: np.ndarray, seed: int) -> np.ndarray:
    """Training indices in an order whose every prefix has the digits about equally often.

    Each digit's images are shuffled with the seed and the digits taken in turn, so the first 50
    hold five of each and every subset contains the smaller ones (nested, as learning curves are).
    """
    rng = np.random.default_rng(seed)
    per_digit = [rng.permutation(np.flatnonzero(labels == d)) for d in np.unique(labels)]
    order = [group[i] for i in range(max(map(len, per_digit))) for group in per_digit if i < len(group)]
    return np.asarray(order)


def steps_for(size: int, settings: CurveSettings) -> int:
    """Optimiser steps on a subset of this size: `epochs` passes, at least `min_steps`."""
    return max(settings.min_steps, settings.epochs * -(-size // min(settings.batch_size, size)))


def weights(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def accuracy(model: nn.Module, pixels: torch.Tensor, labels: torch.Tensor) -> float:
    """Held-out share of images whose arg-max class is the label."""
    model.eval()
    with torch.no_grad():
        predicted = torch.cat([model(b).argmax(-1) for b in pixels.split(256)])
    return float((predicted == labels).float().mean())


def train_one(name: str, pixels: torch.Tensor, labels: torch.Tensor, settings: CurveSettings) -> nn.Module:
    """AdamW steps on these images, batches drawn with the seed; the model after."""
    torch.manual_seed(settings.seed)
    model = build(name)
    batch_size, steps = min(settings.batch_size, len(labels)), steps_for(len(labels), settings)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=settings.learning_rate, weight_decay=settings.weight_decay
    )
    scheduler = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=settings.learning_rate, total_steps=steps, pct_start=0.1
    )
    generator = torch.Generator().manual_seed(settings.seed)
    order = torch.empty(0, dtype=torch.long)
    model.train()
    for _ in range(steps):
        if len(order) < batch_size:  # a fresh pass over the subset, in a new order
            order = torch.cat([order, torch.randperm(len(labels), generator=generator)])
        batch, order = order[:batch_size], order[batch_size:]
        dx, dy = torch.randint(-1, 2, (2,), generator=generator).tolist()  # as digits-vit was trained
        images = torch.roll(pixels[batch], shifts=(dy, dx), dims=(2, 3))
        loss = nn.functional.cross_entropy(model(images), labels[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
    return model


@dataclass(frozen=True)
class Digits:
    """The digits as both models read them, and as the pixel baseline reads them."""

    train_pixels: torch.Tensor  # (N, 3, 24, 24) in [-1, 1], in subset order
    train_labels: torch.Tensor
    test_pixels: torch.Tensor
    test_labels: torch.Tensor
    train_flat: np.ndarray  # (N, 64) raw 8x8 values, in subset order
    test_flat: np.ndarray


def digits(seed: int = SEED) -> Digits:
    """The shipped model's split (same seed), training images put in subset order."""
    x_train, x_test, y_train, y_test = split_digits(seed)
    order = subset_order(y_train, seed)
    x_train, y_train = x_train[order], y_train[order]
    processor = vit.make_processor()
    return Digits(
        vit.pixel_values(processor, x_train),
        torch.as_tensor(y_train, dtype=torch.long),
        vit.pixel_values(processor, x_test),
        torch.as_tensor(y_test, dtype=torch.long),
        x_train.reshape(len(x_train), -1),
        x_test.reshape(len(x_test), -1),
    )


def baselines(data: Digits, size: int) -> dict[str, float]:
    """Held-out accuracy of the subset's most common digit and of a logistic regression on pixels."""
    from sklearn.linear_model import LogisticRegression

    labels = data.train_labels[:size].numpy()
    majority = np.bincount(labels, minlength=10).argmax()
    pixels = LogisticRegression(max_iter=2000).fit(data.train_flat[:size] / 16.0, labels)
    return {
        "majority": float((data.test_labels.numpy() == majority).mean()),
        "pixel_logistic_regression": float(pixels.score(data.test_flat / 16.0, data.test_labels.numpy())),
    }


def point(name: str, data: Digits, size: int, settings: CurveSettings) -> dict:
    """Train one model on the first `size` training images; its held-out accuracy and timing."""
    start = time.process_time()
    model = train_one(name, data.train_pixels[:size], data.train_labels[:size], settings)
    return {
        "accuracy": accuracy(model, data.test_pixels, data.test_labels),
        "train_accuracy": accuracy(model, data.train_pixels[:size], data.train_labels[:size]),
        "cpu_seconds": round(time.process_time() - start, 1),
        "steps": steps_for(size, settings),
        "weights": weights(model),
    }


def measure(sizes=SIZES, settings: CurveSettings = CurveSettings(), log=print) -> dict:
    """Every model and baseline at every size, on one thread (identical runs on a given machine)."""
    with torch_threads(1):
        data = digits(settings.seed)
        sizes = [min(s, len(data.train_labels)) for s in sizes]
        runs = {"sizes": sizes, "settings": asdict(settings), "heldout_images": len(data.test_labels)}
        runs["models"] = {name: [] for name in MODELS}
        runs["baselines"] = {"majority": [], "pixel_logistic_regression": []}
        for size in sizes:
            for name, value in baselines(data, size).items():
                runs["baselines"][name].append(value)
            for name in MODELS:
                runs["models"][name].append(point(name, data, size, settings))
            log(
                f"{size:5d} images: "
                + ", ".join(f"{n} {runs['models'][n][-1]['accuracy']:.3f}" for n in MODELS)
                + f"; pixels {runs['baselines']['pixel_logistic_regression'][-1]:.3f}"
                + f", majority {runs['baselines']['majority'][-1]:.3f}"
            )
    return runs


def main(argv: list[str] | None = None) -> int:
    """Reproduce assets/curves/runs.json (fixed seed, one thread, a few minutes on one core)."""
    parser = argparse.ArgumentParser(prog="python -m txviz train curves", description=__doc__)
    parser.add_argument("--out", type=Path, default=ASSETS_FILE, help="output JSON file")
    parser.add_argument("--epochs", type=int, default=CurveSettings.epochs)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    runs = measure(settings=CurveSettings(epochs=args.epochs, seed=args.seed))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(runs, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
