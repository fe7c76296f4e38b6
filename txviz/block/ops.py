"""The operations of a block written out in plain torch, each intermediate kept as a named step."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

from txviz.block.weights import Attention, FeedForward, Linear, Norm
from txviz.core.layouts import UnknownLayoutError


@dataclass(frozen=True)
class Step:
    """One line of the block's code and the array it computed on the real weights."""

    name: str  # what the array is: "Q", "X + MHA(X)", ...
    code: str  # the line of code, as shown
    value: np.ndarray  # float32
    axes: tuple[str, ...]  # one name per axis of value: "token", "feature", "head", ...

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.value.shape)


@dataclass
class Steps:
    """The steps of one block in the order the code runs them."""

    items: list[Step] = field(default_factory=list)

    def add(self, name: str, code: str, tensor: torch.Tensor, axes: tuple[str, ...]) -> torch.Tensor:
        self.items.append(Step(name, code, tensor.detach().float().cpu().numpy(), axes))
        return tensor


def linear(x: torch.Tensor, layer: Linear) -> torch.Tensor:
    """x W^T + b."""
    y = x @ layer.weight.T
    return y if layer.bias is None else y + layer.bias


def normalize(x: torch.Tensor, norm: Norm, steps: Steps, name: str) -> torch.Tensor:
    """LayerNorm: (x - mean) / sqrt(var + eps) * g + b; RMSNorm: x / sqrt(mean(x^2) + eps) * g. Per token."""
    if norm.kind == "rms":
        rms = torch.sqrt(x.pow(2).mean(-1, keepdim=True) + norm.eps)
        steps.add(f"rms of {name}", f"rms = sqrt(mean({name}², features) + eps)", rms[:, 0], ("token",))
        return norm.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + norm.eps))
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    steps.add(f"mean of {name}", f"μ = mean({name}, features)", mean[:, 0], ("token",))
    steps.add(
        f"std of {name}",
        f"σ = sqrt(var({name}, features) + eps)",
        torch.sqrt(var + norm.eps)[:, 0],
        ("token",),
    )
    y = (x - mean) / torch.sqrt(var + norm.eps) * norm.weight
    return y if norm.bias is None else y + norm.bias


def activation(name: str, x: torch.Tensor) -> torch.Tensor:
    """The FFN's non-linearity, written out."""
    if name == "gelu":
        return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))
    if name in ("gelu_new", "gelu_pytorch_tanh", "gelu_fast"):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))
    if name in ("silu", "swish"):
        return x * torch.sigmoid(x)
    if name == "relu":
        return x.clamp(min=0)
    raise UnknownLayoutError(f"txviz cannot write out the activation '{name}' as code.")


def multi_head_attention(
    xq: torch.Tensor,  # (T, D): the queries' stream
    xkv: torch.Tensor,  # (S, D): the keys' and values' stream (the same for self-attention)
    a: Attention,
    steps: Steps,
    rotary: tuple[torch.Tensor, torch.Tensor] | None = None,  # (cos, sin) of shape (1, T, head_dim)
    label: str = "",
    inputs: tuple[str, str] = ("X", "X"),  # how the listing names xq and xkv
) -> torch.Tensor:
    """MultiHeadAttn(Q=xq, K=xkv, V=xkv): every head, concatenated, projected by W_o."""
    t, s = xq.shape[0], xkv.shape[0]
    q = linear(xq, a.q).view(t, a.n_heads, a.head_dim).transpose(0, 1)  # (H, T, d)
    k = linear(xkv, a.k).view(s, a.n_kv_heads, a.head_dim).transpose(0, 1)  # (H_kv, S, d)
    v = linear(xkv, a.v).view(s, a.n_kv_heads, a.head_dim).transpose(0, 1)
    if rotary is not None:  # positions enter here, by rotating q and k (transformers' own function)
        q, k = (r[0] for r in apply_rotary_pos_emb(q[None], k[None], *rotary))
    head_axes = ("head", "token", "feature")
    steps.add(
        f"Q{label}", f"Q = {inputs[0]} W_qᵀ + b_q, split into heads" + (", rotated" if rotary else ""), q,
        head_axes,
    )  # fmt: skip
    steps.add(
        f"K{label}", f"K = {inputs[1]} W_kᵀ + b_k, split into heads" + (", rotated" if rotary else ""), k,
        head_axes,
    )  # fmt: skip
    steps.add(f"V{label}", f"V = {inputs[1]} W_vᵀ + b_v, split into heads", v, head_axes)
    groups = a.n_heads // a.n_kv_heads
    k, v = k.repeat_interleave(groups, dim=0), v.repeat_interleave(groups, dim=0)  # GQA: shared K, V
    scores = q @ k.transpose(-1, -2) * a.scaling  # (H, T, S)
    if a.causal:
        future = torch.ones(t, s, dtype=torch.bool, device=scores.device).triu(1 + s - t)
        scores = scores.masked_fill(future, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    steps.add(
        f"A{label}", "A = softmax(Q Kᵀ / √d" + (" + causal mask" if a.causal else "") + ")", weights,
        ("head", "query", "key"),
    )  # fmt: skip
    heads = weights @ v  # (H, T, d)
    concat = heads.transpose(0, 1).reshape(t, a.n_heads * a.head_dim)
    steps.add(f"heads{label}", "heads = concat(A_h V_h for every head h)", concat, ("token", "feature"))
    steps.add(
        f"W_o{label}", "W_o: the output projection's weights", a.o.weight, ("out feature", "in feature")
    )
    return linear(concat, a.o)


def feed_forward(x: torch.Tensor, f: FeedForward, steps: Steps, name: str = "Z") -> torch.Tensor:
    """FeedForward(x) = W_2 act(W_1 x + b_1) + b_2; gated: W_down (act(W_gate x) * W_up x)."""
    if f.gate is None:
        hidden = activation(f.activation, linear(x, f.up))
        code = f"H = {f.activation}({name} W_1ᵀ + b_1)"
    else:
        hidden = activation(f.activation, linear(x, f.gate)) * linear(x, f.up)
        code = f"H = {f.activation}({name} W_gateᵀ) * ({name} W_upᵀ)"
    steps.add("H", code, hidden, ("token", "hidden unit"))
    return linear(hidden, f.down)
