"""Q-, K- and V-composition scores (Elhage et al. 2021) of one head with every earlier head, from weights alone.

TransformerLens's definition (``utils.composition_scores``): ||left @ right||_F / (||left||_F ||right||_F)
with left the earlier head's OV = W_V W_O and right the later head's QK = W_Q W_K^T (Q), its transpose
(K) or its OV (V), residual vectors as rows (TransformerLens takes the norms of SVD-collapsed
factors, which leaves them unchanged). As TransformerLens's default ``fold_ln``, each reading
matrix includes its pre-norm's gain (a post-LN model's norms sit elsewhere and are left out). Every
norm is taken from d x d_head factors, never a d x d matrix.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from txviz.core.layouts import cached_layout
from txviz.whyattend.heads import projection
from txviz.whyattend.linear import matrix


@dataclass(frozen=True)
class HeadWeights:
    """One head's factors as residual-row matrices: W_Q, W_K, W_V (D, d_head), W_O (d_head, D)."""

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    o: torch.Tensor


def head_weights(model, layer: int, head: int, stack: str | None = None) -> HeadWeights:
    """The factors of head ``head`` in block ``layer``, the pre-norm's gain folded into the reading ones."""
    layout = cached_layout(model)
    stack = stack or layout.last_stack
    block = layout.block(model, stack, layer)
    attention = layout.record.attention
    w_o, _ = matrix(block.get_submodule(attention.o), layout.in_out)
    n_heads = model.config.num_attention_heads
    d_head = w_o.shape[0] // n_heads
    w_q, _, _ = projection(block, layout, "q", head, n_heads, d_head)
    w_k, _, kv = projection(block, layout, "k", head, n_heads, d_head)
    if attention.v is not None:
        w_v = matrix(block.get_submodule(attention.v), layout.in_out)[0][:, kv * d_head : (kv + 1) * d_head]
    else:  # fused: q, k, v side by side; v is the last third of what is not q
        fused = matrix(block.get_submodule(attention.qkv), layout.in_out)[0]
        start = n_heads * d_head + (fused.shape[1] - n_heads * d_head) // 2
        w_v = fused[:, start + kv * d_head : start + (kv + 1) * d_head]
    gain = torch.ones(w_q.shape[0])
    if layout.form == "pre-norm" and layout.record.norm("norm1"):
        gain = block.get_submodule(layout.record.norm("norm1")).weight.detach().float().cpu()
    return HeadWeights(gain[:, None] * w_q, gain[:, None] * w_k, gain[:, None] * w_v,
                       w_o[head * d_head : (head + 1) * d_head])  # fmt: skip


def _frobenius(left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
    """||left @ right.T||_F from the factors: sqrt(sum((L^T L) * (R^T R)))."""
    return torch.sqrt(((left.T @ left) * (right.T @ right)).sum().clamp_min(0))


def scores(model, layer: int, head: int, stack: str | None = None) -> dict[str, np.ndarray]:
    """'Q', 'K', 'V' -> (layer, n_heads) composition of head ``head`` of ``layer`` with each earlier head;
    NaN at and after its own layer (TransformerLens puts zeros there: blank cells read better)."""
    n_heads = model.config.num_attention_heads
    n_layers = cached_layout(model).stack(stack or cached_layout(model).last_stack).n_layers
    later = head_weights(model, layer, head, stack)
    found = {mode: np.full((n_layers, n_heads), np.nan, dtype=np.float32) for mode in "QKV"}
    # the later head's right factors, each as (A, B) with right = A @ B.T
    rights = {"Q": (later.q, later.k), "K": (later.k, later.q), "V": (later.v, later.o.T)}
    for earlier_layer in range(layer):
        for h in range(n_heads):
            earlier = head_weights(model, earlier_layer, h, stack)
            ov_norm = _frobenius(earlier.v, earlier.o.T)
            for mode, (a, b) in rights.items():
                # OV @ (A B^T) = W_V (W_O A) B^T
                product = _frobenius(earlier.v @ (earlier.o @ a), b)
                found[mode][earlier_layer, h] = float(product / (ov_norm * _frobenius(a, b)))
    return found
