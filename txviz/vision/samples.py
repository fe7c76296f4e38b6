"""Sample images: the shipped photos, digits the tiny ViT knows, and drawn shapes."""

from __future__ import annotations

import numpy as np
from PIL import Image

from txviz.core import paths

SAMPLE_FOLDER = paths.IMAGES


def sample_names() -> list[str]:
    """Names of the sample images: held-out digits, scikit-learn's photos, generated shapes."""
    digits = [f"digit {d} (held out from training)" for d in range(10)]
    photos = ["photo: china.jpg (scikit-learn)", "photo: flower.jpg (scikit-learn)"]
    shapes = [f"shapes: {p.stem}" for p in sorted(SAMPLE_FOLDER.glob("*.png"))]
    return digits + photos + shapes


def sample_image(name: str) -> Image.Image:
    """The RGB sample image called ``name`` (one of sample_names())."""
    if name.startswith("digit "):
        from txviz.vision.digits import digit_images, split_digits

        digit = int(name.split()[1])
        _, x_test, _, y_test = split_digits()
        first = int(np.flatnonzero(y_test == digit)[0])
        return digit_images(x_test[first : first + 1])[0]
    if name.startswith("photo: "):
        from sklearn.datasets import load_sample_image

        return Image.fromarray(load_sample_image(name.split()[1]))
    if name.startswith("shapes: "):
        return Image.open(SAMPLE_FOLDER / f"{name.split(': ', 1)[1]}.png").convert("RGB")
    raise ValueError(f"No sample image called {name!r}.")


def draw_shapes(size: int = 96, seed: int = 0) -> Image.Image:
    """A white square with a few coloured circles, squares and triangles at random places."""
    from PIL import ImageDraw

    rng = np.random.default_rng(seed)
    image = Image.new("RGB", (size, size), "white")
    draw = ImageDraw.Draw(image)
    colours = ["red", "green", "blue", "orange", "purple"]
    for _ in range(3):
        r = int(rng.integers(size // 10, size // 5))
        x, y = (int(v) for v in rng.integers(r, size - r, 2))
        colour = colours[int(rng.integers(len(colours)))]
        shape = int(rng.integers(3))
        if shape == 0:
            draw.ellipse((x - r, y - r, x + r, y + r), fill=colour)
        elif shape == 1:
            draw.rectangle((x - r, y - r, x + r, y + r), fill=colour)
        else:
            draw.polygon([(x, y - r), (x - r, y + r), (x + r, y + r)], fill=colour)
    return image
