"""ViT-Base's input as the books draw it (Dosovitskiy et al. 2021; probml 15.5.6): a 224 px photograph
cut into 16 x 16 px patches, each flattened to 16 * 16 * 3 = 768 numbers and linearly projected to D,
a [CLASS] token in front, position embeddings added: z0 = [x_class; x_p^1 E; ...; x_p^N E] + E_pos.

The cutting and flattening are exact. No trained ViT-Base ships with txviz, so E and x_class are
random (a stated seed, at ViT's initial scale) and E_pos is the sinusoid of the Positional Encoding
page: the shapes and the steps are the book's, the projected numbers are not ViT-Base's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image

from txviz.positional.encodings import sinusoidal_encoding
from txviz.vision.patches import PatchGrid

IMAGE_SIZE = 224  # ViT-Base/16's input
PATCH = 16
WIDTH = 768  # ViT-Base's D
PHOTOS = ("china.jpg", "flower.jpg")  # scikit-learn's two sample photographs


def square_photo(name: str = "china.jpg", size: int = IMAGE_SIZE) -> np.ndarray:
    """A scikit-learn sample photo, centre-cropped to a square and resized to size x size; uint8 (H, W, 3)."""
    from sklearn.datasets import load_sample_image

    photo = load_sample_image(name)
    height, width = photo.shape[:2]
    side = min(height, width)
    top, left = (height - side) // 2, (width - side) // 2
    crop = Image.fromarray(photo[top : top + side, left : left + side])
    return np.asarray(crop.resize((size, size), Image.Resampling.BICUBIC))


def flatten_patches(image: np.ndarray, patch: int = PATCH) -> np.ndarray:
    """(H, W, C) -> (N, patch * patch * C): raster order of patches, each read row by row, channels last."""
    height, width, channels = image.shape
    rows, cols = height // patch, width // patch
    blocks = image[: rows * patch, : cols * patch].reshape(rows, patch, cols, patch, channels)
    return blocks.transpose(0, 2, 1, 3, 4).reshape(rows * cols, patch * patch * channels)


def unflatten_patches(flat: np.ndarray, rows: int, cols: int, patch: int = PATCH) -> np.ndarray:
    """The inverse of flatten_patches: (N, patch * patch * C) -> (rows * patch, cols * patch, C)."""
    channels = flat.shape[1] // (patch * patch)
    blocks = flat.reshape(rows, cols, patch, patch, channels).transpose(0, 2, 1, 3, 4)
    return blocks.reshape(rows * patch, cols * patch, channels)


@dataclass(frozen=True)
class Embedded:
    """Every step from the photograph to z0, the transformer's input."""

    image: np.ndarray  # (224, 224, 3) uint8
    grid: PatchGrid
    pixels: np.ndarray  # (N, 768) flattened patches, scaled to [-1, 1] as ViT's processor does
    projection: np.ndarray  # E, (768, D)
    projected: np.ndarray  # x_p E, (N, D)
    class_token: np.ndarray  # x_class, (D,)
    positions: np.ndarray  # E_pos, (N + 1, D)
    z0: np.ndarray  # (N + 1, D)
    seed: int


def embed(image: np.ndarray, d: int = WIDTH, seed: int = 0, patch: int = PATCH) -> Embedded:
    """z0 of an image: flatten, project with a random E (N(0, 1/768), seed), prepend x_class, add E_pos."""
    grid = PatchGrid(image.shape[0], image.shape[1], patch, patch, ("[CLASS]",))
    pixels = (flatten_patches(image, patch).astype(np.float64) / 255 - 0.5) / 0.5
    rng = np.random.default_rng(seed)
    projection = rng.normal(scale=1 / np.sqrt(pixels.shape[1]), size=(pixels.shape[1], d))
    class_token = rng.normal(scale=0.02, size=d)  # ViT's initial scale for its learned tokens
    projected = pixels @ projection
    positions = sinusoidal_encoding(grid.n_tokens, d)
    z0 = np.vstack([class_token, projected]) + positions
    return Embedded(image, grid, pixels, projection, projected, class_token, positions, z0, seed)


@dataclass(frozen=True)
class PretrainingData:
    """One row of the ViT paper's transfer table: a pre-training set and what ViT did after it."""

    name: str
    classes: str
    images: str
    outcome: str


TRANSFER = (
    PretrainingData(
        "ImageNet (ILSVRC-2012)",
        "1k",
        "1.3M",
        "ViT pre-trained here alone scores below BiT, a ResNet of comparable size: too few images for a "
        "model without a convolution's built-in locality.",
    ),
    PretrainingData(
        "ImageNet-21k",
        "21k",
        "14M",
        "In the paper's Fig. 3, ViT about matches BiT; the larger ViTs pull ahead only with JFT-300M. "
        "ViT-L/16 pre-trains here in about 30 days on one 8-core TPUv3.",
    ),
    PretrainingData(
        "JFT-300M (Google, not public)",
        "18k",
        "303M",
        "ViT overtakes BiT on every transfer task, at less pre-training compute.",
    ),
)
SOURCE = (
    "Dosovitskiy et al. 2021, An Image is Worth 16x16 Words (ICLR), Fig. 3 and Table 2; probml 15.5.6. "
    "BiT: Big Transfer, Kolesnikov et al. 2020. These are the paper's figures, not numbers run here."
)
TITLE = "The ViT paper's transfer figures (Dosovitskiy et al. 2021; not run here)"
# probml reads Fig. 3 with a coarser grain than the paper's own text: say so beside the table.
BOOK_READING = (
    "The book (probml 15.5.6) groups ImageNet-21k with JFT: pre-trained on either, ViT does better than "
    "BiT. The row above is the paper's own reading (about matches at 21k); both put the crossing at "
    "millions of images."
)
# The other side of the data-hunger story, in one line beside the transfer table.
CONVNEXT = (
    "ConvNeXt (Liu et al. 2022, *A ConvNet for the 2020s*) argues the gap was design, not the convolution: "
    "it modernised a ResNet step by step with the transformers' choices (a 4 x 4 patchify stem, 7 x 7 "
    "depthwise convolutions, inverted bottlenecks, LayerNorm, GELU, and a ViT-style recipe of AdamW, long "
    "schedules and heavy augmentation) and matched Swin Transformers' ImageNet accuracy at similar FLOPs, "
    "with and without ImageNet-22k pre-training."
)
