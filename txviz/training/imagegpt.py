"""Train `digits-imagegpt`: a small GPT-2 that draws scikit-learn's 8x8 digits pixel by pixel."""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from txviz.core import paths

OUTPUT_DIR = paths.MODELS / "digits-imagegpt"
SEED = 0


@dataclass(frozen=True)
class TrainSettings:
    """Hyper-parameters of one run; the defaults made the shipped model."""

    steps: int = 1200
    batch_size: int = 32
    learning_rate: float = 3e-3
    weight_decay: float = 0.01
    no_class_fraction: float = (
        0.25  # sequences trained with 'any digit' first, so the model also draws unprompted
    )
    vit_samples_per_digit: int = 20  # generated images per class shown to digits-vit; 0 skips that check
    seed: int = SEED


def recognised(images: np.ndarray, digits: np.ndarray) -> tuple[float, list[float], float]:
    """How often digits-vit calls a generated 'k' a k: overall, per digit, and its accuracy on real digits."""
    import torch

    from txviz import models
    from txviz.training.vit import pixel_values

    vit = models.load("digits-vit", "cpu")
    with torch.no_grad():
        predicted = vit.model(pixel_values=pixel_values(vit.processor, images)).logits.argmax(-1).numpy()
    hits = predicted == digits
    per_digit = [round(float(hits[digits == d].mean()), 3) for d in range(10)]
    return float(hits.mean()), per_digit, float(vit.meta.get("heldout_accuracy", float("nan")))


def train(settings: TrainSettings, output_dir: Path = OUTPUT_DIR) -> dict:
    """Train, measure held-out bits per pixel against both baselines, save model + txviz.json."""
    import torch
    from transformers import GPT2LMHeadModel

    from txviz.generation.sampling import SamplingSettings
    from txviz.imagegpt import data, drawing

    torch.manual_seed(settings.seed)
    # One thread: on a busy machine a second one mostly spins waiting (measured 15x the CPU per step).
    torch.set_num_threads(1)
    start, start_cpu = time.perf_counter(), time.process_time()
    x_train, x_test, y_train, y_test = data.split()
    train_tokens = torch.as_tensor(data.sequences(x_train, y_train))
    test_class = torch.as_tensor(data.sequences(x_test, y_test))
    test_any = torch.as_tensor(data.sequences(x_test, None))

    model = GPT2LMHeadModel(drawing.make_config())
    model.set_attn_implementation("sdpa")  # no weights needed while training
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=settings.learning_rate, weight_decay=settings.weight_decay
    )
    scheduler = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=settings.learning_rate, total_steps=max(settings.steps, 1), pct_start=0.1
    )
    generator = torch.Generator().manual_seed(settings.seed)
    curve, window = [], []
    model.train()
    for step in range(settings.steps):
        batch = train_tokens[
            torch.randint(len(train_tokens), (settings.batch_size,), generator=generator)
        ].clone()
        unprompted = torch.rand(settings.batch_size, generator=generator) < settings.no_class_fraction
        batch[unprompted, 0] = data.NO_CLASS
        loss = drawing.pixel_loss(model, batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        window.append(loss.item())
        if len(window) == 25 or step == settings.steps - 1:
            curve.append(
                {"step": step + 1, "bits_per_pixel": round(data.nats_to_bits(float(np.mean(window))), 4)}
            )
            print(f"step {step + 1:5d}  train bits/pixel {curve[-1]['bits_per_pixel']:.3f}", flush=True)
            window = []

    model.eval()
    model.set_attn_implementation("eager")
    metrics = {
        "heldout_bits_per_pixel": round(drawing.bits_per_pixel(drawing.as_loaded(model), test_any), 4),
        "heldout_bits_per_pixel_given_class": round(
            drawing.bits_per_pixel(drawing.as_loaded(model), test_class), 4
        ),
        "baseline_marginal_bits_per_pixel": round(data.marginal_bits(x_train, x_test), 4),
        "baseline_previous_pixel_bits_per_pixel": round(data.bigram_bits(x_train, x_test), 4),
    }
    if settings.vit_samples_per_digit:
        digits = np.repeat(np.arange(10), settings.vit_samples_per_digit)
        images = drawing.sample(
            drawing.as_loaded(model), digits.tolist(), SamplingSettings(temperature=1.0, seed=settings.seed)
        )
        overall, per_digit, vit_accuracy = recognised(images, digits)
        metrics |= {
            "vit_recognises_generated": round(overall, 4),
            "vit_recognises_generated_per_digit": per_digit,
            "vit_generated_images": int(len(digits)),
            "vit_heldout_accuracy": vit_accuracy,
        }
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - start_cpu
    meta = {
        "kind": "image-decoder",
        "description": (
            "Tiny GPT-2 (4 layers x 4 heads, d_model 64) trained by `python -m txviz train imagegpt` to draw "
            "scikit-learn's 8x8 digits pixel by pixel: 17 grey-level tokens, a class token (or 'any') first."
        ),
        **metrics,
        "heldout_images": int(len(test_any)),
        "dataset": "sklearn.datasets.load_digits (the digits-vit split: same held-out images)",
        "tokens": {"grey_levels": "0..16", "class_k": f"{data.CLASS_OFFSET} + k", "any_digit": data.NO_CLASS},
        "seed": settings.seed,
        "steps": settings.steps,
        "batch_size": settings.batch_size,
        "train_curve": curve,
        "train_seconds": round(seconds, 1),  # wall clock, on a machine shared with others
        "train_cpu_seconds": round(cpu_seconds, 1),
    }
    output_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(output_dir, safe_serialization=True)
    (output_dir / "txviz.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def main(argv: list[str] | None = None) -> int:
    """Command line: `python -m txviz train imagegpt [--steps N] [--vit-samples N] [--out DIR]`."""
    parser = argparse.ArgumentParser(prog="txviz train imagegpt", description=__doc__)
    parser.add_argument("--steps", type=int, default=TrainSettings.steps)
    parser.add_argument(
        "--vit-samples",
        type=int,
        default=TrainSettings.vit_samples_per_digit,
        help="generated images per digit for the digits-vit check (0 skips it)",
    )
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--out", type=Path, default=OUTPUT_DIR, help="output folder")
    args = parser.parse_args(argv)
    meta = train(
        TrainSettings(steps=args.steps, vit_samples_per_digit=args.vit_samples, seed=args.seed), args.out
    )
    print(
        f"held-out bits/pixel {meta['heldout_bits_per_pixel']:.3f} (given the class "
        f"{meta['heldout_bits_per_pixel_given_class']:.3f}); baselines: position marginal "
        f"{meta['baseline_marginal_bits_per_pixel']:.3f}, previous pixel "
        f"{meta['baseline_previous_pixel_bits_per_pixel']:.3f}"
        + (
            f"; digits-vit recognises {meta['vit_recognises_generated']:.1%} of generated digits"
            if "vit_recognises_generated" in meta
            else ""
        )
        + f"; {meta['train_seconds']} s; saved to {args.out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
