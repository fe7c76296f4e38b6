"""The operations of a block written out in plain torch, each intermediate kept as a named step."""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field

import numpy as np
import torch

from txviz.block.weights import Attention, Experts, FeedForward, Linear, Norm
from txviz.core.layouts import UnknownLayoutError
from txviz.core.running import run_module


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
        return norm.gain * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + norm.eps))
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


def rms_norm(x: torch.Tensor, norm: Norm) -> torch.Tensor:
    """RMSNorm over the last axis, without steps: the queries' and keys' norm (per head or whole)."""
    return norm.gain * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + norm.eps))


def rotary_angles(rotary_emb: torch.nn.Module, config, n_tokens: int, layer: int, device):
    """The model's own (cos, sin) for positions 0..T-1 from its rotary module; models whose sliding-window
    layers turn at another base (Gemma 3) are asked for this layer's type."""
    x = torch.zeros(1, n_tokens, 1, dtype=torch.float32, device=device)
    positions = torch.arange(n_tokens, device=device)[None]
    types = getattr(config.get_text_config(), "layer_types", None)
    if types and "layer_type" in inspect.signature(rotary_emb.forward).parameters:
        return run_module(rotary_emb, x, positions, types[layer])
    return run_module(rotary_emb, x, positions)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary positions: the first cos.shape[-1] features of each head turn by the position's angles.

    Each feature i of the first half pairs with feature i + half (Llama's rotate_half); features past
    the rotary width (GPT-NeoX rotates a quarter of each head) pass unchanged."""
    width = cos.shape[-1]
    turned, kept = x[..., :width], x[..., width:]
    half = width // 2
    swapped = torch.cat((-turned[..., half:], turned[..., :half]), dim=-1)
    return torch.cat((turned * cos + swapped * sin, kept), dim=-1)


def _mask(t: int, s: int, causal: bool, window: int | None, device) -> torch.Tensor | None:
    """True where a query may not see a key: the future, and keys ``window`` or more positions back."""
    if not causal and window is None:
        return None
    query = torch.arange(t, device=device)[:, None] + s - t
    key = torch.arange(s, device=device)[None, :]
    hidden = key > query if causal else torch.zeros(t, s, dtype=torch.bool, device=device)
    return hidden | (query - key >= window) if window is not None else hidden


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
    q, k = linear(xq, a.q), linear(xkv, a.k)
    whole = a.q_norm is not None and a.q_norm.weight.shape[0] != a.head_dim
    if whole:  # OLMo 2 normalises all heads' queries (and keys) together, before the split
        q, k = rms_norm(q, a.q_norm), rms_norm(k, a.k_norm)
    q = q.view(t, a.n_heads, a.head_dim).transpose(0, 1)  # (H, T, d)
    k = k.view(s, a.n_kv_heads, a.head_dim).transpose(0, 1)  # (H_kv, S, d)
    v = linear(xkv, a.v).view(s, a.n_kv_heads, a.head_dim).transpose(0, 1)
    if a.q_norm is not None and not whole:  # Qwen3, Gemma 3: each head's query and key on its own
        q, k = rms_norm(q, a.q_norm), rms_norm(k, a.k_norm)
    if rotary is not None:  # positions enter here, by rotating q and k by the model's own angles
        cos, sin = (r[0] for r in rotary)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
    notes = (", RMSNorm of all heads'" if whole else ", RMSNorm per head" if a.q_norm is not None else "") + (
        ", rotated" if rotary else ""
    )
    head_axes = ("head", "token", "feature")
    steps.add(f"Q{label}", f"Q = {inputs[0]} W_qᵀ + b_q, split into heads{notes}", q, head_axes)
    steps.add(f"K{label}", f"K = {inputs[1]} W_kᵀ + b_k, split into heads{notes}", k, head_axes)
    steps.add(f"V{label}", f"V = {inputs[1]} W_vᵀ + b_v, split into heads", v, head_axes)
    groups = a.n_heads // a.n_kv_heads
    k, v = k.repeat_interleave(groups, dim=0), v.repeat_interleave(groups, dim=0)  # GQA: shared K, V
    scores = q @ k.transpose(-1, -2) * a.scaling  # (H, T, S)
    formula = "Q Kᵀ / √d"
    if a.softcap is not None:  # Gemma 2 bounds every score to (-cap, cap), smoothly
        scores = a.softcap * torch.tanh(scores / a.softcap)
        formula = f"{a.softcap:g} · tanh(Q Kᵀ / √d / {a.softcap:g})"
    hidden = _mask(t, s, a.causal, a.window, scores.device)
    if hidden is not None:
        scores = scores.masked_fill(hidden, float("-inf"))
    masks = (" + causal mask" if a.causal else "") + (f", last {a.window} keys only" if a.window else "")
    weights = torch.softmax(scores, dim=-1)
    steps.add(f"A{label}", f"A = softmax({formula}{masks})", weights, ("head", "query", "key"))
    heads = weights @ v  # (H, T, d)
    concat = heads.transpose(0, 1).reshape(t, a.n_heads * a.head_dim)
    steps.add(f"heads{label}", "heads = concat(A_h V_h for every head h)", concat, ("token", "feature"))
    steps.add(
        f"W_o{label}", "W_o: the output projection's weights", a.o.weight, ("out feature", "in feature")
    )
    return linear(concat, a.o)


def _expert(x: torch.Tensor, f: FeedForward) -> torch.Tensor:
    """One gated FFN without steps: W_down (act(W_gate x) * W_up x)."""
    return linear(activation(f.activation, linear(x, f.gate)) * linear(x, f.up), f.down)


def mixture(x: torch.Tensor, m: Experts, steps: Steps, name: str) -> torch.Tensor:
    """The router's top-k experts per token, their outputs summed with the router's weights."""
    probs = torch.softmax(linear(x, m.router), dim=-1)  # (T, E)
    steps.add("router", f"P = softmax({name} W_routerᵀ)", probs, ("token", "expert"))
    top, chosen = probs.topk(m.top_k, dim=-1)
    if m.renormalize:
        top = top / top.sum(-1, keepdim=True)
    weights = torch.zeros_like(probs).scatter(-1, chosen, top)  # (T, E): 0 for experts not chosen
    code = (
        f"G = P at each token's top {m.top_k} experts"
        + (", rescaled to sum to 1" if m.renormalize else "")
        + ", 0 elsewhere"
    )
    steps.add("expert weights", code, weights, ("token", "expert"))
    out = torch.zeros_like(x)
    for e, expert in enumerate(m.experts):
        used = weights[:, e] > 0
        if used.any():  # each expert runs on the tokens that chose it only
            out[used] += weights[used, e, None] * _expert(x[used], expert)
    if m.shared is not None:
        out = out + torch.sigmoid(linear(x, m.shared_gate)) * _expert(x, m.shared)
    return out


def feed_forward(x: torch.Tensor, f: FeedForward | Experts, steps: Steps, name: str = "Z") -> torch.Tensor:
    """FeedForward(x) = W_2 act(W_1 x + b_1) + b_2; gated: W_down (act(W_gate x) * W_up x); a mixture of
    experts: the router's weighted sum of its top-k experts."""
    if isinstance(f, Experts):
        return mixture(x, f, steps, name)
    if f.gate is None:
        hidden = activation(f.activation, linear(x, f.up))
        code = f"H = {f.activation}({name} W_1ᵀ + b_1)"
    else:
        hidden = activation(f.activation, linear(x, f.gate)) * linear(x, f.up)
        code = f"H = {f.activation}({name} W_gateᵀ) * ({name} W_upᵀ)"
    steps.add("H", code, hidden, ("token", "hidden unit"))
    return linear(hidden, f.down)
