"""The textbook (post-LN) encoder block as code, run on a model's real weights.

    Z = LayerNorm(MultiHeadAttn(Q=X, K=X, V=X) + X)
    E = LayerNorm(FeedForward(Z) + Z)

BERT (MiniLM) and BART compute exactly this; BART's decoder adds a cross-attention sub-block,
    Z' = LayerNorm(MultiHeadAttn(Q=Z, K=M, V=M) + Z), with M the encoder's output.
"""

from __future__ import annotations

import torch

from txviz.block.ops import Steps, feed_forward, multi_head_attention, normalize
from txviz.block.weights import BlockWeights

LINES = (
    "Z = LayerNorm(MultiHeadAttn(Q=X, K=X, V=X) + X)",
    "E = LayerNorm(FeedForward(Z) + Z)",
)
TOKENS = ("token", "feature")


def post_ln_block(
    x: torch.Tensor, w: BlockWeights, memory: torch.Tensor | None = None
) -> tuple[torch.Tensor, Steps]:
    """E for block input X (T, D); ``memory`` is the encoder output for a cross-attention block."""
    steps = Steps()
    steps.add("X", "X = the block's input (the residual stream)", x, TOKENS)
    attended = multi_head_attention(x, x, w.attention, steps)
    steps.add("MHA(X)", "MHA(X) = heads W_oᵀ + b_o", attended, TOKENS)
    total = steps.add("MHA(X) + X", "S = MHA(X) + X  (the residual connection)", attended + x, TOKENS)
    z = steps.add("Z", "Z = LayerNorm(S)", normalize(total, w.norm1, steps, "S"), TOKENS)
    if w.cross is not None and memory is not None:
        crossed = multi_head_attention(z, memory, w.cross, steps, label=" (cross)")
        total = steps.add(
            "MHA(Z, M) + Z", "S' = MHA(Q=Z, K=M, V=M) + Z  (M: encoder output)", crossed + z, TOKENS
        )
        z = steps.add("Z'", "Z' = LayerNorm(S')", normalize(total, w.norm_cross, steps, "S'"), TOKENS)
    fed = feed_forward(z, w.feed_forward, steps)
    steps.add("FFN(Z)", "FeedForward(Z) = H W_2ᵀ + b_2", fed, TOKENS)
    total = steps.add("FFN(Z) + Z", "S₂ = FeedForward(Z) + Z", fed + z, TOKENS)
    e = steps.add("E", "E = LayerNorm(S₂)", normalize(total, w.norm2, steps, "S₂"), TOKENS)
    return e, steps
