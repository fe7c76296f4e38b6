"""The masking rules of one attention call, written once for every route that writes scores out.

The explicit route masks the whole map as one block of queries and the fold (txviz.core.routes)
one block at a time, through the same ``mask``; a rule changed here changes both, so the Long
Documents page and the Head Atlas never disagree with the Attention Explorer. Queries are the last
n_query of the call's n_key positions; a block is the queries at positions first..first+C-1 over
keys 0..W-1 (a causal block reads no later key, so its W may stop at its last query).
"""

from __future__ import annotations

from typing import Any

import torch

from txviz.core import edits

# The call is txviz.core.routes.Call and its settings txviz.core.capture.CaptureSettings; routes
# imports this module, so they are typed Any here.
Call = Any
CaptureSettings = Any


def mask(call: Call, scores: torch.Tensor, first: int) -> torch.Tensor:
    """``scores`` (B, H, C, W) of a block, -inf in place wherever the call lets no attention go."""
    count, width = scores.shape[-2:]
    model_mask = _model_mask(call, first, count, width)
    if model_mask is not None and model_mask.dtype != torch.bool:
        # additive masks use the dtype's minimum: show them as -inf, exactly zero weight
        scores = scores.add_(model_mask.float()).masked_fill_(
            model_mask <= torch.finfo(model_mask.dtype).min / 2, float("-inf")
        )
    start, blocked = _blocked(call, model_mask, first, count, width, scores.device)
    if blocked is not None:
        # in place on the product's own tensor: a new map per rule costs more in page faults than the fill
        (scores if start == 0 else scores[..., start:]).masked_fill_(blocked, float("-inf"))
    return scores


def may_empty_rows(call: Call) -> bool:
    """Whether ``mask`` may leave a row no key: causality and its window leave each query its own
    key; a model mask, an extra mask or a knockout may not."""
    return call.attention_mask is not None or call.settings.extra_mask is not None or bool(call.knockouts)


def allowed(settings: CaptureSettings, first: int, count: int, width: int, device) -> torch.Tensor:
    """The extra mask (bool, True where allowed) of queries first..first+count-1 over keys 0..width-1."""
    extra = settings.extra_mask
    if isinstance(extra, torch.Tensor):
        return extra[first : first + count, :width].to(device)
    q = torch.arange(first, first + count, device=device)[:, None]
    k = torch.arange(width, device=device)[None, :]
    return extra(q, k).expand(count, width)


def _rows(call: Call, first: int, count: int) -> slice:
    """The block's rows among the call's queries, which are the last n_query of n_key positions."""
    offset = call.key.shape[-2] - call.query.shape[-2]
    return slice(first - offset, first - offset + count)


def _model_mask(call: Call, first: int, count: int, width: int) -> torch.Tensor | None:
    """The block's part of the model's own mask (bool or additive); a mask of one row serves all."""
    model_mask = call.attention_mask
    if model_mask is None:
        return None
    return model_mask[..., _rows(call, first, count) if model_mask.shape[-2] > 1 else slice(None), :width]


def _blocked(
    call: Call, model_mask: torch.Tensor | None, first: int, count: int, width: int, device
) -> tuple[int, torch.Tensor | None]:
    """The first key column that may be blocked, and bool (.., count, width - start), True where no
    attention may go: a bool model mask, causality and its sliding window, the extra mask, knockouts."""
    settings, window = call.settings, call.kwargs.get("sliding_window")
    causal_only = model_mask is None and window is None and settings.extra_mask is None and not call.knockouts
    # causality alone blocks no key before the block's first query: only the diagonal square is filled
    start = first if causal_only else 0
    parts = []
    if model_mask is not None:
        if model_mask.dtype == torch.bool:
            parts.append(~model_mask)
    elif call.causal:  # without a model mask, causality and the window are the call's own
        q = torch.arange(first, first + count, device=device)[:, None]
        k = torch.arange(start, width, device=device)[None, :]
        parts.append(k > q)
        if window is not None:  # a key at most window - 1 positions back
            parts.append(q - k >= window)
    if settings.extra_mask is not None:
        parts.append(~allowed(settings, first, count, width, device))
    if call.knockouts:
        n_batch, n_heads, n_query = call.query.shape[:3]
        kept = edits.knockout_mask(
            call.knockouts, n_heads, n_query, call.key.shape[-2], device, n_batch=n_batch
        )
        parts.append(~kept[..., _rows(call, first, count), :width])
    if not parts:
        return start, None
    blocked = parts[0]
    for part in parts[1:]:
        blocked = blocked | part
    return start, blocked
