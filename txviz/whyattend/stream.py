"""The residual stream entering a block, as a sum of named parts at chosen positions, from one recorded run.

Pre-norm models: the stream is the embeddings plus every earlier head's output through the output
projection, each projection's bias and every earlier FFN's output, as recorded. Post-LN models (BERT):
each LayerNorm, its scale frozen from the run, is linear in its input, so the parts entering it leave it
centred, divided by that scale and multiplied by its gain, and its bias joins one "norm biases" part;
the stream stays an exact sum of the same parts, tracked through every norm.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from txviz.core.layouts import Layout, UnknownLayoutError
from txviz.core.running import Run, run_module
from txviz.whyattend.linear import CannotDecompose, frozen, matrix

FORMS = ("pre-norm", "post-LN")


@dataclass(frozen=True)
class Part:
    """One addend of the stream: its kind ('token', 'position', 'segment', 'head', 'o_bias', 'attn',
    'ffn', 'bias'; in feature mode 'feature', 'dict_bias', 'error'), the block that wrote it and the head,
    or the dictionary's feature."""

    kind: str
    layer: int | None = None
    head: int | None = None
    feature: int | None = None

    @property
    def name(self) -> str:
        named = {"token": "token embedding", "position": "position embedding", "segment": "segment embedding",
                 "bias": "biases", "dict_bias": "dictionary bias", "error": "reconstruction error"}  # fmt: skip
        if self.kind in named:
            return named[self.kind]
        if self.kind == "head":
            return f"L{self.layer}H{self.head}"
        if self.kind == "feature":
            return f"feature {self.feature}"
        return {"o_bias": f"L{self.layer} output bias", "attn": f"L{self.layer} attention",
                "ffn": f"L{self.layer} MLP"}[self.kind]  # fmt: skip


@dataclass(frozen=True)
class Stream:
    """The stream entering a block at ``positions``: ``vectors[n]`` is part n, (n_parts, P, D)."""

    parts: tuple[Part, ...]
    vectors: torch.Tensor
    positions: tuple[int, ...]
    actual: torch.Tensor  # (P, D) the stream as recorded, which the parts sum to


def _at(tensor: torch.Tensor, positions: list[int]) -> torch.Tensor:
    return tensor[0, positions].float()


def _attention_parts(run, model, layout: Layout, stack: str, layer: int, positions, expand: bool):
    """One block's attention output at ``positions``: per head (and the projection's bias) or whole."""
    if not expand:
        return [Part("attn", layer)], _at(run["attn", stack, layer], positions)[None]
    block = layout.block(model, stack, layer)
    w_o, b_o = matrix(block.get_submodule(layout.record.attention.o), layout.in_out)
    heads = run["head_out", stack, layer][0][:, positions].float()  # (H, P, Dh)
    n_heads, _, d_head = heads.shape
    per_head = torch.einsum("hpd,hde->hpe", heads, w_o.reshape(n_heads, d_head, -1))
    parts = [Part("head", layer, h) for h in range(n_heads)]
    if b_o is not None:
        parts.append(Part("o_bias", layer))
        per_head = torch.cat((per_head, b_o.expand(1, len(positions), -1)))
    return parts, per_head


def _embedding_parts(run, model, layout: Layout, stack: str, ids: torch.Tensor, positions: list[int]):
    """The stream entering block 0 as token (+ position, + segment) parts, and the recorded stream."""
    embed = _at(run["embed", stack], positions)
    table = layout.token_table(model, stack)
    token = table.weight.detach().float().cpu()[ids[0, positions].cpu()]
    if layout.form == "post-LN":
        return _post_ln_embeddings(model, layout, positions, token, embed)
    kind = layout.record.positions.kind if layout.record.positions else "none"
    if kind == "learned":
        return [Part("token"), Part("position")], torch.stack((token, embed - token)), embed
    if not torch.allclose(token, embed, atol=1e-5 * (1 + embed.abs().max().item())):
        raise CannotDecompose(
            "This model scales or changes its token embeddings before the first block in a way txviz does not "
            "track, so the stream's first part is not the token table's row."
        )
    return [Part("token")], token[None], embed


