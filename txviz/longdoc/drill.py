"""Detail on demand: the exact attention rows of chosen queries, for one layer, at full resolution."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from txviz.core.capture import Block, CaptureSettings, Reduction
from txviz.core.errors import UserError, require_kind
from txviz.core.layouts import cached_layout
from txviz.core.running import run
from txviz.core.tracing import TEXT_KINDS, encode
from txviz.longdoc.overview import input_limit, model_inputs, outputs
from txviz.models import LoadedModel

MAX_ROWS = 64  # queries per drill-down: 64 rows x 8,192 keys x 9 heads is 19 MB


class RegionError(UserError):
    """A drill-down region that is empty or outside the text."""


@dataclass(frozen=True, eq=False)
class Rows:
    """The exact weights of queries start..stop-1 of one layer, every head, every key."""

    layer: int
    start: int
    stop: int
    weights: np.ndarray  # [head, stop - start, T]
    notice: str = ""


def _keep(state, block: Block) -> list:
    return [*(state or []), block.weights[0].to("cpu", copy=True)]  # a copy: the block buffer is reused


def checked_region(start: int, stop: int, n_tokens: int) -> tuple[int, int, str]:
    """The region as asked, at most MAX_ROWS queries; a clear error when it lies outside the text."""
    if not 0 <= start < stop <= n_tokens:
        raise RegionError(
            f"Queries {start} to {stop - 1} are outside this text: choose positions from 0 to {n_tokens - 1}."
        )
    if stop - start > MAX_ROWS:
        return (
            start,
            start + MAX_ROWS,
            f"Exact rows are shown for {MAX_ROWS} queries at a time: {start} to {start + MAX_ROWS - 1}.",
        )
    return start, stop, ""


def drill_down(loaded: LoadedModel, text: str, max_tokens: int, layer: int, start: int, stop: int) -> Rows:
    """Queries start..stop-1 of ``layer``: one pass with every other layer on SDPA's fast path."""
    require_kind(loaded, TEXT_KINDS, "read a long document")
    ids = encode(loaded, text, input_limit(loaded, max_tokens)).ids
    start, stop, notice = checked_region(start, stop, len(ids))
    layout = cached_layout(loaded.model)
    name = layout.place(layout.last_stack, layer)
    reduction = Reduction(_keep, chunk=MAX_ROWS, modules=frozenset({name}), rows=(start, stop))
    result = run(
        loaded.model, CaptureSettings(reduction=reduction), outputs(loaded), **model_inputs(loaded, ids)
    )
    blocks = result.attention[name][-1].reduced
    weights = torch.cat([torch.nn.functional.pad(b, (0, len(ids) - b.shape[-1])) for b in blocks], dim=1)
    return Rows(layer, start, stop, weights.numpy(), notice)


def context(text: str, offsets, tokens: tuple[str, ...], position: int, around: int = 6) -> str:
    """The text around a token, the token in brackets: 'the cat [sat] on the'."""
    start, stop = offsets[position]
    if start == stop:  # <s>, [CLS]: no characters of its own
        return f"[{tokens[position]}]"
    low = offsets[max(0, position - around)][0]
    high = offsets[min(len(offsets) - 1, position + around)][1]
    token = text[start:stop]
    lead = token[: len(token) - len(token.lstrip())]  # ' brown' reads 'quick [brown]', not 'quick[ brown]'
    around_text = f"{text[low:start]}{lead}[{token.strip()}]{text[stop : max(high, stop)]}"
    return " ".join(around_text.split())
