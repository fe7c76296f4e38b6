"""Images into a vision transformer: safe loading, the patch grid, and what its attention shows."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from txviz import aggregate
from txviz.trace import AttentionTrace

ACCEPTED_FORMATS = ("PNG", "JPEG", "WEBP", "GIF")
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
    """Decode PNG/JPEG/WebP/GIF bytes into RGB, or raise ValueError with a message for people."""
    if not data:
        raise ValueError("The file is empty: choose a PNG, JPEG or WebP image.")
    damaged = "The file is truncated or damaged and cannot be decoded ({}). Upload the complete file."
    try:
        # Reads the header only. Pillow refuses over twice its own limit; between its limit and
        # ours it merely warns, and our smaller limit below refuses those before decoding.
        image = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError as err:
        found = re.search(r"\((\d+) pixels\)", str(err))
        size = f"{int(found.group(1)):,} pixels" if found else "too many pixels"
        raise ValueError(
            f"The image has {size}, over the limit of {max_pixels / 1e6:,.0f} megapixels; it was "
            "not decoded (a small file that unpacks to a huge image can exhaust memory). "
            "Resize it and upload it again."
        ) from None
    except UnidentifiedImageError:
        raise ValueError(
            "This file is not an image that can be read: upload a PNG, JPEG or WebP picture "
            "(a file renamed to .png is still whatever it was before)."
        ) from None
    except Exception as err:  # noqa: BLE001 - any decoder failure on user bytes is bad input
        raise ValueError(damaged.format("file", err)) from None
    fmt = image.format or "?"
    if fmt not in ACCEPTED_FORMATS:
        raise ValueError(f"{fmt} images are not accepted: upload a PNG, JPEG or WebP picture.")
    width, height = image.size
    if width * height > max_pixels:
        raise ValueError(
            f"The image is {width:,} x {height:,} pixels ({width * height / 1e6:,.0f} megapixels), "
            f"over the limit of {max_pixels / 1e6:,.0f} megapixels; it was not decoded. "
            "Resize it and upload it again."
        )
    if min(width, height) < MIN_SIDE:
        raise ValueError(
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
        raise ValueError(damaged.format(f"{fmt} file", err)) from None
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


@dataclass(frozen=True)
class PatchGrid:
    """Where each token of a vision transformer sits on the image it was given."""

    image_height: int  # pixels of the model's input, after its processor
    image_width: int
    patch_height: int
    patch_width: int
    prefix_tokens: tuple[str, ...] = ("[CLS]",)  # tokens before the patches: [CLS], [DIST], [REG]

    @property
    def rows(self) -> int:
        return self.image_height // self.patch_height

    @property
    def cols(self) -> int:
        return self.image_width // self.patch_width

    @property
    def n_patches(self) -> int:
        return self.rows * self.cols

    @property
    def n_prefix(self) -> int:
        return len(self.prefix_tokens)

    @property
    def n_tokens(self) -> int:
        return self.n_prefix + self.n_patches

    def index(self, row: int, col: int) -> int:
        """Raster-order patch index of (row, col): row-major, left to right, top to bottom."""
        if not (0 <= row < self.rows and 0 <= col < self.cols):
            raise IndexError(f"patch ({row}, {col}) outside a {self.rows} x {self.cols} grid")
        return row * self.cols + col

    def position(self, patch: int) -> tuple[int, int]:
        """(row, col) of raster-order patch index ``patch``."""
        if not 0 <= patch < self.n_patches:
            raise IndexError(f"patch {patch} outside 0..{self.n_patches - 1}")
        return patch // self.cols, patch % self.cols

    def token_of_patch(self, patch: int) -> int:
        """Sequence position of a patch: the prefix tokens come first."""
        self.position(patch)
        return self.n_prefix + patch

    def to_grid(self, values: np.ndarray) -> np.ndarray:
        """(..., n_tokens) or (..., n_patches) -> (..., rows, cols), prefix tokens dropped."""
        n = values.shape[-1]
        if n == self.n_tokens:
            values = values[..., self.n_prefix :]
        elif n != self.n_patches:
            raise ValueError(f"{n} values fit neither {self.n_tokens} tokens nor {self.n_patches} patches")
        return values.reshape(*values.shape[:-1], self.rows, self.cols)

    def token_labels(self) -> tuple[str, ...]:
        """One label per sequence position: the prefix tokens, then 'p0', 'p1', ..."""
        return self.prefix_tokens + tuple(f"p{k}" for k in range(self.n_patches))

    def patch_centres(self) -> np.ndarray:
        """(n_patches, 2) centre of every patch as (y, x) in input pixels."""
        rows, cols = np.divmod(np.arange(self.n_patches), self.cols)
        return np.stack([(rows + 0.5) * self.patch_height, (cols + 0.5) * self.patch_width], axis=1).astype(
            np.float64
        )

    def upsample(self, grid_values: np.ndarray) -> np.ndarray:
        """(rows, cols) -> (image_height, image_width): each patch's value over all its pixels."""
        block = np.ones((self.patch_height, self.patch_width), dtype=grid_values.dtype)
        full = np.kron(grid_values, block)
        # Pixels past the last whole patch (size not a multiple of the patch) are not seen.
        out = np.zeros((self.image_height, self.image_width), dtype=grid_values.dtype)
        out[: full.shape[0], : full.shape[1]] = full
        return out


