"""The textbook (post-LN) encoder and decoder blocks as code, run on a model's real weights.

    EncoderBlock(X):                                  DecoderBlock(X, E):
    Z = LayerNorm(MultiHeadAttn(Q=X, K=X, V=X) + X)   Z = LayerNorm(MaskedMultiHeadAttn(Q=X, K=X, V=X) + X)
    E = LayerNorm(FeedForward(Z) + Z)                 Z' = LayerNorm(MultiHeadAttn(Q=Z, K=E, V=E) + Z)
                                                      D = LayerNorm(FeedForward(Z') + Z')

BERT (MiniLM) and BART's encoder compute the first; BART's decoder the second, with E the
encoder's output (probml's EncoderBlock and DecoderBlock).
"""

from __future__ import annotations

import torch

from txviz.block.ops import Steps, feed_forward, multi_head_attention, normalize
from txviz.block.weights import BlockWeights

LINES = (
    "Z = LayerNorm(MultiHeadAttn(Q=X, K=X, V=X) + X)",
    "E = LayerNorm(FeedForward(Z) + Z)",
)
DECODER_LINES = (
    "Z  = LayerNorm(MaskedMultiHeadAttn(Q=X, K=X, V=X) + X)",
    "Z' = LayerNorm(MultiHeadAttn(Q=Z, K=E, V=E) + Z)      E: the encoder's output",
    "D  = LayerNorm(FeedForward(Z') + Z')",
)
TOKENS = ("token", "feature")


def post_ln_block(
    x: torch.Tensor, w: BlockWeights, memory: torch.Tensor | None = None
) -> tuple[torch.Tensor, Steps]:
    """E for block input X (T, D); with ``memory`` (the encoder's output E) a decoder block's D."""
    steps = Steps()
    steps.add("X", "X = the block's input (the residual stream)", x, TOKENS)
    attended = multi_head_attention(x, x, w.attention, steps)
    steps.add("MHA(X)", "MHA(X) = heads W_oᵀ + b_o", attended, TOKENS)
    total = steps.add("MHA(X) + X", "S = MHA(X) + X  (the residual connection)", attended + x, TOKENS)
    z = steps.add("Z", "Z = LayerNorm(S)", normalize(total, w.norm1, steps, "S"), TOKENS)
    name, out = "Z", "E"
    if w.cross is not None and memory is not None:
        crossed = multi_head_attention(z, memory, w.cross, steps, label=" (cross)", inputs=("Z", "E"))
        total = steps.add(
            "MHA(Z, E) + Z", "S' = MHA(Q=Z, K=E, V=E) + Z  (E: the encoder's output)", crossed + z, TOKENS
        )
        z = steps.add("Z'", "Z' = LayerNorm(S')", normalize(total, w.norm_cross, steps, "S'"), TOKENS)
        name, out = "Z'", "D"  # the book's DecoderBlock: the FFN reads Z' and the block returns D
    fed = feed_forward(z, w.feed_forward, steps, name)
    steps.add(f"FFN({name})", f"FeedForward({name}) = H W_2ᵀ + b_2", fed, TOKENS)
    total = steps.add(f"FFN({name}) + {name}", f"S₂ = FeedForward({name}) + {name}", fed + z, TOKENS)
    e = steps.add(out, f"{out} = LayerNorm(S₂)", normalize(total, w.norm2, steps, "S₂"), TOKENS)
    return e, steps
