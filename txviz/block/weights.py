"""One block's real weights in one plain shape, whatever names the model gives them."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from txviz.core.layouts import Layout, UnknownLayoutError
from txviz.core.model_map import WRITTEN_OUT, AttentionParts, FeedForwardParts, Record
from txviz.core.running import reads_eager


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
    offset: float = 0.0  # Gemma's RMSNorm scales by (1 + g), its gains stored around 0

    @property
    def gain(self) -> torch.Tensor:
        return self.weight + self.offset if self.offset else self.weight


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
    q_norm: Norm | None = None  # RMSNorm of the queries and keys (Qwen3, Gemma 3, OLMo 2)
    k_norm: Norm | None = None
    softcap: float | None = None  # Gemma 2: scores -> cap * tanh(scores / cap) before the softmax
    window: int | None = None  # sliding window: a query sees only its last ``window`` keys


@dataclass(frozen=True)
class FeedForward:
    up: Linear
    down: Linear
    gate: Linear | None  # gated FFN (SwiGLU): down(act(gate x) * up x)
    activation: str


@dataclass(frozen=True)
class Experts:
    """A mixture of experts in place of the FFN (Mixtral, Qwen-MoE): a router scores the experts per
    token, the top_k run and their outputs are summed, weighted by the router's probabilities."""

    router: Linear  # (n_experts, D)
    top_k: int
    renormalize: bool  # the chosen experts' probabilities rescaled to sum to 1
    experts: tuple[FeedForward, ...]
    shared: FeedForward | None = None  # Qwen2-MoE: one expert every token uses, scaled by a sigmoid gate
    shared_gate: Linear | None = None


@dataclass(frozen=True)
class BlockWeights:
    """Everything one block computes with; ``cross`` only for encoder-decoder decoder blocks.

    A pre-norm block's norm1 and norm2 sit on the inputs of attention and the FFN (None where the
    block has none, as in OLMo 2); attn_out_norm and ffn_out_norm on their outputs (Gemma, OLMo 2).
    """

    form: str  # "post-LN" or "pre-norm"
    attention: Attention
    norm1: Norm | None
    feed_forward: FeedForward | Experts
    norm2: Norm | None
    cross: Attention | None = None
    norm_cross: Norm | None = None
    attn_out_norm: Norm | None = None
    ffn_out_norm: Norm | None = None
    parallel: bool = False  # GPT-NeoX: E = X + MHA(Norm1(X)) + FFN(Norm2(X)), both read X


def _float(tensor: torch.Tensor) -> torch.Tensor:
    # The code runs on the recorded stream, which is float32 in every precision: weights of a
    # bfloat16 or float16 model are read as float32 (one block's copy; float32 ones are not copied).
    return tensor.detach().float()


def _linear(module, in_out: bool = False) -> Linear:
    """The projection as (out, in); ``in_out``: the record says it stores (in, out) and computes x W + b."""
    if in_out and not isinstance(module, torch.nn.Linear):  # GPT-2's Conv1D
        return Linear(_float(module.weight).T, _float(module.bias))
    return Linear(_float(module.weight), None if module.bias is None else _float(module.bias))


def _rows(linear: Linear, start: int, stop: int) -> Linear:
    """Output features start..stop of a fused projection, as a Linear of its own."""
    return Linear(linear.weight[start:stop], None if linear.bias is None else linear.bias[start:stop])


def _norm(module, offset: float = 0.0, rms: bool = False) -> Norm:
    """A LayerNorm, or an RMSNorm (``rms``: the record's) whose gain is ``offset`` + weight (``norm_offset``)."""
    if isinstance(module, torch.nn.LayerNorm):
        bias = None if module.bias is None else _float(module.bias)
        return Norm("layer", _float(module.weight), bias, float(module.eps))
    eps = getattr(module, "variance_epsilon", getattr(module, "eps", None))
    if rms and eps is not None and getattr(module, "weight", None) is not None:
        return Norm("rms", _float(module.weight), None, float(eps), offset)
    raise UnknownLayoutError(f"txviz cannot write out a {module.__class__.__name__} as code.")