def _pair(value) -> tuple[int, int]:
    """An int or a pair from a config, as (height, width)."""
    if isinstance(value, int):
        return value, value
    height, width = value
    return int(height), int(width)


def prefix_tokens_of(config) -> tuple[str, ...]:
    """[CLS], then a distillation token (DeiT), then register tokens (DINOv2 with registers)."""
    tokens = ["[CLS]"]
    if getattr(config, "model_type", "") == "deit":
        tokens.append("[DIST]")
    tokens += [f"[REG{i}]" for i in range(getattr(config, "num_register_tokens", 0) or 0)]
    return tuple(tokens)


def patch_grid(config, pixel_shape: tuple[int, int] | None = None, n_tokens: int | None = None):
    """The PatchGrid of a model config for an input of pixel_shape (height, width).

    The grid comes from the config's patch size and the processed image size, never assumed.
    When the sequence length is known, the prefix count is checked against it.
    """
    patch_h, patch_w = _pair(config.patch_size)
    height, width = pixel_shape if pixel_shape is not None else _pair(config.image_size)
    grid = PatchGrid(int(height), int(width), patch_h, patch_w, prefix_tokens_of(config))
    if n_tokens is not None and n_tokens != grid.n_tokens:
        extra = n_tokens - grid.n_patches
        if extra < 1:
            raise ValueError(
                f"The model returned {n_tokens} tokens for a {grid.rows} x {grid.cols} patch grid."
            )
        # A model family this code does not know: keep [CLS] and call the rest extra tokens.
        names = ("[CLS]",) + tuple(f"[EXTRA{i}]" for i in range(extra - 1))
        grid = PatchGrid(grid.image_height, grid.image_width, patch_h, patch_w, names)
    return grid


# --- what attention shows -------------------------------------------------------------------


def cls_attention(weights: np.ndarray, grid: PatchGrid, layer: int, head: int | None = None) -> np.ndarray:
    """[CLS] -> patches of one head (or the mean over heads when head is None): (rows, cols)."""
    return query_attention(weights, grid, layer, head, query=0)


def patch_attention(
    weights: np.ndarray, grid: PatchGrid, layer: int, head: int | None, patch: int
) -> np.ndarray:
    """Attention from one patch to every patch: (rows, cols)."""
    return query_attention(weights, grid, layer, head, query=grid.token_of_patch(patch))


def query_attention(
    weights: np.ndarray, grid: PatchGrid, layer: int, head: int | None, query: int
) -> np.ndarray:
    """Row `query` of weights [layer, head, query_pos, key_pos] on the patch grid: (rows, cols)."""
    per_head = weights[layer, :, query, :]  # (H, T)
    row = per_head.mean(axis=0) if head is None else per_head[head]  # (T,)
    return grid.to_grid(row)


def attention_rollout(weights: np.ndarray, residual: bool = True) -> np.ndarray:
    """Attention rollout (Abnar & Zuidema 2020): (L, H, T, T) -> (L, T, T), up to each layer."""
    return aggregate.attention_rollout(weights, residual)


def attention_entropy(weights: np.ndarray) -> np.ndarray:
    """Mean entropy in bits of each head's attention rows: (L, H, T, T) -> (L, H)."""
    return aggregate.head_entropy(weights.astype(np.float64)) / np.log(2.0)


def mean_attention_distance(weights: np.ndarray, grid: PatchGrid) -> np.ndarray:
    """Mean distance in input pixels from each patch to the patches it attends to: (L, H).

    As in Dosovitskiy et al. (2021): for patch queries, attention over the patch keys
    (renormalised without the prefix tokens) weights the distance between patch centres.
    """
    centres = grid.patch_centres()  # (P, 2)
    distance = np.linalg.norm(centres[:, None, :] - centres[None, :, :], axis=-1)  # (P, P)
    patches = weights[..., grid.n_prefix :, grid.n_prefix :].astype(np.float64)  # (L, H, P, P)
    patches = patches / np.clip(patches.sum(axis=-1, keepdims=True), 1e-12, None)
    return (patches * distance).sum(axis=-1).mean(axis=-1)


def threshold_mask(grid_values: np.ndarray, threshold: float) -> np.ndarray:
    """NaN (not drawn) where a value is zero or below `threshold` x the maximum; threshold in [0, 1]."""
    top = float(np.nanmax(grid_values)) if grid_values.size else 0.0
    keep = (grid_values > 0) & (grid_values >= threshold * top)
    return np.where(keep, grid_values, np.nan)


