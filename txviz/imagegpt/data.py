"""Digits as token sequences: a class token (or none), then 64 grey levels in raster order."""

from __future__ import annotations

import math

import numpy as np

from txviz.core.errors import UserError

SIDE = 8  # scikit-learn's digits are 8 x 8
N_PIXELS = SIDE * SIDE
N_LEVELS = 17  # grey levels 0..16 are tokens 0..16
CLASS_OFFSET = N_LEVELS  # "draw a k" is token 17 + k
NO_CLASS = CLASS_OFFSET + 10  # token 27: draw any digit
VOCAB = NO_CLASS + 1
SEQ_LEN = 1 + N_PIXELS  # the first token says which digit (or none); the model predicts the 64 pixels


class ImageInputError(UserError):
    """An image or request the pixel model cannot take; the message is for the user."""


def first_token(digit: int | None) -> int:
    """The class token of digit 0..9, or NO_CLASS for an unconditional image."""
    if digit is None:
        return NO_CLASS
    if not 0 <= int(digit) <= 9:
        raise ImageInputError(f"There is no digit {digit}: choose 0 to 9, or any digit.")
    return CLASS_OFFSET + int(digit)


def sequences(images: np.ndarray, labels: np.ndarray | None) -> np.ndarray:
    """(N, 8, 8) grey levels 0..16 -> (N, 65) int64 tokens; labels None gives NO_CLASS first."""
    pixels = np.asarray(images).reshape(len(images), N_PIXELS).round().astype(np.int64)
    if pixels.min(initial=0) < 0 or pixels.max(initial=0) >= N_LEVELS:
        raise ValueError("Pixels must be grey levels 0..16.")
    heads = np.full(len(images), NO_CLASS) if labels is None else CLASS_OFFSET + np.asarray(labels)
    return np.concatenate([heads[:, None], pixels], axis=1).astype(np.int64)


def split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The digits-vit split (same seed, same held-out images): x_train, x_test, y_train, y_test."""
    from txviz.vision.digits import split_digits

    return split_digits()


def marginal_table(train: np.ndarray, alpha: float = 1.0) -> np.ndarray:
    """P(level | position) (64, 17) from training images, add-alpha smoothed."""
    flat = train.reshape(len(train), N_PIXELS).astype(np.int64)
    counts = np.stack([np.bincount(flat[:, p], minlength=N_LEVELS) for p in range(N_PIXELS)]) + alpha
    return counts / counts.sum(axis=1, keepdims=True)


def bigram_table(train: np.ndarray, alpha: float = 1.0) -> np.ndarray:
    """P(level | previous pixel's level in raster order) (17, 17), add-alpha smoothed."""
    flat = train.reshape(len(train), N_PIXELS).astype(np.int64)
    counts = np.zeros((N_LEVELS, N_LEVELS)) + alpha
    np.add.at(counts, (flat[:, :-1].ravel(), flat[:, 1:].ravel()), 1)
    return counts / counts.sum(axis=1, keepdims=True)


def marginal_bits(train: np.ndarray, test: np.ndarray) -> float:
    """Held-out bits per pixel when each pixel is drawn from its position's marginal."""
    table = marginal_table(train)
    flat = test.reshape(len(test), N_PIXELS).astype(np.int64)
    return float(-np.log2(table[np.arange(N_PIXELS), flat]).mean())


def bigram_bits(train: np.ndarray, test: np.ndarray) -> float:
    """Held-out bits per pixel seeing only the previous pixel (the first from its marginal)."""
    first = marginal_table(train)[0]
    table = bigram_table(train)
    flat = test.reshape(len(test), N_PIXELS).astype(np.int64)
    bits = -np.log2(table[flat[:, :-1], flat[:, 1:]]).sum() - np.log2(first[flat[:, 0]]).sum()
    return float(bits / flat.size)


def nats_to_bits(nats: float) -> float:
    return nats / math.log(2)


def image_to_grid(image) -> tuple[np.ndarray, list[str]]:
    """An RGB PIL image -> (8, 8) grey levels 0..16, light ink on dark, and what was done to it."""
    from PIL import Image

    grey = np.asarray(image.convert("L"), dtype=np.float64)
    notes = [f"Your {image.width} x {image.height} image was turned grey"]
    if grey.max() - grey.min() < 8:  # less than 8 of 255 steps between darkest and lightest
        raise ImageInputError(
            "The image is blank (one flat colour): there is no digit in it to read. Upload a drawing of a digit."
        )
    if np.median(grey) > 127:  # mostly light: dark ink on paper; the digits are light ink on black
        grey = 255.0 - grey
        notes.append("inverted (dark ink on light paper became light ink on black, as the digits are)")
    small = Image.fromarray(grey.astype(np.uint8)).resize((SIDE, SIDE), Image.Resampling.BOX)
    values = np.asarray(small, dtype=np.float64)
    low, high = values.min(), values.max()
    levels = np.round((values - low) / max(high - low, 1e-9) * (N_LEVELS - 1)).astype(np.int64)
    notes.append(f"averaged down to {SIDE} x {SIDE} pixels and stretched to the {N_LEVELS} grey levels 0..16")
    return levels, notes


def describe(notes: list[str]) -> str:
    """One sentence from image_to_grid's notes."""
    return notes[0] + (", " + ", ".join(notes[1:]) if len(notes) > 1 else "") + "."