def _fused(
    parts: AttentionParts, block, n_heads: int, n_kv: int, d: int, in_out: bool = False
) -> tuple[Linear, Linear, Linear]:
    """q, k, v from one fused projection: all queries, then keys, then values (GPT-2, Phi-3), or each
    head's query, key and value together (GPT-NeoX)."""
    fused = _linear(block.get_submodule(parts.qkv), in_out)
    if fused.weight.shape[0] != (n_heads + 2 * n_kv) * d:
        raise UnknownLayoutError(
            f"This model's fused projection {parts.qkv} has {fused.weight.shape[0]} outputs, not the "
            f"{(n_heads + 2 * n_kv) * d} its heads need: txviz cannot split it into queries, keys and values."
        )
    if parts.qkv_per_head:
        weight = fused.weight.view(n_heads, 3, d, -1)
        bias = None if fused.bias is None else fused.bias.view(n_heads, 3, d)
        return tuple(
            Linear(weight[:, i].reshape(n_heads * d, -1), None if bias is None else bias[:, i].reshape(-1))
            for i in range(3)
        )  # fmt: skip
    q, kv = n_heads * d, n_kv * d
    return _rows(fused, 0, q), _rows(fused, q, q + kv), _rows(fused, q + kv, q + 2 * kv)


def _window(module, config) -> int | None:
    """This layer's sliding window: its attention's own (models that alternate) or the config's."""
    if hasattr(module, "sliding_window"):
        return module.sliding_window or None
    return getattr(config, "sliding_window", None) or None


def _attention(parts: AttentionParts, block, config, causal: bool, rotary: bool, record: Record) -> Attention:
    """The record's attention parts read as plain (out, in) weights, with this layer's options."""
    module = block.get_submodule(parts.module)
    if getattr(module, "sinks", None) is not None:
        raise UnknownLayoutError(
            "This model's attention has sinks (a learned extra score per head that takes part of the softmax); "
            "the block as code writes out a plain softmax. The residual stream and logit lens still work."
        )
    d = int(
        getattr(module, "head_dim", None) or getattr(module, "head_size", None) or module.attention_head_size
    )
    if parts.qkv:
        n_heads = int(getattr(module, "num_heads", None) or config.num_attention_heads)
        n_kv = int(getattr(config, "num_key_value_heads", None) or n_heads)
        q, k, v = _fused(parts, block, n_heads, n_kv, d, record.in_out)
    else:
        q, k, v = (_linear(block.get_submodule(p), record.in_out) for p in (parts.q, parts.k, parts.v))
    q_norm, k_norm = (
        None if p is None else _norm(block.get_submodule(p), record.norm_offset, record.rms)
        for p in (parts.q_norm, parts.k_norm)
    )
    return Attention(
        q, k, v, _linear(block.get_submodule(parts.o), record.in_out), q.weight.shape[0] // d, k.weight.shape[0] // d, d,
        float(module.scaling), causal, rotary, q_norm, k_norm, getattr(module, "attn_logit_softcapping", None),
        _window(module, config) if causal else None,
    )  # fmt: skip


def _activation(config) -> str:
    for name in ("hidden_activation", "hidden_act", "activation_function"):
        if getattr(config, name, None):
            return getattr(config, name)
    raise UnknownLayoutError("txviz cannot tell this model's FFN activation from its config.")


def _feed_forward(parts: FeedForwardParts, block, config, in_out: bool = False) -> FeedForward:
    """Plain (up, down), gated (gate, up, down) or Phi-3's fused [gate | up] FFN."""
    down, act = _linear(block.get_submodule(parts.down), in_out), _activation(config)
    if parts.gate_up:
        fused = _linear(block.get_submodule(parts.gate_up), in_out)
        half = fused.weight.shape[0] // 2
        return FeedForward(_rows(fused, half, 2 * half), down, _rows(fused, 0, half), act)
    gate = _linear(block.get_submodule(parts.gate), in_out) if parts.gate else None
    return FeedForward(_linear(block.get_submodule(parts.up), in_out), down, gate, act)


