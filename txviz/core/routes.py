"""The route planner: how one attention call is computed, picked once per call.

Three routes, each held to eager attention by the tests:

- ``Sdpa``: the fused kernel, when nothing needs the weights (the fast path of every plain forward);
- ``Explicit``: scores, masks, normaliser and weights step by step, when weights or scores are
  recorded or the maths is not plain softmax (a normaliser, an extra mask, knockouts, soft-capping,
  sinks, a position bias); a call's weights go straight into a preallocated slot when one is given;
- ``Blockwise``: queries a block at a time, each block folded by the call's reductions
  (txviz.core.reduction) and dropped. A reduction that can fuse the call (row statistics) gives the
  output and each row's log-partition from one kernel call; the others are folded from blocks.

``plan(call, reductions)`` is the only place that chooses; the routes hold no flags of their own.
The explicit route and the fold mask their scores by the same rules (txviz.core.masking).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from transformers.integrations.sdpa_attention import repeat_kv, sdpa_attention_forward

from txviz.core import attention, masking
from txviz.core.errors import UserError
from txviz.core.reduction import Block, Reduction

# Settings are txviz.core.capture.CaptureSettings; capture imports this module, so they are typed Any here.
CaptureSettings = Any

_SLOW = frozenset(
    {"weights", "scores", "queries", "keys", "values"}
)  # recorded items only the explicit route has
_MATHS = ("softcap", "s_aux", "sinks", "position_bias")  # kwargs SDPA does not apply


class UnsupportedAttention(UserError):
    """The model's attention takes an argument txviz does not know how to apply."""


@dataclass(frozen=True, eq=False)
class Call:
    """One attention call as a route sees it: the tensors, the model's arguments and the settings."""

    module: torch.nn.Module
    query: torch.Tensor  # (B, H, Q, D)
    key: torch.Tensor  # (B, H_kv, K, D)
    value: torch.Tensor  # (B, H_kv, K, D)
    attention_mask: torch.Tensor | None
    dropout: float
    scaling: float | None
    is_causal: bool | None  # as transformers passed it
    settings: CaptureSettings
    knockouts: Any  # this module's knockout edits (txviz.core.edits), or None
    kwargs: dict
    into: torch.Tensor | None = None  # (B, H, Q, K) float32: write the weights here (Recorder.slot)

    @property
    def causal(self) -> bool:
        return bool(
            self.is_causal if self.is_causal is not None else getattr(self.module, "is_causal", False)
        )

    @property
    def scale(self) -> float:
        return self.query.shape[-1] ** -0.5 if self.scaling is None else self.scaling

    @property
    def softmax_only(self) -> bool:
        """Plain masked softmax: no normaliser, extra mask, knockouts or maths SDPA does not apply."""
        s = self.settings
        return s.normalize is None and s.extra_mask is None and not self.knockouts and not self.special

    @property
    def special(self) -> bool:
        """Soft-capping, sinks, a position bias, or a sliding window that no mask carries."""
        window = self.kwargs.get("sliding_window") is not None and self.attention_mask is None
        return window or any(self.kwargs.get(k) is not None for k in _MATHS)


Result = tuple[torch.Tensor, torch.Tensor | None, dict]  # output (B, Q, H, D), weights, record fields


def plan(call: Call, reductions: tuple[Reduction, ...]) -> Sdpa | Explicit | Blockwise:
    """The one route for this call."""
    recorded = bool(call.settings.record & _SLOW) or bool(call.kwargs.get("output_attentions"))
    if reductions and call.special:  # the block-by-block fold writes out plain masked softmax only
        raise UnsupportedAttention(
            f"{type(call.module).__name__} uses soft-capping, attention sinks, a position bias or a sliding "
            "window without a mask, which the long-document view does not apply yet: open this model "
            "in the Attention Explorer instead."
        )
    if recorded or (not reductions and not call.softmax_only):
        return Explicit(reductions)
    return Blockwise(reductions) if reductions else SDPA


@dataclass(frozen=True)
class Sdpa:
    """The fused kernel: the output only."""

    def __call__(self, call: Call) -> Result:
        output, weights = sdpa_attention_forward(
            call.module, call.query, call.key, call.value, call.attention_mask,
            call.dropout, call.scaling, call.is_causal, **call.kwargs,
        )  # fmt: skip
        return output, weights, {}