# --- running a model ------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class VisionAttention:
    """One image through a vision transformer: attention, the grid, and its prediction."""

    trace: AttentionTrace  # kind "vision"; tokens are the prefix tokens then p0, p1, ...
    grid: PatchGrid
    image: np.ndarray  # (H, W, 3) uint8: the model's input, its processor undone
    labels: tuple[str, ...] = ()  # class names, empty without a classification head
    probabilities: np.ndarray | None = None  # (n_classes,) float64

    def top_class(self) -> tuple[str, float] | None:
        """(label, probability) of the most likely class, or None without a head."""
        if self.probabilities is None:
            return None
        best = int(np.argmax(self.probabilities))
        return self.labels[best], float(self.probabilities[best])


def pixel_values(processor, image: Image.Image):
    """The processor's (1, 3, H, W) float tensor for one RGB image."""
    return processor(images=image.convert("RGB"), return_tensors="pt")["pixel_values"]


def model_input_image(processor, pixels) -> np.ndarray:
    """Undo the processor's scaling and normalisation: (1, 3, H, W) -> (H, W, 3) uint8."""
    x = pixels[0].detach().cpu().double().numpy()  # (3, H, W)
    if getattr(processor, "do_normalize", False):
        mean = np.asarray(processor.image_mean, dtype=np.float64).reshape(-1, 1, 1)
        std = np.asarray(processor.image_std, dtype=np.float64).reshape(-1, 1, 1)
        x = x * std + mean
    if getattr(processor, "do_rescale", False):
        x = x / processor.rescale_factor
    return np.clip(np.round(x), 0, 255).astype(np.uint8).transpose(1, 2, 0)


def trace_image(loaded, image: Image.Image) -> VisionAttention:
    """Run a loaded vision model on an RGB image, recording every layer's attention."""
    import torch

    from txviz.capture import CaptureSettings, capture

    if loaded.kind != "vision" or loaded.processor is None:
        raise ValueError(f"{loaded.name} is a {loaded.kind} model: it reads text, not images.")
    pixels = pixel_values(loaded.processor, image)  # (1, 3, H, W)
    with torch.no_grad(), capture(loaded.model, CaptureSettings(record={"weights"})) as rec:
        output = loaded.model(pixel_values=pixels.to(loaded.device))
    weights = rec.stack("weights").astype(np.float32)  # (L, H, T, T)
    grid = patch_grid(loaded.config, tuple(pixels.shape[-2:]), n_tokens=weights.shape[-1])
    tokens = grid.token_labels()
    trace = AttentionTrace(
        query_tokens=tokens,
        key_tokens=tokens,
        weights=weights,
        model_name=loaded.name,
        kind="vision",
        layer_names=tuple(rec.records),
        special=tuple(i < grid.n_prefix for i in range(grid.n_tokens)),
    )
    labels: tuple[str, ...] = ()
    probabilities = None
    logits = getattr(output, "logits", None)
    if logits is not None:
        probabilities = torch.softmax(logits[0].double(), dim=-1).cpu().numpy()
        id2label = getattr(loaded.config, "id2label", {}) or {}
        labels = tuple(str(id2label.get(i, i)) for i in range(len(probabilities)))
    return VisionAttention(trace, grid, model_input_image(loaded.processor, pixels), labels, probabilities)


# --- sample images --------------------------------------------------------------------------

SAMPLE_FOLDER = Path(__file__).resolve().parents[1] / "assets" / "images"


def sample_names() -> list[str]:
    """Names of the sample images: held-out digits, scikit-learn's photos, generated shapes."""
    digits = [f"digit {d} (held out from training)" for d in range(10)]
    photos = ["photo: china.jpg (scikit-learn)", "photo: flower.jpg (scikit-learn)"]
    shapes = [f"shapes: {p.stem}" for p in sorted(SAMPLE_FOLDER.glob("*.png"))]
    return digits + photos + shapes


def sample_image(name: str) -> Image.Image:
    """The RGB sample image called ``name`` (one of sample_names())."""
    if name.startswith("digit "):
        from txviz.training.vit import digit_images, split_digits

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


# --- choosing what the page overlays ---------------------------------------------------------

VIEWS = ("[CLS] attention", "Attention from a patch", "Attention rollout from [CLS]")


def overlay_values(
    result: VisionAttention, view: str, layer: int, head: int | None, patch: int = 0
) -> tuple[np.ndarray, str]:
    """The (rows, cols) values to lay over the image for one view, and a title saying what they are."""
    weights, grid = result.trace.weights, result.grid
    heads = "mean over heads" if head is None else f"head {head}"
    if view == VIEWS[0]:
        return cls_attention(weights, grid, layer, head), f"[CLS] attention, layer {layer}, {heads}"
    if view == VIEWS[1]:
        row, col = grid.position(patch)
        values = patch_attention(weights, grid, layer, head, patch)
        return values, f"Attention from patch {patch} (row {row}, col {col}), layer {layer}, {heads}"
    if view == VIEWS[2]:
        rollout = attention_rollout(weights)[layer]  # (T, T)
        return grid.to_grid(rollout[0]), f"Attention rollout from [CLS] through layers 0 to {layer}"
    raise ValueError(f"Unknown view {view!r}; choose one of {VIEWS}.")
