"""Colour scales by kind of value, colour maps applied in numpy, and arrays encoded as PNG."""

from __future__ import annotations

import base64
import io

import numpy as np
from PIL import Image, ImageColor

# Anchors of perceptually uniform, colour-blind-safe scales (matplotlib's viridis and cividis).
SCALES = {
    "viridis": [
        "#440154",
        "#482878",
        "#3e4989",
        "#31688e",
        "#26828e",
        "#1f9e89",
        "#35b779",
        "#6ece58",
        "#b5de2b",
        "#fde725",
    ],
    "cividis": [
        "#00224e",
        "#123570",
        "#3b496c",
        "#575d6d",
        "#707173",
        "#8a8779",
        "#a69d75",
        "#c4b56c",
        "#e4cf5b",
        "#fee838",
    ],
    "greys": ["#ffffff", "#000000"],
    # ColorBrewer RdBu, colour-blind safe: red below zero, near-white at zero, blue above.
    "rdbu": [
        "#67001f",
        "#b2182b",
        "#d6604d",
        "#f4a582",
        "#fddbc7",
        "#f7f7f7",
        "#d1e5f0",
        "#92c5de",
        "#4393c3",
        "#2166ac",
        "#053061",
    ],
}
# CARTO Safe: categories that stay apart for colour-blind readers; reused in order past the eleventh.
PALETTE = (
    "#88ccee",
    "#cc6677",
    "#ddcc77",
    "#117733",
    "#332288",
    "#aa4499",
    "#44aa99",
    "#999933",
    "#882255",
    "#661100",
    "#888888",
)
KINDS = ("sequential", "diverging", "categorical")


def _rgb(hex_color: str) -> tuple[int, int, int]:
    return tuple(int(hex_color[i : i + 2], 16) for i in (1, 3, 5))


def colorize(values: np.ndarray, vmin: float, vmax: float, scale: str = "viridis") -> np.ndarray:
    """Float array (...) -> uint8 RGB (..., 3); NaN becomes white (a gap between tiles)."""
    anchors = np.array([_rgb(c) for c in SCALES[scale]], dtype=np.float32)  # (A, 3)
    t = np.clip((values - vmin) / max(vmax - vmin, 1e-12), 0, 1)
    pos = np.nan_to_num(t, nan=0.0) * (len(anchors) - 1)
    low = np.floor(pos).astype(int).clip(0, len(anchors) - 2)
    frac = (pos - low)[..., None]
    rgb = anchors[low] * (1 - frac) + anchors[low + 1] * frac
    rgb[np.isnan(values)] = 255
    return rgb.astype(np.uint8)


def png_data_uri(rgb: np.ndarray) -> str:
    """uint8 (H, W, 3) -> a data: URI holding the PNG."""
    buffer = io.BytesIO()
    Image.fromarray(rgb).save(buffer, format="PNG", compress_level=1)  # fast; attention compresses well
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def plotly_colorscale(scale: str = "viridis") -> list[list]:
    """The same scale in plotly's [[position, colour], ...] form."""
    colors = SCALES[scale]
    return [[i / (len(colors) - 1), c] for i, c in enumerate(colors)]


def scale_name(kind: str, presenting: bool = False) -> str:
    """The scale for a kind of values: sequential viridis (cividis when presenting: it survives
    projectors), diverging RdBu around zero in both, categorical the Safe palette in both."""
    if kind == "sequential":
        return "cividis" if presenting else "viridis"
    if kind == "diverging":
        return "rdbu"
    if kind == "categorical":
        return "categorical"
    raise ValueError(f"Unknown colour kind {kind!r}: choose from {', '.join(KINDS)}.")


def scale(kind: str, presenting: bool = False, categories: int = len(PALETTE)) -> list[list]:
    """A plotly colorscale for a kind of values; categorical ones step through ``categories``
    colours for integer values 0..categories-1 drawn with zmin=-0.5, zmax=categories-0.5."""
    name = scale_name(kind, presenting)
    if name != "categorical":
        return plotly_colorscale(name)
    steps = []
    for i in range(categories):
        colour = PALETTE[i % len(PALETTE)]
        steps += [[i / categories, colour], [(i + 1) / categories, colour]]
    return steps


TEXT = "#222222"  # text on a white figure: 15.9:1 (WCAG asks 4.5:1 of body text)
MIN_TEXT_CONTRAST = 4.5  # WCAG 2's AA level for text


def luminance(color: str | tuple[int, int, int]) -> float:
    """WCAG 2's relative luminance of a CSS colour ('#rrggbb', 'white', 'rgb(...)') or an (r, g, b)
    of 0-255."""
    rgb = ImageColor.getrgb(color)[:3] if isinstance(color, str) else color
    linear = [c / 255 / 12.92 if c / 255 <= 0.04045 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast_ratio(a: str | tuple[int, int, int], b: str | tuple[int, int, int]) -> float:
    """WCAG 2's contrast ratio of two colours, 1 (none) to 21 (black on white)."""
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def text_on(background: str | tuple[int, int, int]) -> str:
    """Black or white, whichever reads better on the background."""
    return (
        "#000000"
        if contrast_ratio("#000000", background) >= contrast_ratio("#ffffff", background)
        else "#ffffff"
    )