SDPA = Sdpa()


@dataclass(frozen=True)
class Explicit:
    """Every weight written out; any reductions fold the whole map as one block."""

    reductions: tuple[Reduction, ...] = ()

    def __call__(self, call: Call) -> Result:
        output, weights, record = explicit(call)
        n_query, n_key = weights.shape[-2:]
        offset = n_key - n_query
        for reduction in self.reductions:
            start, stop = reduction.rows or (offset, n_key)
            block = weights[..., start - offset : stop - offset, : stop if call.causal else n_key]
            record[reduction.record_as] = reduction.finish(
                reduction.reduce(None, Block(start, block.float()))
            )
        return output, weights, record


@dataclass(frozen=True)
class Blockwise:
    """Queries a block at a time, folded by each reduction; a reduction that can fuse the call goes first."""

    reductions: tuple[Reduction, ...]

    def __call__(self, call: Call) -> Result:
        q, k, mask = call.query, call.key, call.attention_mask
        fusable = call.softmax_only and not call.module.training
        first = next((r for r in self.reductions if fusable and r.can_fuse(q, k, mask, call.causal)), None)
        first = first or next((r for r in self.reductions if r.rows is None), None)
        record, log_partition = {}, None
        if first is None:  # only some rows are asked for: the output comes whole from another route
            output = (SDPA if call.softmax_only else Explicit())(call)[0]
        elif fusable and first.can_fuse(q, k, mask, call.causal):
            fused = first.fuse(q, k, call.value, call.scale)
            output, log_partition = fused.output.to(q.dtype).transpose(1, 2).contiguous(), fused.log_partition
            record[first.record_as] = fused.result
        else:
            output, state = fold(call, first, with_output=True)
            record[first.record_as] = first.finish(state)
        for reduction in self.reductions:
            if reduction is not first:
                state = fold(call, reduction, log_partition=log_partition)[1]
                record[reduction.record_as] = reduction.finish(state)
        return output, None, record


def explicit(call: Call) -> Result:
    """Attention computed step by step: scores, masks, the normaliser, weights, output, records."""
    settings, query, key, kwargs = call.settings, call.query, call.key, call.kwargs
    # each step in place on the product's own fresh tensor: a new (B, H, Q, K) per step costs more in
    # page faults than its arithmetic, and eager attention pays three of them
    scores = _grouped(query, key.transpose(2, 3)).float().mul_(call.scale)  # (B, H, Q, K)
    if kwargs.get("softcap") is not None:
        scores = kwargs["softcap"] * torch.tanh(scores / kwargs["softcap"])
    if kwargs.get("position_bias") is not None:
        scores = scores + kwargs["position_bias"]
    n_query, n_key = scores.shape[-2:]
    sinks = kwargs.get("s_aux", kwargs.get("sinks"))
    if sinks is not None and settings.normalize is not None:
        raise UnsupportedAttention(
            "This model's attention has sinks (a learned extra score per head that takes part of the "
            "softmax), so another normaliser would not be the model's attention with a change. Use "
            "softmax, or a model without attention sinks."
        )
    scores = masking.mask(call, scores, n_key - n_query)
    weights = _normalized(call, scores, sinks, masking.may_empty_rows(call))
    if call.module.training and call.dropout > 0:
        weights = torch.nn.functional.dropout(weights, p=call.dropout)
    output = _grouped(weights.to(call.value.dtype), call.value).transpose(1, 2).contiguous()
    rows = slice(-1, None) if settings.newest_query_only else slice(None)
    groups = query.shape[1] // key.shape[1]
    record = {
        "weights": keep(weights[..., rows, :], "weights", settings),
        "scores": keep(scores[..., rows, :], "scores", settings),
        "queries": keep(query[..., rows, :], "queries", settings),
        "keys": keep(repeat_kv(key, groups), "keys", settings) if "keys" in settings.record else None,
        "values": keep(repeat_kv(call.value, groups), "values", settings)
        if "values" in settings.record
        else None,
    }
    return output, weights.to(query.dtype), record


