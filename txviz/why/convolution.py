"""Self-attention that is a convolution (Cordonnier, Loukas and Jaggi, 2020), set by hand.

A k x k convolution is k*k heads. Head h looks at one relative offset Delta_h: its score for a key at
offset delta from the query is v_h . r_delta with the quadratic position encoding
r_delta = (|delta|^2, delta_1, delta_2) and v_h = -alpha (1, -2 Delta_h1, -2 Delta_h2), which is
-alpha |delta - Delta_h|^2 plus a constant of the row. As alpha grows the softmax puts all its weight
on the pixel at offset Delta_h; the value projection is the identity and the output projection of
head h carries the kernel's weights at Delta_h, so the sum over heads is the convolution.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from txviz.core.errors import UserError
from txviz.core.threads import torch_threads

KERNEL_SIZES = (3, 5)
MAX_SIDE = 32  # the heads' n x n attention maps stay small


class ConvolutionError(UserError):
    """A kernel or image the hand-set heads cannot take."""


def kernels(k: int, seed: int = 0) -> dict[str, np.ndarray]:
    """k x k kernels to try: an edge detector, a blur, a sharpener and a seeded random one."""
    centre = k // 2
    edge = np.zeros((k, k))
    edge[:, 0], edge[:, -1] = -1.0, 1.0
    edge[centre] *= 2.0  # Sobel's heavier middle row
    sharpen = -np.ones((k, k)) / (k * k)
    sharpen[centre, centre] += 2.0
    return {
        "edges (Sobel x)": edge,
        "blur (box)": np.full((k, k), 1.0 / (k * k)),
        "sharpen": sharpen,
        f"random (seed {seed})": np.random.default_rng(seed).normal(size=(k, k)),
    }


def offsets(k: int) -> list[tuple[int, int]]:
    """The k*k relative offsets (dy, dx), one per head, row by row as in the kernel."""
    r = k // 2
    return [(dy, dx) for dy in range(-r, r + 1) for dx in range(-r, r + 1)]


def quadratic_encoding(delta: torch.Tensor) -> torch.Tensor:
    """r_delta = (|delta|^2, delta_y, delta_x) for offsets (..., 2)."""
    return torch.cat([(delta**2).sum(-1, keepdim=True), delta], dim=-1)


def head_query(offset: tuple[int, int], alpha: float) -> torch.Tensor:
    """v_h = -alpha (1, -2 Delta_y, -2 Delta_x): v_h . r_delta = -alpha |delta - Delta|^2 + alpha |Delta|^2."""
    dy, dx = offset
    return -alpha * torch.tensor([1.0, -2.0 * dy, -2.0 * dx], dtype=torch.float64)


@dataclass(frozen=True)
class AttentionConvolution:
    """An image through k*k hand-set heads and through conv2d, and where one pixel's heads look."""

    image: np.ndarray  # (C_in, H, W)
    kernel: np.ndarray  # (C_out, C_in, k, k)
    attention: np.ndarray  # (C_out, H, W) the heads' output after the output projection
    convolution: np.ndarray  # (C_out, H, W) torch conv2d, zero padding k // 2
    query_heads: np.ndarray  # (k*k, H, W) each head's attention of the chosen query pixel
    query: tuple[int, int]
    own_weight: np.ndarray  # (k*k,) each head's weight, at the chosen pixel, on its own offset

    @property
    def max_abs_difference(self) -> float:
        return float(np.abs(self.attention - self.convolution).max())

    @property
    def query_window(self) -> np.ndarray:
        """(H, W) the chosen pixel's attention summed over heads: the k x k local mask, cut at edges."""
        return self.query_heads.sum(axis=0)


def check_inputs(image: np.ndarray, kernel: np.ndarray) -> None:
    """Refuse shapes the construction does not cover: odd square kernels, small images, matching channels."""
    c_out, c_in, k, k2 = kernel.shape
    if k != k2 or k % 2 == 0:
        raise ConvolutionError(f"The kernel must be square with an odd side, not {k} x {k2}.")
    if image.ndim != 3 or image.shape[0] != c_in:
        raise ConvolutionError(f"The image must be (channels, height, width) with {c_in} channels.")
    if max(image.shape[1:]) > MAX_SIDE:
        raise ConvolutionError(f"Images up to {MAX_SIDE} x {MAX_SIDE} pixels: every head is n x n.")


def attention_convolution(
    image: np.ndarray, kernel: np.ndarray, alpha: float = 50.0, query: tuple[int, int] = (0, 0)
) -> AttentionConvolution:
    """Multi-head self-attention over the zero-padded pixels, one head per kernel offset, beside conv2d."""
    check_inputs(image, kernel)
    with torch_threads(1), torch.no_grad():  # small tensors: more threads only contend
        return _attention_convolution(image, kernel, alpha, query)


def _attention_convolution(
    image: np.ndarray, kernel: np.ndarray, alpha: float, query: tuple[int, int]
) -> AttentionConvolution:
    k = kernel.shape[-1]
    r = k // 2
    x = torch.as_tensor(image, dtype=torch.float64)
    weight = torch.as_tensor(kernel, dtype=torch.float64)
    _, height, width = x.shape
    padded = F.pad(x, (r, r, r, r))  # keys include the zero border, as conv2d's padding does
    keys = torch.cartesian_prod(torch.arange(height + 2 * r), torch.arange(width + 2 * r)).double()
    queries = torch.cartesian_prod(torch.arange(height), torch.arange(width)).double() + r
    encoding = quadratic_encoding(keys[None, :, :] - queries[:, None, :])  # (N, M, 3)
    values = padded.flatten(1).T  # (M, C_in): the value projection is the identity
    output = torch.zeros(kernel.shape[0], height * width, dtype=torch.float64)
    row = query[0] * width + query[1]
    shown, own = [], []
    for offset in offsets(k):
        probabilities = torch.softmax(encoding @ head_query(offset, alpha), dim=-1)  # (N, M)
        head = probabilities @ values  # (N, C_in)
        output += weight[:, :, offset[0] + r, offset[1] + r] @ head.T  # output projection of this head
        target = (query[0] + r + offset[0]) * (width + 2 * r) + query[1] + r + offset[1]
        own.append(float(probabilities[row, target]))
        shown.append(probabilities[row].reshape(height + 2 * r, width + 2 * r)[r : r + height, r : r + width])
    convolution = F.conv2d(x[None], weight, padding=r)[0]
    return AttentionConvolution(
        image=image,
        kernel=kernel,
        attention=output.reshape(-1, height, width).numpy(),
        convolution=convolution.numpy(),
        query_heads=torch.stack(shown).numpy(),
        query=query,
        own_weight=np.array(own),
    )


def digit(index: int = 0) -> np.ndarray:
    """One of scikit-learn's handwritten digits at 24 x 24 grey levels in [0, 1], as (1, H, W)."""
    from sklearn.datasets import load_digits

    from txviz.vision.digits import digit_images

    picture = digit_images(load_digits().images[index : index + 1])[0].convert("L")
    return np.asarray(picture, dtype=np.float64)[None] / 255.0
