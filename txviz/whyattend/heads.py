"""One head's queries or keys as a sum of parts: the stream's parts through the frozen norm, the head's
projection, its q/k norm (frozen too) and the rotation of each position (linear once the position is fixed)."""

from __future__ import annotations

import torch

from txviz.core.layouts import Layout
from txviz.core.running import run_module
from txviz.whyattend.linear import CannotDecompose, frozen, matrix, rotate
from txviz.whyattend.stream import Part, Stream


def projection(block, layout: Layout, side: str, head: int, n_heads: int, d_head: int):
    """(W (D, d_head), b (d_head,)) of ``head``'s query (side 'q') or its key head's key (side 'k')."""
    attention = layout.record.attention
    if attention.q is not None:
        w, b = matrix(block.get_submodule(attention.q if side == "q" else attention.k), layout.in_out)
        start = 0
    else:
        w, b = matrix(block.get_submodule(attention.qkv), layout.in_out)
        start = 0 if side == "q" else n_heads * d_head
    width = (
        n_heads * d_head
        if side == "q"
        else (w.shape[1] - start if attention.q else (w.shape[1] - start) // 2)
    )
    n_kv = width // d_head
    index = head if side == "q" else head // (n_heads // n_kv)  # grouped heads share a key head
    cols = slice(start + index * d_head, start + (index + 1) * d_head)
    bias = b[cols] if b is not None else torch.zeros(d_head)
    return w[:, cols], bias, index


def _rotary(model, layout: Layout, positions, d_head: int):
    """(cos, sin) (P, r) of the model's own rotary module at ``positions``, or None without rotary."""
    where = layout.record.positions
    if where is None or where.kind != "rotary":
        return None
    rotary = layout.position_table(model, "rotary")
    device = next(model.parameters()).device
    ids = torch.tensor([list(positions)], device=device)
    cos, sin = run_module(rotary, torch.zeros(1, len(positions), d_head, device=device), ids)
    return cos[0].float().cpu(), sin[0].float().cpu()


def head_parts(
    model, layout: Layout, stream: Stream, stack: str, layer: int, head: int, side: str, shape, columns
):
    """Parts and their vectors (n, C, d_head) of the head's query or key at the stream's ``columns`` (indices
    into its positions): a query needs one position, a row's keys all of them."""
    n_heads, d_head = shape
    block = layout.block(model, stack, layer)
    parts, vectors = list(stream.parts), stream.vectors[:, columns]
    actual, positions = stream.actual[columns], [stream.positions[c] for c in columns]
    n = len(columns)
    if layout.form == "pre-norm":
        path = layout.record.norm("norm1")
        if path is None:
            raise CannotDecompose(f"The {layout.family} record names no norm before attention.")
        module = block.get_submodule(path)
        norm = frozen(module, actual, layout.norm_offset)
        vectors, bias, x = (
            norm.apply(vectors),
            norm.bias_at(n),
            norm.apply(actual[None])[0] + norm.bias_at(n),
        )
    else:
        bias, x = torch.zeros_like(actual), actual
    w, b, _ = projection(block, layout, side, head, n_heads, d_head)
    out = vectors @ w
    bias_out = bias @ w + b
    qk_norm = getattr(layout.record.attention, f"{side}_norm")
    if qk_norm is not None:  # Qwen3, OLMo 2: a norm on each head's query and key, its scale frozen too
        norm = frozen(block.get_submodule(qk_norm), x @ w + b, layout.norm_offset)
        out, bias_out = norm.apply(out), norm.apply(bias_out[None])[0] + norm.bias_at(n)
    if Part("bias") in parts:
        out[parts.index(Part("bias"))] += bias_out
    else:
        parts.append(Part("bias"))
        out = torch.cat((out, bias_out[None]))
    turn = _rotary(model, layout, positions, d_head)
    if turn is not None:
        out = rotate(out, *turn)
    return tuple(parts), out