def _normalized(call: Call, scores: torch.Tensor, sinks, empty_rows: bool) -> torch.Tensor:
    """Masked scores -> weights, written into the call's slot when it has one."""
    if sinks is not None:
        # gpt-oss: softmax over [scores, sink], then the sink column is dropped, as the model computes
        # it; each row then sums to less than one (the rest went to the sink).
        sink = sinks.float().reshape(1, -1, 1, 1).expand(*scores.shape[:-1], 1)
        weights = torch.softmax(torch.cat([scores, sink], dim=-1), dim=-1)[..., :-1]
    elif call.settings.normalize is not None:
        weights = call.settings.normalize(scores)
    else:
        return softmax(scores, out=call.into, empty_rows=empty_rows)
    return weights if call.into is None else call.into.copy_(weights)


def softmax(scores: torch.Tensor, out: torch.Tensor | None = None, empty_rows: bool = True) -> torch.Tensor:
    """Softmax over keys (into ``out`` when given); where rows may be fully masked, those give zeros."""
    if empty_rows:
        weights = attention.softmax(scores)
        return weights if out is None else out.copy_(weights)
    return torch.softmax(scores, dim=-1, out=out)


def fold(
    call: Call, reduction: Reduction, with_output: bool = False, log_partition: torch.Tensor | None = None
) -> tuple[torch.Tensor | None, Any]:
    """One block of queries at a time: each block's weights folded by ``reduction`` and dropped, and
    the output computed block by block when asked (rows ``reduction.rows`` only, else all)."""
    settings, causal, scale = call.settings, call.causal, call.scale
    groups = call.query.shape[1] // call.key.shape[1]
    query = call.query
    n_query, n_key = query.shape[-2], call.key.shape[-2]
    offset = n_key - n_query  # queries are the last n_query positions
    # every query by default, as the explicit route: a cross-attention may have more queries than keys
    start, stop = reduction.rows or (offset, n_key)
    start, stop = max(start, offset), min(stop, n_key)
    output = torch.empty_like(query) if with_output else None  # (B, H, Q, D), filled block by block
    key, value = repeat_kv(call.key, groups), repeat_kv(call.value, groups)
    empty_rows = masking.may_empty_rows(call)
    state = None
    for first in range(start, stop, reduction.chunk):
        last = min(first + reduction.chunk, stop)
        rows = slice(first - offset, last - offset)
        width = last if causal else n_key  # a causal query sees no later key
        scores = torch.matmul(query[:, :, rows] * scale, key[:, :, :width].transpose(2, 3)).float()
        scores = masking.mask(call, scores, first)
        if log_partition is not None:
            # softmax with each row's log-sum-exp known: one subtraction, one exp, both in place (a
            # new tensor the size of a block costs more in page faults than the arithmetic)
            weights = scores.sub_(log_partition[..., rows, None]).exp_()
        elif settings.normalize is None:
            weights = softmax(scores, empty_rows=empty_rows)
        else:
            weights = settings.normalize(scores)
        state = reduction.reduce(state, Block(first, weights))
        if with_output:
            output[:, :, rows] = torch.matmul(weights.to(value.dtype), value[:, :, :width])
        del scores, weights
    return (output.transpose(1, 2).contiguous() if with_output else None), state


def _grouped(per_head: torch.Tensor, shared: torch.Tensor) -> torch.Tensor:
    """per_head (B, H, Q, X) @ shared (B, H_kv, X, Y) -> (B, H, Q, Y), each KV head serving its group.

    Query heads h*G .. h*G + G-1 share KV head h (as repeat_kv lays them out); folding the group
    into the rows reads each key and value once instead of copying them G times per layer and step.
    """
    b, h, q, x = per_head.shape
    kv = shared.shape[1]
    if kv == h:
        return torch.matmul(per_head, shared)
    folded = torch.matmul(per_head.reshape(b, kv, (h // kv) * q, x), shared)  # (B, H_kv, G*Q, Y)
    return folded.reshape(b, h, q, shared.shape[-1])


def keep(tensor: torch.Tensor, item: str, settings: CaptureSettings) -> torch.Tensor | None:
    """A detached float32 CPU copy when ``item`` is asked for (no copy when it is one already)."""
    if item not in settings.record:
        return None
    return tensor.detach().float().cpu()
