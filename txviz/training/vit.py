"""Train the tiny vision transformer `digits-vit` on scikit-learn's handwritten digits."""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from txviz.core import paths
from txviz.vision.digits import IMAGE_SIZE, SEED, TEST_FRACTION, digit_images, split_digits

OUTPUT_DIR = paths.MODELS / "digits-vit"
PATCH_SIZE = 4


@dataclass(frozen=True)
class TrainSettings:
    """Hyper-parameters of one training run."""

    epochs: int = 30
    batch_size: int = 32
    learning_rate: float = 2e-3
    weight_decay: float = 0.05
    seed: int = SEED


def make_processor():
    """The image processor saved beside the model: resize to 24 px, scale to [-1, 1]."""
    from transformers.models.vit.image_processing_pil_vit import ViTImageProcessorPil

    return ViTImageProcessorPil(
        size={"height": IMAGE_SIZE, "width": IMAGE_SIZE},
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
    )


def make_config():
    """A four-layer, four-head ViT small enough to train on one CPU core in about a minute."""
    from transformers import ViTConfig

    labels = [str(d) for d in range(10)]
    return ViTConfig(
        image_size=IMAGE_SIZE,
        patch_size=PATCH_SIZE,
        num_channels=3,
        hidden_size=64,
        num_hidden_layers=4,
        num_attention_heads=4,
        intermediate_size=128,
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.0,
        id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
    )


def pixel_values(processor, images_8x8: np.ndarray, invert: bool = False):
    """Run the saved processor on digit images, as the app will on an upload."""
    return processor(images=digit_images(images_8x8, invert), return_tensors="pt")["pixel_values"]


def accuracy(model, pixels, labels) -> float:
    """Fraction of images whose arg-max class equals the label."""
    import torch

    model.eval()
    with torch.no_grad():
        predicted = torch.cat([model(pixel_values=b).logits.argmax(-1) for b in pixels.split(256)])
    return float((predicted == labels).float().mean())


def train(settings: TrainSettings, output_dir: Path = OUTPUT_DIR) -> dict:
    """Train, measure held-out accuracy, save model + processor + txviz.json; return the metadata."""
    import torch
    from transformers import ViTForImageClassification

    torch.manual_seed(settings.seed)
    torch.set_num_threads(1)  # the machine is shared: one core, reproducible order of sums
    start, start_cpu = time.perf_counter(), time.process_time()

    processor = make_processor()
    x_train, x_test, y_train, y_test = split_digits(settings.seed)
    train_pixels = pixel_values(processor, x_train)  # (N, 3, 24, 24), values in [-1, 1]
    train_labels = torch.as_tensor(y_train, dtype=torch.long)
    test_pixels = pixel_values(processor, x_test)
    test_inverted = pixel_values(processor, x_test, invert=True)
    test_labels = torch.as_tensor(y_test, dtype=torch.long)

    model = ViTForImageClassification(make_config())
    model.set_attn_implementation("sdpa")  # weights are not needed while training
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=settings.learning_rate, weight_decay=settings.weight_decay
    )
    steps_per_epoch = -(-len(train_labels) // settings.batch_size)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(
        optimizer,
        max_lr=settings.learning_rate,
        total_steps=settings.epochs * steps_per_epoch,
        pct_start=0.1,
    )
    generator = torch.Generator().manual_seed(settings.seed)
    for epoch in range(settings.epochs):
        model.train()
        order = torch.randperm(len(train_labels), generator=generator)
        total = 0.0
        for batch in order.split(settings.batch_size):
            images = train_pixels[batch]
            # One pixel of random shift each way: digits drawn off-centre still classify.
            dx, dy = torch.randint(-1, 2, (2,), generator=generator).tolist()
            images = torch.roll(images, shifts=(dy, dx), dims=(2, 3))
            loss = model(pixel_values=images, labels=train_labels[batch]).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            total += loss.item() * len(batch)
        if epoch % 5 == 4 or epoch == settings.epochs - 1:
            print(f"epoch {epoch + 1:3d}  loss {total / len(train_labels):.4f}", flush=True)

    model.set_attn_implementation("eager")
    heldout = accuracy(model, test_pixels, test_labels)
    heldout_inverted = accuracy(model, test_inverted, test_labels)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - start_cpu
    meta = {
        "kind": "vision",
        "description": (
            "Tiny ViT (4 layers x 4 heads, d_model 64, 4 px patches on 24 px images, a 6 x 6 grid) trained by "
            "`python -m txviz train vit` on scikit-learn's 8x8 handwritten digits, upscaled."
        ),
        "heldout_accuracy": round(heldout, 4),
        "heldout_accuracy_inverted": round(heldout_inverted, 4),
        "heldout_images": int(len(test_labels)),
        "dataset": "sklearn.datasets.load_digits",
        "split": {"test_fraction": TEST_FRACTION, "random_state": settings.seed, "stratify": True},
        "seed": settings.seed,
        "epochs": settings.epochs,
        "train_seconds": round(seconds, 1),  # wall clock, on a machine shared with others
        "train_cpu_seconds": round(cpu_seconds, 1),
    }
    output_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(output_dir, safe_serialization=True)
    processor.save_pretrained(output_dir)
    (output_dir / "txviz.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def main(argv: list[str] | None = None) -> int:
    """Command line: `python -m txviz train vit [--epochs N] [--out DIR]`."""
    parser = argparse.ArgumentParser(prog="txviz train vit", description=__doc__)
    parser.add_argument("--epochs", type=int, default=TrainSettings.epochs)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--out", type=Path, default=OUTPUT_DIR, help="output folder")
    args = parser.parse_args(argv)
    meta = train(TrainSettings(epochs=args.epochs, seed=args.seed), args.out)
    print(
        f"held-out accuracy {meta['heldout_accuracy']:.4f} "
        f"(inverted {meta['heldout_accuracy_inverted']:.4f}) on {meta['heldout_images']} images, "
        f"{meta['train_seconds']} s; saved to {args.out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
