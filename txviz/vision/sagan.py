"""SAGAN's self-attention layer (Zhang et al. 2019) over a feature map: every position attends to all.

f(x) = W_f x, g(x) = W_g x, h(x) = W_h x are 1x1 convolutions; beta_{j,i} = softmax_i(f(x_i)^T g(x_j))
over all N = H * W positions; o_j = W_v sum_i beta_{j,i} h(x_i); y = gamma * o + x. The feature map here
is a scikit-learn photograph's pixels (RGB scaled to [-1, 1], C = 3); no SAGAN is trained in txviz, so
W_f, W_g, W_h and W_v are random with a fixed seed: the computation is the paper's, the weights are not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from txviz.vision.book import square_photo

SIDE = 32  # a 32 x 32 feature map: N = 1024 positions, a 1024 x 1024 attention matrix
PHOTO = "china.jpg"
SEED = 0
REDUCED = 3  # SAGAN's C/8 for f and g; C is 3 here, so f and g keep three channels
WEIGHT_SCALE = 2.5  # large enough that the softmax over 1024 positions is not flat


@dataclass(frozen=True)
class Weights:
    """The four 1x1 convolutions as (out, in) matrices: W_f, W_g (C/8 x C), W_h (C/8 x C), W_v (C x C/8)."""

    f: torch.Tensor
    g: torch.Tensor
    h: torch.Tensor
    v: torch.Tensor


@dataclass(frozen=True)
class Attended:
    """The layer's pieces: beta (N, N) with row j the query's weights over i, o and y as (C, H, W)."""

    beta: torch.Tensor
    o: torch.Tensor
    y: torch.Tensor


def feature_map(photo: str = PHOTO, side: int = SIDE) -> torch.Tensor:
    """The photograph downsampled to side x side: its RGB pixels in [-1, 1] as a (3, side, side) map."""
    pixels = square_photo(photo, side).astype(np.float32)
    return torch.from_numpy(pixels / 127.5 - 1).permute(2, 0, 1).contiguous()


def random_weights(channels: int = 3, reduced: int = REDUCED, seed: int = SEED) -> Weights:
    """W_f, W_g, W_h, W_v drawn from N(0, scale^2 / fan-in) with a fixed seed."""
    generator = torch.Generator().manual_seed(seed)

    def draw(out: int, inp: int) -> torch.Tensor:
        return torch.randn(out, inp, generator=generator) * WEIGHT_SCALE / inp**0.5

    return Weights(
        draw(reduced, channels), draw(reduced, channels), draw(reduced, channels), draw(channels, reduced)
    )


def conv1x1(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """A 1x1 convolution of a (C, H, W) map with an (out, C) matrix: the same linear map at each position."""
    return F.conv2d(x[None], weight[:, :, None, None])[0]


def self_attention(x: torch.Tensor, weights: Weights, gamma: float) -> Attended:
    """SAGAN's layer on one (C, H, W) feature map."""
    channels, height, width = x.shape
    f = conv1x1(x, weights.f).reshape(-1, height * width)  # (C/8, N)
    g = conv1x1(x, weights.g).reshape(-1, height * width)
    h = conv1x1(x, weights.h).reshape(-1, height * width)
    scores = g.T @ f  # [j, i] = f(x_i)^T g(x_j)
    beta = torch.softmax(scores, dim=1)  # over i, all N positions
    o = conv1x1((h @ beta.T).reshape(-1, height, width), weights.v)  # o_j = W_v sum_i beta_{j,i} h(x_i)
    return Attended(beta, o, gamma * o + x)


@dataclass(frozen=True)
class QueryView:
    """What the figure shows for one query position: the image, its attention map and how far it reaches."""

    image: np.ndarray  # (side, side, 3) uint8
    attention: np.ndarray  # (side, side): beta_{j, .} of the query j
    row: int
    col: int
    outside_window: float  # the share of the query's attention beyond its 3 x 3 neighbourhood
    uniform: float  # 1 / N, the weight of a flat softmax


def query_view(photo: str, row: int, col: int, seed: int = SEED, side: int = SIDE) -> QueryView:
    """SAGAN's attention from the query at (row, col) over the whole downsampled photograph."""
    x = feature_map(photo, side)
    attended = self_attention(x, random_weights(seed=seed), gamma=0.0)
    attention = attended.beta[row * side + col].reshape(side, side).numpy()
    window = attention[max(row - 1, 0) : row + 2, max(col - 1, 0) : col + 2].sum()
    return QueryView(square_photo(photo, side), attention, row, col, float(1 - window), 1 / side**2)
