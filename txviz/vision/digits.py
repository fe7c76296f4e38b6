"""scikit-learn's handwritten digits as the project's images: one split, one way to make them pictures."""

from __future__ import annotations

import numpy as np

IMAGE_SIZE = 24  # digits are 8x8; 24 px with 4 px patches gives a 6x6 grid of 36 patches
SEED = 0
TEST_FRACTION = 0.2


def digit_images(images_8x8: np.ndarray, invert: bool = False) -> list:
    """Turn scikit-learn's 8x8 digits (values 0..16) into 24x24 RGB PIL images."""
    from PIL import Image

    pixels = np.clip(images_8x8 * (255.0 / 16.0), 0, 255).astype(np.uint8)  # (N, 8, 8)
    if invert:
        pixels = 255 - pixels  # dark ink on white paper, as people draw digits
    return [
        Image.fromarray(p, mode="L")
        .resize((IMAGE_SIZE, IMAGE_SIZE), Image.Resampling.BILINEAR)
        .convert("RGB")
        for p in pixels
    ]


def split_digits(seed: int = SEED) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Stratified train/held-out split of load_digits: (x_train, x_test, y_train, y_test)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    return train_test_split(
        digits.images,
        digits.target,
        test_size=TEST_FRACTION,
        random_state=seed,
        stratify=digits.target,
    )
