"""What a page should say when a picture lies outside what the vision model learned."""

from __future__ import annotations

import numpy as np
from PIL import Image

DIGITS_DATASET = "sklearn.datasets.load_digits"  # txviz.json's "dataset" of a model that knows digits only
COLOUR_SPREAD = 40  # a pixel whose channels differ by more than this (of 255) is coloured, not grey
COLOUR_SHARE = 0.05  # a picture with more coloured pixels than this is a colour picture


def is_colour(image: Image.Image) -> bool:
    """More than a few pixels with clearly different red, green and blue."""
    rgb = np.asarray(image.convert("RGB"), dtype=np.int16)
    spread = rgb.max(axis=-1) - rgb.min(axis=-1)
    return bool((spread > COLOUR_SPREAD).mean() > COLOUR_SHARE)


def outside_note(name: str, meta: dict, image: Image.Image, known_digit: bool) -> str | None:
    """A note for a digits-only model shown anything but one of its digits; None otherwise."""
    if meta.get("dataset") != DIGITS_DATASET or known_digit:
        return None
    colour = "This is a colour picture, and " if is_colour(image) else ""
    return (
        f"{colour}{name} knows only 8 x 8 handwritten digits (light on dark, scaled up): it calls every "
        "picture one of the digits 0 to 9, so even a high probability says which digit this resembles "
        "most, not that the picture shows one."
    )
