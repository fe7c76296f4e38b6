"""One block's real weights in one plain shape, whatever names the model gives them."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from txviz.core.layouts import Layout, UnknownLayoutError


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
    return Linear(_float(module.weight), None if module.bias is None else _float(module.bias))


def _conv1d(weight: torch.Tensor, bias: torch.Tensor) -> Linear:
    """GPT-2's Conv1D stores W as (in, out) and computes x W + b."""
    return Linear(_float(weight).T, _float(bias))


def _norm(module) -> Norm:
    if hasattr(module, "variance_epsilon"):  # Llama's RMSNorm
        return Norm("rms", _float(module.weight), None, float(module.variance_epsilon))
    if isinstance(module, torch.nn.LayerNorm):
        bias = None if module.bias is None else _float(module.bias)
        return Norm("layer", _float(module.weight), bias, float(module.eps))
    raise UnknownLayoutError(f"txviz cannot write out a {type(module).__name__} as code.")


def _bart_attention(module, causal: bool) -> Attention:
    heads = module.num_heads
    return Attention(
        _linear(module.q_proj), _linear(module.k_proj), _linear(module.v_proj), _linear(module.out_proj),
        heads, heads, module.head_dim, float(module.scaling), causal, False,
    )  # fmt: skip


def block_weights(layout: Layout, model, stack: str, layer: int) -> BlockWeights:
    """The weights of block ``layer`` of ``stack``."""
    if layout.family == "generic":
        raise UnknownLayoutError(
            f"txviz cannot write out the block of a '{layout.model_type}' model as code: it writes out "
            "BERT-style encoders, Llama-style and GPT-2-style decoders, and BART. Its residual stream and "
            "logit lens still work on this page."
        )
    block, cfg = layout.block(model, stack, layer), model.config
    if layout.family == "bert":
        self_attn, heads = block.attention.self, cfg.num_attention_heads
        attention = Attention(
            _linear(self_attn.query), _linear(self_attn.key), _linear(self_attn.value),
            _linear(block.attention.output.dense), heads, heads, self_attn.attention_head_size,
            float(self_attn.scaling), bool(cfg.is_decoder), False,
        )  # fmt: skip
        ffn = FeedForward(
            _linear(block.intermediate.dense), _linear(block.output.dense), None, cfg.hidden_act
        )
        return BlockWeights(
            layout.form,
            attention,
            _norm(block.attention.output.LayerNorm),
            ffn,
            _norm(block.output.LayerNorm),
        )
    if layout.family == "llama":
        a, mlp = block.self_attn, block.mlp
        attention = Attention(
            _linear(a.q_proj), _linear(a.k_proj), _linear(a.v_proj), _linear(a.o_proj),
            cfg.num_attention_heads, cfg.num_key_value_heads, a.head_dim, float(a.scaling), True, True,
        )  # fmt: skip
        ffn = FeedForward(
            _linear(mlp.up_proj), _linear(mlp.down_proj), _linear(mlp.gate_proj), cfg.hidden_act
        )
        return BlockWeights(
            layout.form, attention, _norm(block.input_layernorm), ffn, _norm(block.post_attention_layernorm)
        )
    if layout.family == "gpt2":
        a, d = block.attn, cfg.hidden_size
        w, b = a.c_attn.weight, a.c_attn.bias
        q, k, v = (_conv1d(w[:, i * d : (i + 1) * d], b[i * d : (i + 1) * d]) for i in range(3))
        attention = Attention(
            q, k, v, _conv1d(a.c_proj.weight, a.c_proj.bias), a.num_heads, a.num_heads, a.head_dim,
            float(a.scaling), True, False,
        )  # fmt: skip
        mlp = block.mlp
        ffn = FeedForward(
            _conv1d(mlp.c_fc.weight, mlp.c_fc.bias), _conv1d(mlp.c_proj.weight, mlp.c_proj.bias), None,
            cfg.activation_function,
        )  # fmt: skip
        return BlockWeights(layout.form, attention, _norm(block.ln_1), ffn, _norm(block.ln_2))
    if layout.family == "bart":
        decoder = stack == "decoder"
        ffn = FeedForward(_linear(block.fc1), _linear(block.fc2), None, cfg.activation_function)
        return BlockWeights(
            layout.form,
            _bart_attention(block.self_attn, causal=decoder),
            _norm(block.self_attn_layer_norm),
            ffn,
            _norm(block.final_layer_norm),
            _bart_attention(block.encoder_attn, causal=False) if decoder else None,
            _norm(block.encoder_attn_layer_norm) if decoder else None,
        )
    raise UnknownLayoutError(f"No block code for the {layout.family} family.")
