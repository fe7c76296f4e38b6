"""The patch grid of a vision transformer: prefix tokens, rows and columns, pixels per patch."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from txviz.core.errors import UserError


class PatchGridError(UserError):
    """A vision model whose tokens do not map onto its image patches."""


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
            raise PatchGridError(
                f"The model returned {n_tokens} tokens for a {grid.rows} x {grid.cols} grid of patches: "
                "txviz cannot tell which token is which patch of this model. Choose a ViT-style model."
            )
        # A model family this code does not know: keep [CLS] and call the rest extra tokens.
        names = ("[CLS]",) + tuple(f"[EXTRA{i}]" for i in range(extra - 1))
        grid = PatchGrid(grid.image_height, grid.image_width, patch_h, patch_w, names)
    return grid


def threshold_mask(grid_values: np.ndarray, threshold: float) -> np.ndarray:
    """NaN (not drawn) where a value is zero or below `threshold` x the maximum; threshold in [0, 1]."""
    top = float(np.nanmax(grid_values)) if grid_values.size else 0.0
    keep = (grid_values > 0) & (grid_values >= threshold * top)
    return np.where(keep, grid_values, np.nan)
