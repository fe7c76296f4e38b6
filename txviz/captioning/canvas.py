"""Canvases of 2-4 digits at varied positions, captioned by their digits in reading order."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from txviz.core.errors import UserError

SIZE = 32  # the canvas is 32 x 32 pixels, grey levels 0..16 like the digits
DIGIT = 8
SLOT = 16  # four 16 x 16 quadrants; a digit sits anywhere inside its quadrant
SLOTS = 4  # reading order: top left, top right, bottom left, bottom right
MIN_DIGITS, MAX_DIGITS = 2, 4
PATCH = 4  # the encoder reads 4 x 4 pixel patches: an 8 x 8 grid
GRID = SIZE // PATCH
WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
END, START = 10, 11  # token ids after the ten digit words
VOCAB = 12
MAX_STEPS = MAX_DIGITS + 1  # four words and the end


class CanvasError(UserError):
    """A canvas the captioner cannot take; the message is for the user."""


@dataclass(frozen=True, eq=False)
class Canvases:
    """A batch of canvases: pixels (N, 32, 32), captions (N, 4) padded with -1, corners (N, 4, 2) of each digit."""

    pixels: np.ndarray
    captions: np.ndarray
    corners: np.ndarray  # (top, left) of the i-th digit in reading order; -1 where none

    def __len__(self) -> int:
        return len(self.pixels)

    def words(self, index: int) -> list[str]:
        return [WORDS[d] for d in self.captions[index] if d >= 0]


def check_count(n_digits: int) -> None:
    """A clear message when a canvas would hold more (or fewer) digits than the captioner learned."""
    if n_digits > MAX_DIGITS:
        raise CanvasError(
            f"A canvas of {n_digits} digits is more than the captioner was trained for: it learned canvases "
            f"of {MIN_DIGITS} to {MAX_DIGITS} digits, one per quadrant, and writes at most {MAX_DIGITS} words."
        )
    if n_digits < 1:
        raise CanvasError("A canvas needs at least one digit.")


def make_canvases(
    images: np.ndarray, labels: np.ndarray, n: int, seed: int, n_digits: int | None = None
) -> Canvases:
    """n canvases from the given 8x8 digits, reproducible from the seed; n_digits None draws 2-4."""
    if n_digits is not None:
        check_count(n_digits)
    rng = np.random.default_rng(seed)
    pixels = np.zeros((n, SIZE, SIZE), dtype=np.float32)
    captions = np.full((n, MAX_DIGITS), -1, dtype=np.int64)
    corners = np.full((n, MAX_DIGITS, 2), -1, dtype=np.int64)
    for i in range(n):
        count = n_digits or int(rng.integers(MIN_DIGITS, MAX_DIGITS + 1))
        slots = np.sort(rng.choice(SLOTS, size=count, replace=False))
        for j, slot in enumerate(slots):
            pick = int(rng.integers(len(images)))
            top = (slot // 2) * SLOT + int(rng.integers(0, SLOT - DIGIT + 1))
            left = (slot % 2) * SLOT + int(rng.integers(0, SLOT - DIGIT + 1))
            pixels[i, top : top + DIGIT, left : left + DIGIT] = images[pick]
            captions[i, j], corners[i, j] = labels[pick], (top, left)
    return Canvases(pixels, captions, corners)


def regions(corners: np.ndarray) -> np.ndarray:
    """(..., 2) digit corners -> (..., 64) bool: the patches each digit's 8 x 8 box overlaps."""
    rows = np.arange(GRID)[:, None] * PATCH
    cols = np.arange(GRID)[None, :] * PATCH
    top, left = corners[..., 0, None, None], corners[..., 1, None, None]
    inside = (rows + PATCH > top) & (rows < top + DIGIT) & (cols + PATCH > left) & (cols < left + DIGIT)
    return (inside & (top >= 0)).reshape(*corners.shape[:-1], GRID * GRID)


def from_image(image) -> tuple[np.ndarray, list[str]]:
    """An RGB PIL image -> a (32, 32) canvas of grey levels 0..16, light ink on black, and what was done."""
    from PIL import Image
    from scipy import ndimage

    grey = np.asarray(image.convert("L"), dtype=np.float64)
    notes = [f"Your {image.width} x {image.height} image was turned grey"]
    if grey.max() - grey.min() < 8:
        raise CanvasError("The image is blank (one flat colour): there are no digits in it to caption.")
    if np.median(grey) > 127:
        grey = 255.0 - grey
        notes.append("inverted to light ink on black (as the training canvases are)")
    small = np.asarray(
        Image.fromarray(grey.astype(np.uint8)).resize((SIZE, SIZE), Image.Resampling.BOX), dtype=np.float64
    )
    low, high = small.min(), small.max()
    canvas = ((small - low) / max(high - low, 1e-9) * 16).astype(np.float32)
    notes.append(f"averaged down to {SIZE} x {SIZE} pixels{_shape_note(image.width, image.height)}")
    notes.append("and its grey levels spread over 0..16")
    marks = ndimage.label(canvas > 4, structure=np.ones((3, 3)))[1]
    if marks > MAX_DIGITS:
        raise CanvasError(
            f"Your image holds {marks} separate marks at the model's 32 x 32 size: more than the captioner was "
            f"trained for ({MIN_DIGITS} to {MAX_DIGITS} digits, one per quadrant). Upload fewer digits."
        )
    return canvas, notes


def _shape_note(width: int, height: int) -> str:
    """What filling the square canvas did to a picture that is not square ('' for a square one)."""
    if width == height:
        return ""
    # The whole picture fills the canvas, so every patch covers part of it: no blank band to attend to.
    way = "taller" if width > height else "wider"
    return f" (the whole picture, its {width} x {height} shape stretched {way} to fill the square canvas)"


def photo_note(image) -> str:
    """What a caption of an uploaded picture means: the captioners know only canvases of digits."""
    from txviz.vision.notes import is_colour

    start = "This is a colour picture, and the" if is_colour(image) else "The"
    return (
        f"{start} captioners know only canvases of {MIN_DIGITS} to {MAX_DIGITS} handwritten 8 x 8 digits, light on "
        "dark, one per quadrant: they write digit words for any picture, so a caption says which digits its "
        "patches resemble most, not that the picture shows them."
    )
