"""Uploaded images, loaded safely: size limits, liar files, odd modes made RGB."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from txviz.core.errors import UserError

ACCEPTED_FORMATS = ("PNG", "JPEG", "WEBP", "GIF")
FORMATS_TEXT = "PNG, JPEG, WebP or GIF"  # ACCEPTED_FORMATS as a message names them


MAX_PIXELS = 40_000_000  # 40 megapixels: a large photo passes, a decompression bomb does not


MIN_SIDE = 8  # smaller images carry no picture a patch grid can say anything about


@dataclass(frozen=True)
class LoadedImage:
    """An uploaded image made safe for the model: 8-bit RGB, plus what was changed on the way."""

    image: Image.Image  # mode "RGB"
    source_format: str  # "PNG", "JPEG", ...
    source_mode: str  # PIL mode before conversion: "L", "RGBA", "CMYK", "I;16" ...
    source_size: tuple[int, int]  # (width, height) in pixels
    notes: tuple[str, ...] = ()  # what was done to the image, for the page to show


def load_image(data: bytes, max_pixels: int = MAX_PIXELS) -> LoadedImage:
    """Decode PNG/JPEG/WebP/GIF bytes into RGB, or raise UserError with a message for people."""
    if not data:
        raise UserError(f"The file is empty: choose a {FORMATS_TEXT} image.")
    damaged = "The {} is truncated or damaged and cannot be decoded ({}). Upload the complete file."
    try:
        # Reads the header only. Pillow refuses over twice its own limit; between its limit and
        # ours it merely warns, and our smaller limit below refuses those before decoding.
        image = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError as err:
        found = re.search(r"\((\d+) pixels\)", str(err))
        size = f"{int(found.group(1)):,} pixels" if found else "too many pixels"
        raise UserError(
            f"The image has {size}, over the limit of {max_pixels / 1e6:,.0f} megapixels; it was "
            "not decoded (a small file that unpacks to a huge image can exhaust memory). "
            "Resize it and upload it again."
        ) from None
    except UnidentifiedImageError:
        raise UserError(
            f"This file is not an image that can be read: upload a {FORMATS_TEXT} picture "
            "(a file renamed to .png is still whatever it was before)."
        ) from None
    except Exception as err:  # noqa: BLE001 - any decoder failure on user bytes is bad input
        raise UserError(damaged.format("file", err)) from None
    fmt = image.format or "?"
    if fmt not in ACCEPTED_FORMATS:
        raise UserError(f"{fmt} images are not accepted: upload a {FORMATS_TEXT} picture.")
    width, height = image.size
    if width * height > max_pixels:
        raise UserError(
            f"The image is {width:,} x {height:,} pixels ({width * height / 1e6:,.0f} megapixels), "
            f"over the limit of {max_pixels / 1e6:,.0f} megapixels; it was not decoded. "
            "Resize it and upload it again."
        )
    if min(width, height) < MIN_SIDE:
        raise UserError(
            f"The image is only {width} x {height} pixels; it needs at least {MIN_SIDE} pixels "
            "on each side to be cut into patches."
        )

    notes: list[str] = []
    try:
        if getattr(image, "n_frames", 1) > 1:
            notes.append(f"Animated image with {image.n_frames} frames: the first frame is used.")
            image.seek(0)
        image.load()
        mode = image.mode
        image = ImageOps.exif_transpose(image) or image
    except Exception as err:  # noqa: BLE001 - any decoder failure on user bytes is bad input
        raise UserError(damaged.format(f"{fmt} file", err)) from None
    rgb, conversion = _to_rgb(image)
    if conversion:
        notes.append(conversion)
    return LoadedImage(rgb, fmt, mode, (width, height), tuple(notes))


def _to_rgb(image: Image.Image) -> tuple[Image.Image, str]:
    """8-bit RGB from any Pillow mode, with a note saying what changed ('' when nothing)."""
    mode = image.mode
    if mode == "RGB":
        return image, ""
    if mode in ("I;16", "I;16L", "I;16B", "I;16N", "I", "F"):
        values = np.asarray(image, dtype=np.float64)
        # 16-bit PNGs open as I;16 or I; plain conversion to 8 bits would clip them to white.
        top = 65535.0 if mode.startswith("I;16") or values.max() > 255 else 255.0
        if mode == "F":
            low, top = float(values.min()), float(values.max())
            values = values - low
            top = top - low or 1.0
        grey = np.clip(np.round(values / top * 255.0), 0, 255).astype(np.uint8)
        return (
            Image.fromarray(grey, mode="L").convert("RGB"),
            f"High bit-depth image ({mode}) scaled to 8-bit grey and copied to three channels.",
        )
    if mode == "P" and "transparency" in image.info:
        image, mode = image.convert("RGBA"), "RGBA"
    if mode in ("RGBA", "LA", "PA", "La", "RGBa"):
        rgba = image.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return (
            Image.alpha_composite(background, rgba).convert("RGB"),
            "Transparent areas were placed on a white background.",
        )
    if mode in ("L", "1"):
        return image.convert("RGB"), "Grayscale image: the grey copied to three channels."
    if mode == "P":  # a palette of 8-bit colours: nothing is lost
        return image.convert("RGB"), ""
    if mode == "CMYK":
        return image.convert("RGB"), "CMYK image converted to RGB (colours may shift slightly)."
    return image.convert("RGB"), f"{mode} image converted to RGB."
