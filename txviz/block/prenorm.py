"""The pre-norm block modern decoders use (Llama/SmolLM2, GPT-2), as code on real weights.

    Z = X + MultiHeadAttn(Norm(X))        (rotary positions inside attention for Llama)
    E = Z + FeedForward(Norm(Z))           (gated SiLU FFN for Llama, GELU for GPT-2)

Unlike the textbook's post-LN block, the norm sits on the branch, not on the stream: the
residual stream X -> Z -> E is a running sum that no norm rescales, so dE/dX is the identity plus
the branches' Jacobians, a direct route for gradients to early layers. GPT-2 (Radford et al. 2019)
moved LayerNorm to each sub-block's input; Xiong et al. (2020) analysed why this pre-LN form trains
without learning-rate warm-up. The price: the stream grows with depth, so a final norm is applied
before the output head.
"""

from __future__ import annotations

import torch

from txviz.block.ops import Steps, feed_forward, multi_head_attention, normalize
from txviz.block.weights import BlockWeights

LINES = (
    "Z = X + MultiHeadAttn(Norm(X))",
    "E = Z + FeedForward(Norm(Z))",
)
TOKENS = ("token", "feature")


def pre_norm_block(
    x: torch.Tensor, w: BlockWeights, rotary: tuple[torch.Tensor, torch.Tensor] | None = None
) -> tuple[torch.Tensor, Steps]:
    """E for block input X (T, D); ``rotary`` is the model's (cos, sin) for these positions."""
    steps = Steps()
    kind = "RMSNorm" if w.norm1.kind == "rms" else "LayerNorm"
    steps.add("X", "X = the block's input (the residual stream)", x, TOKENS)
    normed = steps.add("Norm(X)", f"N = {kind}(X)", normalize(x, w.norm1, steps, "X"), TOKENS)
    attended = multi_head_attention(normed, normed, w.attention, steps, rotary=rotary, inputs=("N", "N"))
    steps.add("MHA(N)", "MHA(N) = heads W_oᵀ", attended, TOKENS)
    z = steps.add("Z", "Z = X + MHA(N)  (the residual connection)", x + attended, TOKENS)
    normed = steps.add("Norm(Z)", f"N₂ = {kind}(Z)", normalize(z, w.norm2, steps, "Z"), TOKENS)
    fed = steps.add(
        "FFN(N₂)", "FeedForward(N₂) = H W_downᵀ", feed_forward(normed, w.feed_forward, steps, "N₂"), TOKENS
    )
    e = steps.add("E", "E = Z + FeedForward(N₂)", z + fed, TOKENS)
    return e, steps
