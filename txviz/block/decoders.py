"""A pre-norm decoder block's weights, whichever of the modern variants its modules spell out.

Llama, Mistral, Qwen3, Gemma 2 and 3, Phi-3, OLMo 2, GPT-NeoX and OPT blocks differ in a few
places only: where the norms sit (before a branch, after it, or both), whether attention and the
FFN read the same input side by side (GPT-NeoX), fused projections, RMSNorm of the queries and
keys, soft-capped scores and sliding windows. Each is read here from the block's own modules and
config; anything else is refused with the reason, never computed wrongly.
"""

from __future__ import annotations

import torch

from txviz.block.weights import Attention, BlockWeights, FeedForward, Linear, _float, _linear, _norm
from txviz.core.layouts import UnknownLayoutError


def _find(module: torch.nn.Module, *names: str) -> torch.nn.Module | None:
    for name in names:
        found = getattr(module, name, None)
        if isinstance(found, torch.nn.Module):
            return found
    return None


def _rows(linear: torch.nn.Module, start: int, stop: int) -> Linear:
    """Output features start..stop of a fused projection, as its own Linear."""
    bias = None if linear.bias is None else _float(linear.bias[start:stop])
    return Linear(_float(linear.weight[start:stop]), bias)


def _projections(a: torch.nn.Module, n_heads: int, n_kv: int, d: int) -> tuple[Linear, ...]:
    """(q, k, v, o) from separate or fused projections."""
    out = _find(a, "o_proj", "out_proj", "dense")
    if out is None:
        raise UnknownLayoutError("txviz finds no output projection in this model's attention.")
    if all(_find(a, n) is not None for n in ("q_proj", "k_proj", "v_proj")):
        return _linear(a.q_proj), _linear(a.k_proj), _linear(a.v_proj), _linear(out)
    if _find(a, "qkv_proj") is not None:  # Phi-3: [q | k | v] one after the other
        q, kv = n_heads * d, n_kv * d
        fused = a.qkv_proj
        return _rows(fused, 0, q), _rows(fused, q, q + kv), _rows(fused, q + kv, q + 2 * kv), _linear(out)
    if _find(a, "query_key_value") is not None and n_kv == n_heads:  # GPT-NeoX: per head [q | k | v]
        fused = a.query_key_value
        weight = _float(fused.weight).view(n_heads, 3, d, -1)
        bias = None if fused.bias is None else _float(fused.bias).view(n_heads, 3, d)
        return (
            *(
                Linear(weight[:, i].reshape(n_heads * d, -1), None if bias is None else bias[:, i].reshape(-1))
                for i in range(3)
            ),
            _linear(out),
        )  # fmt: skip
    raise UnknownLayoutError(
        "txviz cannot find this model's query, key and value projections (q_proj/k_proj/v_proj, qkv_proj or "
        "query_key_value), so it cannot write its attention out as code."
    )


def _window(a: torch.nn.Module, config) -> int | None:
    """The sliding window of this layer: its attention's own (per-layer models) or the config's."""
    if hasattr(a, "sliding_window"):
        return a.sliding_window or None
    return getattr(config, "sliding_window", None) or None


def _attention(a: torch.nn.Module, config, rotary: bool) -> Attention:
    if getattr(a, "sinks", None) is not None:
        raise UnknownLayoutError(
            "This model's attention has sinks (a learned extra score per head that takes part of the softmax); "
            "the block as code writes out a plain softmax. The residual stream and logit lens still work."
        )
    n_heads = config.num_attention_heads
    n_kv = getattr(config, "num_key_value_heads", None) or n_heads
    d = getattr(a, "head_dim", None) or getattr(a, "head_size", None) or config.hidden_size // n_heads
    q, k, v, o = _projections(a, n_heads, n_kv, d)
    q_norm, k_norm = (_find(a, name) for name in ("q_norm", "k_norm"))
    return Attention(
        q, k, v, o, n_heads, n_kv, d, float(a.scaling), True, rotary,
        None if q_norm is None else _norm(q_norm), None if k_norm is None else _norm(k_norm),
        getattr(a, "attn_logit_softcapping", None), _window(a, config),
    )  # fmt: skip


def _activation(config) -> str:
    for name in ("hidden_activation", "hidden_act", "activation_function"):
        if getattr(config, name, None):
            return getattr(config, name)
    raise UnknownLayoutError("txviz cannot tell this model's FFN activation from its config.")