def _experts(parts: FeedForwardParts, block, config) -> Experts:
    """The router and every expert's gated FFN, from the experts' stacked (E, 2F, D) and (E, D, F) weights."""
    module = block.get_submodule(parts.module)
    experts, router = getattr(module, "experts", None), getattr(module, "gate", None)
    plain = hasattr(experts, "gate_up_proj") and hasattr(experts, "down_proj")
    if (
        not plain
        or getattr(experts, "gate_up_proj_bias", None) is not None
        or getattr(router, "bias", None) is not None
    ):
        raise UnknownLayoutError(
            "This model's experts are not the plain gated FFNs with a bias-free router that the block as code "
            "writes out. Its residual stream and logit lens still work on this page."
        )
    act, half = _activation(config), experts.gate_up_proj.shape[1] // 2
    ffns = tuple(
        FeedForward(Linear(_float(w[half:])), Linear(_float(d)), Linear(_float(w[:half])), act)
        for w, d in zip(experts.gate_up_proj, experts.down_proj, strict=True)
    )
    shared = getattr(module, "shared_expert", None)
    shared_ffn = None
    if shared is not None:
        shared_ffn = FeedForward(
            _linear(shared.up_proj), _linear(shared.down_proj), _linear(shared.gate_proj), act
        )
    return Experts(
        Linear(_float(router.weight)), int(config.num_experts_per_tok), bool(getattr(router, "norm_topk_prob", True)),
        ffns, shared_ffn, _linear(module.shared_expert_gate) if shared is not None else None,
    )  # fmt: skip


def _refusal(layout: Layout, model, record: Record | None) -> str | None:
    """Why this model's block cannot be written out, or None."""
    tail = "Its residual stream and logit lens still work on this page."
    if reads_eager(model):
        return (
            f"This {layout.model_type} model computes attention in its own code, not through transformers' "
            f"attention interface, so txviz does not write its block out as code. {tail}"
        )
    if record is None:
        return (
            f"txviz cannot write out the block of a '{layout.model_type}' model as code: it writes out "
            f"{WRITTEN_OUT}. {tail}"
        )
    if not record.code:
        return (
            f"txviz does not write out the block of a '{layout.model_type}' model as code yet (it writes out "
            f"{WRITTEN_OUT}; this one has {record.note}). Its residual stream, logit lens and interventions work."
        )
    return None


def block_weights(layout: Layout, model, stack: str, layer: int) -> BlockWeights:
    """The weights of block ``layer`` of ``stack``, read where the family's record says they are."""
    record = layout.record
    reason = _refusal(layout, model, record)
    if reason:
        raise UnknownLayoutError(reason)
    block, cfg, record = (
        layout.block(model, stack, layer),
        model.config.get_text_config(),
        record.in_stack(stack),
    )
    cross = layout.stack(stack).cross
    causal = stack == "decoder" or bool(getattr(cfg, "is_decoder", False))
    rotary = record.positions is not None and record.positions.kind == "rotary"
    norm = lambda role: (  # noqa: E731
        _norm(block.get_submodule(record.norm(role)), record.norm_offset, record.rms)
        if record.norm(role)
        else None
    )
    form = (
        "post-LN" if layout.form == "post-LN" else "pre-norm"
    )  # sandwich, post-norm, parallel: pre-norm kin
    return BlockWeights(
        form,
        _attention(record.attention, block, cfg, causal, rotary, record),
        norm("norm1"),
        _experts(record.ffn, block, cfg)
        if record.ffn.experts
        else _feed_forward(record.ffn, block, cfg, record.in_out),
        norm("norm2"),
        _attention(record.cross, block, cfg, False, False, record) if cross else None,
        norm("norm_cross") if cross else None,
        attn_out_norm=norm("post_attn"),
        ffn_out_norm=norm("post_ffn"),
        parallel=layout.form == "parallel",
    )
