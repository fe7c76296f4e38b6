"""Reductions: attention weights folded into a small summary while they are computed, then dropped.

A reduction is what the capture function knows of every summary (a long document's pooled maps,
its rows' statistics, a drill-down's exact rows): it folds blocks of weights, and it may say that it
can compute a whole call in one fused kernel instead (``can_fuse`` / ``fuse``). txviz.core.routes
picks how each call is computed from that alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import torch


@dataclass(frozen=True)
class Block:
    """One block of queries of one attention call, as a Reduction sees it."""

    first: int  # position of the block's first query
    weights: torch.Tensor  # (B, H, C, K'): queries first..first+C-1; a causal block has K' = first + C keys


@dataclass(frozen=True)
class Fused:
    """What a reduction's fused kernel gives for one call."""

    result: Any  # the finished summary, as ``finish`` would give it
    output: torch.Tensor | None  # (B, Q, H, D), when the values were given
    log_partition: torch.Tensor  # (B, H, Q): each row's log-sum-exp of scores, for other reductions


@dataclass(frozen=True)
class Reduction:
    """Attention weights folded block by block into a summary, the blocks then dropped.

    Queries are taken ``chunk`` at a time: each block's scores, weights and output are computed,
    ``reduce(state, block)`` folds the Block into the state (None before the first block), and the
    block is dropped. A causal block sees keys 0..first+C-1 only: later keys get no attention. The
    last state, through ``finish``, is the call's ``AttentionRecord`` field ``record_as``. Peak memory
    is one block, never a whole map; the output equals the plain forward's.
    """

    reduce: Callable[[Any, Block], Any]
    chunk: int = 256  # queries per block: a block holds B x H x chunk x K weights
    modules: frozenset[str] | None = None  # places to reduce ("decoder.3.attn"; None: all); others run SDPA
    rows: tuple[int, int] | None = None  # only query positions [start, stop): SDPA gives the output
    record_as: ClassVar[str] = "reduced"  # the AttentionRecord field that holds the result

    def applies(self, name: str | None) -> bool:
        return self.modules is None or name in self.modules

    def can_fuse(self, query, key, attention_mask, causal: bool) -> bool:
        """True when ``fuse`` computes this plain softmax call in one kernel (never, unless overridden)."""
        return False

    def fuse(self, query, key, value, scale: float) -> Fused:
        """The summary (and, given the values, the output) of a call ``can_fuse`` accepted."""
        raise NotImplementedError

    def finish(self, state: Any) -> Any:
        """The record's value from the last state."""
        return state