def _feed_forward(block: torch.nn.Module, config) -> FeedForward:
    """Gated (gate/up/down, or Phi-3's fused gate_up) or plain (two linears) FFN."""
    mlp = _find(block, "mlp", "feed_forward")
    if mlp is None and _find(block, "fc1") is not None:  # OPT keeps fc1/fc2 in the block itself
        mlp = block
    if mlp is None:
        raise UnknownLayoutError("txviz finds no feed-forward network in this model's block.")
    if _find(mlp, "router", "gate", "experts") is not None and _find(mlp, "gate_proj") is None:
        raise UnknownLayoutError(
            "This model's feed-forward network is a mixture of experts (a router picks experts per token); "
            "the block as code writes out a dense FFN. The residual stream and logit lens still work."
        )
    act = _activation(config)
    if all(_find(mlp, n) is not None for n in ("gate_proj", "up_proj", "down_proj")):
        return FeedForward(_linear(mlp.up_proj), _linear(mlp.down_proj), _linear(mlp.gate_proj), act)
    if _find(mlp, "gate_up_proj") is not None:  # Phi-3: [gate | up]
        half = mlp.gate_up_proj.weight.shape[0] // 2
        gate, up = _rows(mlp.gate_up_proj, 0, half), _rows(mlp.gate_up_proj, half, 2 * half)
        return FeedForward(up, _linear(mlp.down_proj), gate, act)
    for up, down in (("fc1", "fc2"), ("dense_h_to_4h", "dense_4h_to_h"), ("c_fc", "c_proj")):
        if _find(mlp, up) is not None and _find(mlp, down) is not None:
            return FeedForward(_linear(getattr(mlp, up)), _linear(getattr(mlp, down)), None, act)
    raise UnknownLayoutError("txviz cannot find this model's FFN projections, so it cannot write them out.")


def _norms(block: torch.nn.Module, config) -> dict:
    """Each norm by its place: on the input or the output of attention and of the FFN."""
    named = {n: m for n, m in block.named_children() if "norm" in n.lower()}
    if "pre_feedforward_layernorm" in named:  # Gemma: a norm before and after each branch
        places = {
            "norm1": "input_layernorm", "attn_out_norm": "post_attention_layernorm",
            "norm2": "pre_feedforward_layernorm", "ffn_out_norm": "post_feedforward_layernorm",
        }  # fmt: skip
    elif "input_layernorm" not in named and "post_feedforward_layernorm" in named:  # OLMo 2: after only
        places = {"attn_out_norm": "post_attention_layernorm", "ffn_out_norm": "post_feedforward_layernorm"}
    elif "self_attn_layer_norm" in named:  # OPT
        if not getattr(config, "do_layer_norm_before", True):
            raise UnknownLayoutError(
                "This OPT model normalises after each residual add (post-LN, as OPT-350m does); the block as "
                "code writes out OPT's pre-norm form. The residual stream and logit lens still work."
            )
        places = {"norm1": "self_attn_layer_norm", "norm2": "final_layer_norm"}
    else:
        places = {"norm1": "input_layernorm", "norm2": "post_attention_layernorm"}
    missing = [name for name in places.values() if name not in named]
    unknown = sorted(set(named) - set(places.values()))
    if missing or unknown:
        what = (
            f"lacks {', '.join(missing)}"
            if missing
            else f"has norms txviz does not place: {', '.join(unknown)}"
        )
        raise UnknownLayoutError(f"This model's block {what}, so txviz cannot write it out as code.")
    return {place: _norm(named[name]) for place, name in places.items()}


def prenorm_weights(model: torch.nn.Module, block: torch.nn.Module, rotary: bool) -> BlockWeights:
    """The weights of one pre-norm decoder block, with its variant's extra norms and options."""
    config = model.config.get_text_config()
    a = _find(block, "self_attn", "attention")
    if a is None:
        raise UnknownLayoutError(
            "txviz finds no self-attention (self_attn or attention) in this model's block."
        )
    ffn = _feed_forward(block, config)  # first: a mixture of experts is the reason to give
    attention = _attention(a, config, rotary)
    norms = _norms(block, config)
    parallel = bool(getattr(block, "use_parallel_residual", False))
    if parallel and "norm2" not in norms:
        raise UnknownLayoutError("This model's parallel block has no norm for its FFN's input.")
    return BlockWeights(
        "pre-norm", attention, norms.get("norm1"), ffn, norms.get("norm2"),
        attn_out_norm=norms.get("attn_out_norm"), ffn_out_norm=norms.get("ffn_out_norm"), parallel=parallel,
    )  # fmt: skip
