"""One block's real weights in one plain shape, whatever names the model gives them."""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import torch

from txviz.core.layouts import Layout, UnknownLayoutError
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
class BlockWeights:
    """Everything one block computes with; ``cross`` only for encoder-decoder decoder blocks.

    A pre-norm block's norm1 and norm2 sit on the inputs of attention and the FFN (None where the
    block has none, as in OLMo 2); attn_out_norm and ffn_out_norm on their outputs (Gemma, OLMo 2).
    """

    form: str  # "post-LN" or "pre-norm"
    attention: Attention
    norm1: Norm | None
    feed_forward: FeedForward
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


def _linear(module) -> Linear:
    return Linear(_float(module.weight), None if module.bias is None else _float(module.bias))


def _conv1d(weight: torch.Tensor, bias: torch.Tensor) -> Linear:
    """GPT-2's Conv1D stores W as (in, out) and computes x W + b."""
    return Linear(_float(weight).T, _float(bias))


def _gain_offset(module) -> float:
    """1.0 for a norm whose forward scales by (1 + weight), as Gemma's RMSNorm does; else 0."""
    try:
        source = inspect.getsource(type(module).forward)
    except (OSError, TypeError):
        return 0.0
    return 1.0 if "(1.0 + self.weight" in source or "(1 + self.weight" in source else 0.0


def _norm(module) -> Norm:
    if isinstance(module, torch.nn.LayerNorm):
        bias = None if module.bias is None else _float(module.bias)
        return Norm("layer", _float(module.weight), bias, float(module.eps))
    eps = getattr(module, "variance_epsilon", getattr(module, "eps", None))
    if "RMSNorm" in type(module).__name__ and eps is not None and getattr(module, "weight", None) is not None:
        return Norm("rms", _float(module.weight), None, float(eps), _gain_offset(module))
    raise UnknownLayoutError(f"txviz cannot write out a {type(module).__name__} as code.")


def _bart_attention(module, causal: bool) -> Attention:
    heads = module.num_heads
    return Attention(
        _linear(module.q_proj), _linear(module.k_proj), _linear(module.v_proj), _linear(module.out_proj),
        heads, heads, module.head_dim, float(module.scaling), causal, False,
    )  # fmt: skip


def block_weights(layout: Layout, model, stack: str, layer: int) -> BlockWeights:
    """The weights of block ``layer`` of ``stack``."""
    if reads_eager(model):
        raise UnknownLayoutError(
            f"This {layout.model_type} model computes attention in its own code, not through transformers' "
            "attention interface, so txviz does not write its block out as code. Its residual stream and logit "
            "lens still work on this page."
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
    if layout.form == "post-LN":
        raise UnknownLayoutError(f"No block code for the {layout.family} family.")
    from txviz.block.decoders import prenorm_weights  # it builds on this module's parts

    base = model.get_submodule(layout.base)
    return prenorm_weights(model, block, rotary=hasattr(base, "rotary_emb"))
