"""The linear pieces between the residual stream and a head's scores: frozen norms, projections, rotary."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from txviz.core.errors import UserError
from txviz.core.running import run_module


class CannotDecompose(UserError):
    """The model has a piece between the stream and the score that is not linear with its scale frozen."""


@dataclass(frozen=True)
class FrozenNorm:
    """A norm with its scale taken from the run: x -> gain * centre(x) / scale + bias, linear but for bias."""

    gain: torch.Tensor  # (D,)
    bias: torch.Tensor | None  # (D,)
    center: bool  # LayerNorm subtracts the mean: a linear map of each part
    scale: torch.Tensor  # (P,) one divisor per position, from the run

    def apply(self, parts: torch.Tensor) -> torch.Tensor:
        """Parts (..., P, D) through the norm without its bias."""
        if self.center:
            parts = parts - parts.mean(-1, keepdim=True)
        return parts / self.scale[:, None] * self.gain

    def bias_at(self, n: int) -> torch.Tensor:
        """The norm's bias at n positions (zeros for RMSNorm)."""
        bias = self.bias if self.bias is not None else torch.zeros_like(self.gain)
        return bias.expand(n, -1)


def frozen(norm: torch.nn.Module, x: torch.Tensor, offset: float = 0.0) -> FrozenNorm:
    """Freeze ``norm``'s scale at ``x`` (P, D), an RMSNorm's gain ``offset`` + weight (Layout.norm_offset)."""
    weight = getattr(norm, "weight", None)
    if weight is None:
        raise CannotDecompose(f"{type(norm).__name__} has no gain txviz can read.")
    gain = weight.detach().float().cpu()
    if isinstance(norm, torch.nn.LayerNorm):
        center, eps = True, norm.eps
        bias = None if norm.bias is None else norm.bias.detach().float().cpu()
        scale = torch.sqrt(x.var(-1, unbiased=False) + eps)
    else:  # an RMSNorm: Llama's names the epsilon variance_epsilon, others eps
        center, bias = False, None
        eps = getattr(norm, "variance_epsilon", getattr(norm, "eps", 1e-6))
        scale = torch.sqrt(x.pow(2).mean(-1) + eps)
        if offset:  # Gemma's RMSNorm multiplies by 1 + weight: the model map says so, not its class name
            gain = offset + gain
    found = FrozenNorm(gain, bias, center, scale)
    expected = run_module(norm, x.to(weight.device, weight.dtype)).float().cpu()
    got = found.apply(x) + found.bias_at(len(x))
    if not torch.allclose(got, expected, rtol=1e-3, atol=1e-4 * (1 + expected.abs().max().item())):
        raise CannotDecompose(
            f"{type(norm).__name__} is not a LayerNorm or RMSNorm txviz can freeze: its output differs from "
            "gain x (x - mean) / scale + bias, so the score would not split exactly."
        )
    return found


def matrix(module: torch.nn.Module, in_out: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
    """A projection as (W (in, out), bias (out,)) in float32, for x @ W + b; ``in_out``: Layout.in_out."""
    bias = getattr(module, "bias", None)
    bias = None if bias is None else bias.detach().float().cpu()
    if isinstance(module, torch.nn.Linear):
        return module.weight.detach().float().cpu().T, bias
    weight = getattr(module, "weight", None)
    # GPT-2's Conv1D stores (in, out): the model map says which families do, not the class's name
    if in_out and isinstance(weight, torch.Tensor) and weight.dim() == 2:
        return weight.detach().float().cpu(), bias
    raise CannotDecompose(f"{module.__class__.__name__} is not a linear projection txviz can read.")


def rotate(v: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary positions on v (..., P, d) as Llama applies them (rotate_half), on the first cos.shape[-1] dims."""
    r = cos.shape[-1]
    a, rest = v[..., :r], v[..., r:]
    half = r // 2
    turned = torch.cat((-a[..., half:], a[..., :half]), -1)
    return torch.cat((a * cos + turned * sin, rest), -1)
