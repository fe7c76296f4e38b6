"""The Conformer block (Gulati et al. 2020) as code, on random weights: where the convolution sits.

A Conformer block is a transformer block for speech with a convolution module between self-attention
and a second feed-forward network: half an FFN, self-attention, the convolution module, half an FFN,
a final LayerNorm, each sub-block added to the residual stream. The convolution module is a pointwise
convolution doubling the width, a GLU, a depthwise convolution along time, BatchNorm, Swish and a
pointwise convolution back. Attention reads every frame; the depthwise convolution reads a fixed
window of frames around each one, the local patterns of speech. The paper's self-attention has
relative positions; here it is plain multi-head attention, and the weights are random: this shows
the wiring and what each part reads, not a trained recogniser.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from txviz.core.threads import torch_threads

D_MODEL = 64
HEADS = 4
FRAMES = 100  # one second of 10 ms frames
MODULES = ("½ FFN", "self-attention", "convolution module", "½ FFN", "LayerNorm")
CONV_LAYERS = (
    "LayerNorm",
    "pointwise conv (d → 2d)",
    "GLU (2d → d)",
    "depthwise conv (k frames)",
    "BatchNorm",
    "Swish",
    "pointwise conv (d → d)",
    "dropout",
)


class FeedForward(nn.Module):
    """LayerNorm, Linear to 4d, Swish, Linear back: the Conformer's FFN (applied at half weight)."""

    def __init__(self, d: int):
        super().__init__()
        self.net = nn.Sequential(
            nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.SiLU(), nn.Dropout(0.1), nn.Linear(4 * d, d)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class ConvolutionModule(nn.Module):
    """Gulati et al.'s Fig. 2: pointwise conv, GLU, depthwise conv over time, BatchNorm, Swish, pointwise conv."""

    def __init__(self, d: int, kernel: int):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.pointwise_in = nn.Conv1d(d, 2 * d, 1)
        self.glu = nn.GLU(dim=1)
        self.depthwise = nn.Conv1d(d, d, kernel, padding=kernel // 2, groups=d)  # one filter per channel
        self.batch_norm = nn.BatchNorm1d(d)
        self.swish = nn.SiLU()
        self.pointwise_out = nn.Conv1d(d, d, 1)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, d) to (B, T, d); convolutions run over time with the features as channels."""
        h = self.norm(x).transpose(1, 2)
        h = self.glu(self.pointwise_in(h))
        h = self.swish(self.batch_norm(self.depthwise(h)))
        return self.dropout(self.pointwise_out(h)).transpose(1, 2)


class ConformerBlock(nn.Module):
    """x + ½FFN, + MHSA, + Conv, + ½FFN, then LayerNorm (the macaron sandwich of Gulati et al.)."""

    def __init__(self, d: int = D_MODEL, heads: int = HEADS, kernel: int = 31):
        super().__init__()
        self.ffn_in = FeedForward(d)
        self.attention_norm = nn.LayerNorm(d)
        self.attention = nn.MultiheadAttention(d, heads, dropout=0.1, batch_first=True)
        self.convolution = ConvolutionModule(d, kernel)
        self.ffn_out = FeedForward(d)
        self.norm = nn.LayerNorm(d)

    def attend(self, x: torch.Tensor) -> torch.Tensor:
        h = self.attention_norm(x)
        return self.attention(h, h, h, need_weights=False)[0]

    def stages(self, x: torch.Tensor) -> list[torch.Tensor]:
        """The residual stream after each of MODULES, in order; the last is the block's output."""
        out = []
        x = x + 0.5 * self.ffn_in(x)
        out.append(x)
        x = x + self.attend(x)
        out.append(x)
        x = x + self.convolution(x)
        out.append(x)
        x = x + 0.5 * self.ffn_out(x)
        out.append(x)
        out.append(self.norm(x))
        return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.stages(x)[-1]


def block(kernel: int = 31, seed: int = 0) -> ConformerBlock:
    """A Conformer block on seeded random weights, in eval mode (no dropout, BatchNorm's running statistics)."""
    if kernel < 1 or kernel % 2 == 0:
        raise ValueError("The depthwise kernel must be odd so that its window is centred.")
    torch.manual_seed(seed)
    return ConformerBlock(kernel=kernel).eval()


@dataclass(frozen=True)
class Reads:
    """Which input frames one output frame depends on: |dy_t/dx_j| summed over features, per part."""

    frame: int
    kernel: int
    by_part: dict[str, np.ndarray]  # part -> (T,) gradient norms over input frames

    def span(self, part: str) -> tuple[int, int]:
        """First and last input frame that part's output at `frame` depends on."""
        nonzero = np.flatnonzero(self.by_part[part] > 0)
        return int(nonzero[0]), int(nonzero[-1])


def reads(kernel: int = 31, frame: int = FRAMES // 2, frames: int = FRAMES, seed: int = 0) -> Reads:
    """Autograd on random speech-like frames: what the convolution module, attention and the block read."""
    model = block(kernel, seed)
    generator = torch.Generator().manual_seed(seed + 1)
    x = torch.randn(1, frames, D_MODEL, generator=generator, dtype=torch.float32)
    parts = {
        "convolution module": model.convolution,
        "self-attention": model.attend,
        "whole Conformer block": model,
    }
    by_part = {}
    with torch_threads(1):  # a small model: more threads only contend with other sessions
        for name, part in parts.items():
            inputs = x.clone().requires_grad_(True)
            part(inputs)[0, frame].pow(2).sum().backward()
            by_part[name] = inputs.grad[0].abs().sum(dim=1).numpy()
    return Reads(frame, kernel, by_part)


def source() -> str:
    """The code of the convolution module and the block, as the page shows it."""
    import inspect

    return "\n\n".join(inspect.getsource(part) for part in (FeedForward, ConvolutionModule, ConformerBlock))
