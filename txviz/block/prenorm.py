"""The pre-norm block modern decoders use (Llama/SmolLM2, GPT-2), as code on real weights.

    Z = X + MultiHeadAttn(Norm(X))        (rotary positions inside attention for Llama)
    E = Z + FeedForward(Norm(Z))           (gated SiLU FFN for Llama, GELU for GPT-2)

Unlike the textbook's post-LN block, the norm sits on the branch, not on the stream: the
residual stream X -> Z -> E is a running sum that no norm rescales, so dE/dX is the identity plus
the branches' Jacobians, a direct route for gradients to early layers. GPT-2 (Radford et al. 2019)
moved LayerNorm to each sub-block's input; Xiong et al. (2020) analysed why this pre-LN form trains
without learning-rate warm-up. The price: the stream grows with depth, so a final norm is applied
before the output head.

Its variants keep the stream a running sum and move or add norms on the branches: Gemma normalises
each branch's output too (Z = X + PostNorm(MHA(Norm(X)))), OLMo 2 only its output
(Z = X + PostNorm(MHA(X))), and GPT-NeoX runs both branches side by side on X
(E = X + MHA(Norm₁(X)) + FFN(Norm₂(X))).
"""

from __future__ import annotations

import torch

from txviz.block.ops import Steps, feed_forward, multi_head_attention, normalize
from txviz.block.weights import BlockWeights, Experts

LINES = (
    "Z = X + MultiHeadAttn(Norm(X))",
    "E = Z + FeedForward(Norm(Z))",
)
TOKENS = ("token", "feature")


def lines(w: BlockWeights) -> tuple[str, ...]:
    """The block's two lines (one for a parallel block), with its norms where the model has them."""
    if w.parallel:
        return ("E = X + MultiHeadAttn(Norm₁(X)) + FeedForward(Norm₂(X))",)
    attn = "MultiHeadAttn(Norm(X))" if w.norm1 is not None else "MultiHeadAttn(X)"
    ffn = "FeedForward(Norm(Z))" if w.norm2 is not None else "FeedForward(Z)"
    if w.attn_out_norm is not None:
        attn = f"PostNorm({attn})"
    if w.ffn_out_norm is not None:
        ffn = f"PostNorm({ffn})"
    return (f"Z = X + {attn}", f"E = Z + {ffn}")


def variant_note(w: BlockWeights) -> str:
    """What this block adds to the plain pre-norm block, in a sentence or two ("" for none)."""
    notes = []
    if w.parallel:
        notes.append(
            "Attention and the FFN read the same input X side by side and both outputs are added in one "
            "step (the parallel block of GPT-J and GPT-NeoX): one norm each, no Z in between."
        )
    if w.norm1 is None and w.attn_out_norm is not None:
        notes.append(
            "The norms sit on each branch's output instead of its input (OLMo 2): the stream is still a "
            "running sum that no norm rescales."
        )
    elif w.attn_out_norm is not None:
        notes.append(
            "Each branch is normalised on its way in and on its way out (PostNorm), as Gemma does, before it "
            "is added to the stream."
        )
    if isinstance(w.feed_forward, Experts):
        m = w.feed_forward
        notes.append(
            f"The FFN is a mixture of {len(m.experts)} experts: a router scores them per token and the top "
            f"{m.top_k} run, their outputs summed with the router's weights"
            + (", beside a shared expert every token uses." if m.shared is not None else ".")
        )
    a = w.attention
    if a.q_norm is not None:
        notes.append("Queries and keys get an RMSNorm of their own before the dot product.")
    if a.softcap is not None:
        notes.append(
            f"Scores are soft-capped: {a.softcap:g} · tanh(score / {a.softcap:g}) keeps them within ±{a.softcap:g}."
        )
    if a.window is not None:
        notes.append(
            f"This layer's attention is a sliding window: each token sees itself and the {a.window - 1} before it."
        )
    return " ".join(notes)


def _kind(norm) -> str:
    return "RMSNorm" if norm.kind == "rms" else "LayerNorm"


def _branch_norm(value: torch.Tensor, norm, steps: Steps, name: str) -> torch.Tensor:
    """A norm on a branch's output (Gemma, OLMo 2), before the residual add."""
    if norm is None:
        return value
    code = f"PostNorm({name}) = {_kind(norm)}({name})"
    return steps.add(f"PostNorm({name})", code, normalize(value, norm, steps, name), TOKENS)


def pre_norm_block(
    x: torch.Tensor, w: BlockWeights, rotary: tuple[torch.Tensor, torch.Tensor] | None = None
) -> tuple[torch.Tensor, Steps]:
    """E for block input X (T, D); ``rotary`` is the model's (cos, sin) for these positions."""
    steps = Steps()
    steps.add("X", "X = the block's input (the residual stream)", x, TOKENS)
    normed, name = x, "X"
    if w.norm1 is not None:
        label = "Norm₁(X)" if w.parallel else "Norm(X)"
        normed = steps.add(label, f"N = {_kind(w.norm1)}(X)", normalize(x, w.norm1, steps, "X"), TOKENS)
        name = "N"
    attended = multi_head_attention(normed, normed, w.attention, steps, rotary=rotary, inputs=(name, name))
    steps.add(f"MHA({name})", f"MHA({name}) = heads W_oᵀ", attended, TOKENS)
    attended = _branch_norm(attended, w.attn_out_norm, steps, f"MHA({name})")
    if w.parallel:  # GPT-NeoX: the FFN reads X too, beside attention, not after it
        normed = steps.add("Norm₂(X)", f"N₂ = {_kind(w.norm2)}(X)", normalize(x, w.norm2, steps, "X"), TOKENS)
        fed = feed_forward(normed, w.feed_forward, steps, "N₂")
        steps.add("FFN(N₂)", "FeedForward(N₂) = H W_downᵀ", fed, TOKENS)
        e = steps.add("E", "E = X + MHA(N) + FeedForward(N₂)  (one residual add)", x + attended + fed, TOKENS)
        return e, steps
    z = steps.add("Z", f"Z = X + {steps.items[-1].name}  (the residual connection)", x + attended, TOKENS)
    normed, name = z, "Z"
    if w.norm2 is not None:
        normed = steps.add("Norm(Z)", f"N₂ = {_kind(w.norm2)}(Z)", normalize(z, w.norm2, steps, "Z"), TOKENS)
        name = "N₂"
    fed = steps.add(
        f"FFN({name})", f"FeedForward({name}) = H W_downᵀ", feed_forward(normed, w.feed_forward, steps, name),
        TOKENS,
    )  # fmt: skip
    added = f"FeedForward({name})"
    if w.ffn_out_norm is not None:
        fed, added = _branch_norm(fed, w.ffn_out_norm, steps, f"FFN({name})"), f"PostNorm(FFN({name}))"
    e = steps.add("E", f"E = Z + {added}", z + fed, TOKENS)
    return e, steps
