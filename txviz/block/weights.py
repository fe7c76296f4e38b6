"""One block's real weights in one plain shape, whatever names the model gives them."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from txviz.core.layouts import Layout, UnknownLayoutError
from txviz.core.model_map import WRITTEN_OUT, AttentionParts, FeedForwardParts


@dataclass(frozen=True)
class Linear:
    """y = x W^T + b, with W of shape (out, in)."""

    weight: torch.Tensor
    bias: torch.Tensor | None = None


@dataclass(frozen=True)
class Norm:
    """LayerNorm (subtract the mean, divide by the std) or RMSNorm (divide by the root mean square)."""

    kind: str  # "layer" or "rms"
    weight: torch.Tensor
    bias: torch.Tensor | None
    eps: float


@dataclass(frozen=True)
class Attention:
    q: Linear
    k: Linear
    v: Linear
    o: Linear
    n_heads: int
    n_kv_heads: int  # fewer than n_heads under grouped-query attention (GQA)
    head_dim: int
    scaling: float  # usually 1 / sqrt(head_dim)
    causal: bool
    rotary: bool  # rotary positions applied to queries and keys (Llama)


@dataclass(frozen=True)
class FeedForward:
    up: Linear
    down: Linear
    gate: Linear | None  # gated FFN (SwiGLU): down(act(gate x) * up x)
    activation: str


@dataclass(frozen=True)
class BlockWeights:
    """Everything one block computes with; ``cross`` only for encoder-decoder decoder blocks."""

    form: str  # "post-LN" or "pre-norm"
    attention: Attention
    norm1: Norm
    feed_forward: FeedForward
    norm2: Norm
    cross: Attention | None = None
    norm_cross: Norm | None = None


def _float(tensor: torch.Tensor) -> torch.Tensor:
    # The code runs on the recorded stream, which is float32 in every precision: weights of a
    # bfloat16 or float16 model are read as float32 (one block's copy; float32 ones are not copied).
    return tensor.detach().float()


def _linear(module) -> Linear:
    if type(module).__name__ == "Conv1D":  # GPT-2's Conv1D stores W as (in, out) and computes x W + b
        return Linear(_float(module.weight).T, _float(module.bias))
    return Linear(_float(module.weight), None if module.bias is None else _float(module.bias))


def _norm(module) -> Norm:
    if hasattr(module, "variance_epsilon"):  # Llama's RMSNorm
        return Norm("rms", _float(module.weight), None, float(module.variance_epsilon))
    if isinstance(module, torch.nn.LayerNorm):
        bias = None if module.bias is None else _float(module.bias)
        return Norm("layer", _float(module.weight), bias, float(module.eps))
    raise UnknownLayoutError(f"txviz cannot write out a {type(module).__name__} as code.")


def _attention(parts: AttentionParts, block, causal: bool, rotary: bool) -> Attention:
    """The record's attention parts read as plain (out, in) weights; head counts from their shapes."""
    module = block.get_submodule(parts.module)
    head_dim = int(getattr(module, "head_dim", None) or module.attention_head_size)
    if parts.qkv:  # one fused projection: rows q, then k, then v
        fused = _linear(block.get_submodule(parts.qkv))
        n = fused.weight.shape[0] // 3
        q, k, v = (
            Linear(
                fused.weight[i * n : (i + 1) * n],
                None if fused.bias is None else fused.bias[i * n : (i + 1) * n],
            )
            for i in range(3)
        )
    else:
        q, k, v = (_linear(block.get_submodule(p)) for p in (parts.q, parts.k, parts.v))
    return Attention(
        q, k, v, _linear(block.get_submodule(parts.o)), q.weight.shape[0] // head_dim,
        k.weight.shape[0] // head_dim, head_dim, float(module.scaling), causal, rotary,
    )  # fmt: skip


def _feed_forward(parts: FeedForwardParts, block, config) -> FeedForward:
    gate = _linear(block.get_submodule(parts.gate)) if parts.gate else None
    activation = getattr(config, "activation_function", None) or config.hidden_act
    return FeedForward(_linear(block.get_submodule(parts.up)), _linear(block.get_submodule(parts.down)), gate,
                       activation)  # fmt: skip


def block_weights(layout: Layout, model, stack: str, layer: int) -> BlockWeights:
    """The weights of block ``layer`` of ``stack``, read where the family's record says they are."""
    record = layout.record
    if record is not None and not record.code:
        raise UnknownLayoutError(
            f"txviz does not write out the block of a '{layout.model_type}' model as code yet (it writes out "
            f"{WRITTEN_OUT}; this one has {record.note}). Its residual stream, logit lens and interventions "
            "work."
        )
    if record is None:
        raise UnknownLayoutError(
            f"txviz cannot write out the block of a '{layout.model_type}' model as code: it writes out "
            f"{WRITTEN_OUT}. Its residual stream and logit lens still work on this page."
        )
    block, cfg, record = layout.block(model, stack, layer), model.config, record.in_stack(stack)
    cross = layout.stack(stack).cross
    causal = stack == "decoder" or bool(getattr(cfg, "is_decoder", False))
    rotary = record.positions is not None and record.positions.kind == "rotary"
    norm = lambda role: _norm(block.get_submodule(record.norm(role)))  # noqa: E731
    return BlockWeights(
        layout.form,
        _attention(record.attention, block, causal, rotary),
        norm("norm1"),
        _feed_forward(record.ffn, block, cfg),
        norm("norm2"),
        _attention(record.cross, block, False, False) if cross else None,
        norm("norm_cross") if cross else None,
    )