def _post_ln_embeddings(model, layout: Layout, positions, token, embed):
    """BERT-style: LayerNorm(token + position + segment), the norm frozen; its bias starts the bias part."""
    norm_module = layout.embedding_part(model, "embedding_norm")
    try:
        table = layout.position_table(model, "learned")
    except UnknownLayoutError:
        table = None
    if table is None or norm_module is None:
        raise CannotDecompose(
            "The model map names no BERT-style embeddings (token, position, LayerNorm) in this model."
        )
    at = torch.tensor(positions)
    offset = table.padding_idx  # RoBERTa counts positions after its padding index, which its table keeps
    position_ids = at + (offset + 1 if offset is not None else 0)
    position = table.weight.detach().float().cpu()[position_ids]
    vectors, parts = [token, position], [Part("token"), Part("position")]
    segments = layout.embedding_part(model, "segments")
    if segments is not None:
        vectors.append(segments.weight.detach().float().cpu()[torch.zeros_like(at)])
        parts.append(Part("segment"))
    stacked = torch.stack(vectors)
    norm = frozen(norm_module, stacked.sum(0), layout.norm_offset)
    out = torch.cat((norm.apply(stacked), norm.bias_at(len(positions))[None]))
    if not torch.allclose(out.sum(0), embed, atol=1e-4 * (1 + embed.abs().max().item())):
        raise CannotDecompose("The recorded embeddings are not LayerNorm(token + position + segment) here.")
    return [*parts, Part("bias")], out, embed


def stream(
    run: Run, model, layout: Layout, ids, layer: int, positions, expand: bool = True, stack=None
) -> Stream:
    """The stream entering block ``layer`` of ``stack`` at ``positions`` as its parts."""
    if layout.record is None:
        raise CannotDecompose(
            f"txviz places this {layout.model_type} model by discovery, so it does not know its blocks' "
            "projections and norms; the score cannot be split."
        )
    if layout.form not in FORMS:
        raise CannotDecompose(
            f"The {layout.family} family's block is {layout.form}; txviz splits scores in pre-norm and "
            "post-LN blocks only."
        )
    stack = stack or layout.last_stack
    positions = list(positions)
    parts, vectors, actual = _embedding_parts(run, model, layout, stack, ids, positions)
    if layout.form == "pre-norm":  # the parts only add up: one concatenation at the end, not one per block
        chunks = [vectors]
        for n in range(layer):
            new, added = _attention_parts(run, model, layout, stack, n, positions, expand)
            parts += [*new, Part("ffn", n)]
            chunks += [added, _at(run["ffn", stack, n], positions)[None]]
        actual = _at(run["resid", stack, layer - 1], positions) if layer else actual
        return Stream(tuple(parts), torch.cat(chunks), tuple(positions), actual)
    for n in range(layer):  # post-LN: every norm maps all the parts so far
        block = layout.block(model, stack, n)
        new, added = _attention_parts(run, model, layout, stack, n, positions, expand)
        parts, vectors = parts + new, torch.cat((vectors, added))
        x = actual + _at(run["attn", stack, n], positions)
        parts, vectors, actual = _through(block, layout, "norm1", parts, vectors, x)
        ffn = _at(run["ffn", stack, n], positions)
        parts, vectors = parts + [Part("ffn", n)], torch.cat((vectors, ffn[None]))
        parts, vectors, _ = _through(block, layout, "norm2", parts, vectors, actual + ffn)
        actual = _at(run["resid", stack, n], positions)
    return Stream(tuple(parts), vectors, tuple(positions), actual)


def _through(block, layout: Layout, role: str, parts, vectors, x):
    """Parts through a post-LN norm frozen at its recorded input ``x``; its bias joins the bias part. Also the
    norm's own output at ``x``."""
    module = block.get_submodule(layout.record.norm(role))
    norm = frozen(module, x, layout.norm_offset)
    vectors = norm.apply(vectors)
    bias = norm.bias_at(vectors.shape[1])
    if Part("bias") in parts:
        index = parts.index(Part("bias"))
        vectors[index] += bias
    else:
        parts, vectors = parts + [Part("bias")], torch.cat((vectors, bias[None]))
    out = run_module(module, x.to(module.weight.device, module.weight.dtype)).float().cpu()
    return parts, vectors, out
