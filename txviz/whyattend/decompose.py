"""One head's pre-softmax score s_ij split exactly into (query-side part) x (key-side part) pairs.

With every norm's scale frozen at its value in the run, a head's query at i and key at j are linear in
the stream, and the stream is a sum of parts (txviz.whyattend.stream), so
s_ij = scaling * q_i . k_j = sum over (a, b) of scaling * q_i(a) . k_j(b). Contrast mode splits
s_ij - s_ij'; row mode splits s_ij - sum_k w_ik s_ik (the score against the row's softmax mean). All of
it comes from one recorded forward through the front door, then products of stored vectors. Given a
dictionary at the block's input, the parts are its features instead (txviz.whyattend.features).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from txviz.core.capture import CaptureSettings
from txviz.core.errors import UserError
from txviz.core.layouts import cached_layout
from txviz.core.running import Run, run
from txviz.features.sae import TopKSAE
from txviz.whyattend.features import check_mode, feature_stream
from txviz.whyattend.heads import head_parts
from txviz.whyattend.linear import CannotDecompose
from txviz.whyattend.stream import Part, stream

# What one decomposition records: every head's output, what attention and the FFN add, the stream.
SETTINGS = CaptureSettings(
    record=frozenset({"head_out"}), stages=frozenset({"attn", "ffn", "resid", "embed"})
)
MODES = ("edge", "contrast", "row")


class BadEdge(UserError):
    """The edge asked for has no score to explain."""


@dataclass(frozen=True)
class Decomposition:
    """pairs[a, b]: what query-side part a times key-side part b adds to the explained score."""

    layer: int
    head: int
    query: int
    key: int
    mode: str  # "edge", "contrast" (s_ij - s_ij') or "row" (s_ij - the row's softmax mean of s_ik)
    contrast: int | None
    parts_q: tuple[Part, ...]
    parts_k: tuple[Part, ...]
    pairs: np.ndarray  # (n_q, n_k) float32
    score: float  # what is explained: the pairs' sum
    edge_score: float  # s_ij itself
    row_scores: np.ndarray  # s_ik for the keys used: every key of the row in row mode (from the same parts)
    stream_q: torch.Tensor  # (n stream parts, D) the query side's parts in the stream entering the block
    stream_k: torch.Tensor  # (n stream parts, D) the key side's, at the key

    @property
    def query_sums(self) -> np.ndarray:
        """What removing each query-side part (norm frozen) takes away from the score: its row sum."""
        return self.pairs.sum(1)

    @property
    def key_sums(self) -> np.ndarray:
        return self.pairs.sum(0)


def record(model, ids: torch.Tensor) -> Run:
    """The one recorded forward every decomposition of this text reads."""
    return run(model, SETTINGS, input_ids=ids)


def _check(model, ids, layout, stack, layer, head, query, key, contrast):
    if next(model.parameters()).dtype != torch.float32:
        raise CannotDecompose(
            "The model's weights are not float32: load it in float32 (txviz decomposes in float32, so the "
            "parts sum to the model's own score)."
        )
    found = layout.stack(stack)
    if found.cross:
        raise CannotDecompose(
            "This stack's blocks add cross-attention to the stream, which txviz does not split into parts; "
            "choose the encoder's self-attention."
        )
    layout.check_layer(stack, layer)
    n = ids.shape[1]
    for what, at in (("query", query), ("key", key), ("second key", contrast)):
        if at is not None and not 0 <= at < n:
            raise BadEdge(f"The {what} position {at} is beyond the text: it has tokens 0 to {n - 1}.")
    causal = stack == "decoder"
    for at in (key, contrast):
        if causal and at is not None and at > query:
            raise BadEdge(
                f"Token {query} cannot attend to later token {at}: the causal mask sets that weight to zero, "
                "so there is no score to explain. Pick a key at or before the query."
            )
    return causal


def decompose(
    model,
    ids: torch.Tensor,
    layer: int,
    head: int,
    query: int,
    key: int,
    *,
    mode: str = "edge",
    contrast: int | None = None,
    expand: bool = True,
    recorded: Run | None = None,
    stack: str | None = None,
    features: TopKSAE | None = None,
) -> Decomposition:
    """Split head ``head`` of block ``layer``'s score from ``query`` to ``key`` (see the module); with
    ``features``, a dictionary at the block's input, into (query feature) x (key feature) pairs."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    if features is not None:
        check_mode(mode)
    layout = cached_layout(model)
    if layout.record is None:
        raise CannotDecompose(
            f"txviz places this {layout.model_type} model by discovery and does not know its projections and "
            "norms, so it cannot split a score."
        )
    stack = stack or layout.last_stack
    if mode == "contrast" and contrast is None:
        raise BadEdge("Contrast mode needs a second key.")
    causal = _check(
        model, ids, layout, stack, layer, head, query, key, contrast if mode == "contrast" else None
    )
    recorded = recorded or record(model, ids)
    heads = recorded["head_out", stack, layer]
    n_heads, d_head = heads.shape[1], heads.shape[-1]
    if not 0 <= head < n_heads:
        raise BadEdge(f"Block {layer} has heads 0 to {n_heads - 1}; there is no head {head}.")
    if mode == "row":  # every key of the row
        keys = list(range(query + 1 if causal else ids.shape[1]))
    else:  # only the keys asked: the stream at two or three positions
        keys = list(
            dict.fromkeys(k for k in (key, contrast if mode == "contrast" else None) if k is not None)
        )
    positions = sorted({query, *keys})
    at = {p: n for n, p in enumerate(positions)}
    flow = stream(recorded, model, layout, ids, layer, positions, expand and features is None, stack)
    if features is not None:  # the same recorded stream, written in the dictionary's features instead
        flow = feature_stream(flow, features)
    shape = (n_heads, d_head)
    parts_q, q = head_parts(model, layout, flow, stack, layer, head, "q", shape, [at[query]])
    parts_k, k = head_parts(model, layout, flow, stack, layer, head, "k", shape, [at[p] for p in keys])
    scaling = getattr(
        layout.block(model, stack, layer).get_submodule(layout.record.attention.module), "scaling", None
    )
    scaling = d_head**-0.5 if scaling is None else float(scaling)
    q_i = q[:, 0] * scaling  # (n_q, d)
    k_row = k  # (n_k, K, d)
    row_scores = torch.einsum("ad,bkd->k", q_i, k_row)
    k_j = k[:, keys.index(key)]
    if mode == "contrast":
        k_j = k_j - k[:, keys.index(contrast)]
    elif mode == "row":
        weights = torch.softmax(row_scores, 0)
        k_j = k_j - torch.einsum("k,bkd->bd", weights, k_row)
    pairs = (q_i @ k_j.T).numpy()
    stream_parts = len(flow.parts)
    return Decomposition(
        layer, head, query, key, mode, contrast if mode == "contrast" else None, parts_q, parts_k, pairs,
        float(pairs.sum()), float(row_scores[keys.index(key)]), row_scores.numpy(),
        flow.vectors[:stream_parts, at[query]], flow.vectors[:stream_parts, at[key]],
    )  # fmt: skip
