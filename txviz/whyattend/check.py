"""Check a decomposition by patching: take one part out of the query's (or key's) input only, rerun
through the front door, and compare the measured change of the score with the predicted one.

The prediction keeps every norm's scale as it was; the rerun recomputes the norm of the edited stream,
so in a pre-norm block the two differ by how much the part moved that scale. In a post-LN block
(BERT) the edited stream enters the attention without a norm and the two agree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from txviz.core.capture import CaptureSettings
from txviz.core.edits import Steer
from txviz.core.layouts import cached_layout
from txviz.core.running import run
from txviz.whyattend.decompose import BadEdge, Decomposition

SCORES = CaptureSettings(record=frozenset({"scores"}))


@dataclass(frozen=True)
class Check:
    """Predicted and measured change of the explained score when ``part`` leaves ``side``'s input."""

    side: str  # "query" or "key"
    part: int  # index into parts_q or parts_k
    name: str
    predicted: float
    measured: float
    scale_before: float  # the block's norm scale (root mean square or standard deviation) at that position
    scale_after: float


def model_scores(
    model, ids: torch.Tensor, layer: int, head: int, edits=(), stack: str | None = None
) -> np.ndarray:
    """The head's pre-softmax scores (Q, K) as the model computes them, optionally under edits."""
    layout = cached_layout(model)
    stack = stack or layout.last_stack
    recorded = run(
        model, CaptureSettings(record=frozenset({"scores"}), interventions=tuple(edits)), input_ids=ids
    )
    return recorded.get("scores", layer, head, stack=stack)[0].numpy()


def explained(d: Decomposition, scores: np.ndarray) -> float:
    """What ``d`` explains, read from the model's own scores (Q, K): the edge's, or its contrast or row."""
    row = scores[d.query]
    if d.mode == "contrast":
        return float(row[d.key] - row[d.contrast])
    if d.mode == "row":
        keys = np.isfinite(row)
        weights = np.exp(row[keys] - row[keys].max())
        return float(row[d.key] - (weights / weights.sum()) @ row[keys])
    return float(row[d.key])


def _norm_scale(stream: torch.Tensor, form: str) -> float:
    return float(stream.std(unbiased=False) if form == "post-LN" else stream.pow(2).mean().sqrt())


def patch_check(model, ids: torch.Tensor, d: Decomposition, side: str = "query", part: int | None = None,
                stack: str | None = None) -> Check:  # fmt: skip
    """Remove ``part`` (default: the largest by |sum|) of ``side`` from the stream entering block d.layer at
    that side's position only, and measure the score again."""
    sums = d.query_sums if side == "query" else d.key_sums
    names = d.parts_q if side == "query" else d.parts_k
    vectors = d.stream_q if side == "query" else d.stream_k
    if part is None:
        ranked = [n for n in np.argsort(-np.abs(sums)) if n < len(vectors) and names[n].kind != "bias"]
        part = int(ranked[0])
    if part >= len(vectors) or names[part].kind == "bias":
        raise BadEdge(
            "The biases are added inside the block, not carried by the stream: there is nothing to remove."
        )
    if d.query == d.key or (d.mode != "edge" and side == "key"):
        raise BadEdge("The check removes a part at one position: pick an edge whose key is another token.")
    position = d.query if side == "query" else d.key
    point = dict(point="embed") if d.layer == 0 else dict(point="resid", layer=d.layer - 1)
    edit = Steer(**point, positions=[position], vector=-vectors[part], stack=stack)
    before = model_scores(model, ids, d.layer, d.head, stack=stack)
    after = model_scores(model, ids, d.layer, d.head, [edit], stack)
    layout = cached_layout(model)
    stream = vectors.sum(0)
    return Check(
        side, part, names[part].name, -float(sums[part]), explained(d, after) - explained(d, before),
        _norm_scale(stream, layout.form), _norm_scale(stream - vectors[part], layout.form),
    )  # fmt: skip
