"""Per-query statistics of attention rows - entropy, distance, sink and local weight - without the rows.

A long document's every layer cannot keep its maps (SmolLM2 at 4,096 tokens: 9 GB in float16), and
folding each block of explicit weights costs several times the attention itself on a CPU. Four row
statistics come almost free from the fused attention kernel instead, which never writes a row out:

- log-partition lse_q = log sum_k exp(s_qk) is the kernel's own by-product;
- with [key, value, position] as both keys and values (the queries padded with zeros, so only
  q . key enters a score), its output is E_q[key], the attention output and E_q[position]; then
  entropy = lse_q - scale q . E_q[key]
  (H = -sum p log p = lse - sum p s) and, causally, distance = q - E_q[position];
- the weight on the first ``sink`` keys and within ``window`` positions comes from those few
  scores alone, exp(s_qk - lse_q), a band of window + 1 keys per query.

``Statistics`` is these statistics as a capture reduction (txviz.core.reduction) that can fuse:
it takes plain causal softmax attention over the whole sequence (no mask tensor, no normaliser or
edits) on a CPU in one kernel call; any other call is folded block by block from explicit weights
by ``Fold``, with the same definitions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import torch
from transformers.integrations.sdpa_attention import repeat_kv

from txviz.core.reduction import Fused, Reduction

NAMES = ("entropy", "distance", "sink", "local")
_KERNEL = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu


@dataclass(frozen=True)
class RowStatistics:
    """Ask each attention call for its rows' statistics (CaptureSettings.row_stats)."""

    sink: int = 4  # keys at the start whose weight is the "sink" weight (Xiao et al. 2023)
    window: int = 32  # "local": keys within this many positions of the query
    chunk: int = 256  # queries per block where the rows must be written out


@dataclass(frozen=True)
class RowStats:
    """One call's statistics, each (B, H, Q) float32 on the CPU."""

    entropy: torch.Tensor  # nats, -sum_k w log w
    distance: torch.Tensor  # sum_k w |q - k|
    sink: torch.Tensor  # sum of w over the first `sink` keys
    local: torch.Tensor  # sum of w over keys with |q - k| <= window


def fusable(query: torch.Tensor, key: torch.Tensor, attention_mask, causal: bool) -> bool:
    """True when the fused kernel computes exactly this call's attention."""
    same_length = query.shape[-2] == key.shape[-2]  # the kernel's causal mask is top-left aligned
    return causal and attention_mask is None and same_length and query.device.type == "cpu"


def fused(
    spec: RowStatistics,
    query: torch.Tensor,
    key: torch.Tensor,
    scale: float,
    value: torch.Tensor | None = None,
) -> tuple[RowStats, torch.Tensor | None, torch.Tensor]:
    """The statistics of causal softmax(q k^T scale) from the fused CPU kernel and two narrow bands;
    given the values, the attention output (B, H, T, D_v) from the same kernel call; and each row's
    log-partition (B, H, T)."""
    query = query.float()
    _, h, n, d = query.shape
    # One tensor serves as keys and values: [key, value, position]. The queries are zero past their
    # own dimensions, so only q . key enters a score, and the output holds E_q[key], the attention
    # output and E_q[position]. (The zeros add nothing: the output is SDPA's up to float rounding, bit for
    # bit where the kernel tiles the wider head as it tiles SDPA's; on some CPUs the last bit differs.)
    width = d + (value.shape[-1] if value is not None else 0)
    keyed = key.new_empty((*key.shape[:-1], width + 1), dtype=torch.float32)  # filled in place: one pass
    keyed[..., :d] = key
    if value is not None:
        keyed[..., d:width] = value
    keyed[..., width] = torch.arange(n, dtype=torch.float32)
    padded = query.new_empty((*query.shape[:-1], width + 1))
    padded[..., :d] = query
    padded[..., d:] = 0
    out, lse = _flash(padded, keyed, scale)
    expected_score = torch.linalg.vecdot(query, out[..., :d])  # q . E[key]
    entropy = lse - scale * expected_score
    distance = torch.arange(n, dtype=torch.float32) - out[..., width]
    key = key.float()
    sink = _first_keys(query, key, lse, scale, spec.sink)
    local = _near_keys(query, key, lse, scale, spec.window)
    output = out[..., d:width] if value is not None else None
    return RowStats(entropy, distance, sink, local), output, lse


def _flash(query: torch.Tensor, keyed: torch.Tensor, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The CPU flash kernel's causal output and log-partition, ``keyed`` as keys and values.

    The kernel serves each group of query heads from its shared KV head itself (torch 2.13), which
    spares a copy of the keys per query head; an older kernel that refuses gets the copies.
    """
    groups = query.shape[1] // keyed.shape[1]
    if groups > 1:
        try:
            return _KERNEL(query, keyed, keyed, 0.0, True, scale=scale)[:2]
        except RuntimeError:
            keyed = repeat_kv(keyed, groups)
    return _KERNEL(query, keyed, keyed, 0.0, True, scale=scale)[:2]


def _first_keys(query, key, lse, scale: float, count: int) -> torch.Tensor:
    """Each query's summed weight on keys 0..count-1 (those it sees); ``key`` may hold one head per group."""
    first = repeat_kv(key[..., :count, :], query.shape[1] // key.shape[1])
    scores = torch.matmul(query, first.transpose(-1, -2)) * scale  # (B, H, T, count)
    seen = torch.arange(query.shape[-2])[:, None] >= torch.arange(scores.shape[-1])[None, :]
    return (torch.exp(scores - lse[..., None]) * seen).sum(-1)


def _near_keys(query, key, lse, scale: float, window: int, block: int = 32) -> torch.Tensor:
    """Each query's summed weight on keys q - window..q, from one small product per block of queries.

    Block i's queries see keys i*block - window .. (i+1)*block - 1: a (block, block + window) score
    tile of which a band of window + 1 diagonals counts (more products than the band, but one
    matrix product instead of a pass over the queries per diagonal). Each query head's blocks are
    one batched product taken from views (a head's rows are evenly strided even in the projection's
    (B, T, H, D) layout) against a sliding view of its KV head's keys, not regrouped into new tensors.
    """
    b, h, n, _ = query.shape
    group, blocks = h // key.shape[1], -(-n // block)
    extra = blocks * block - n
    if extra:  # a ragged last block: zero queries, dropped at the end
        query = torch.nn.functional.pad(query, (0, 0, 0, extra))
        lse = torch.nn.functional.pad(lse, (0, extra))
    # (B, H_kv, nb, D, block + window): block i's keys, window zero keys in front of the first
    keys = torch.nn.functional.pad(key, (0, 0, window, extra)).unfold(-2, block + window, block)
    row = torch.arange(block)[:, None]
    column = torch.arange(block + window)[None, :]
    apart = row + window - column  # query - key
    start = torch.arange(blocks)[:, None, None] * block
    inside = (apart >= 0) & (apart <= window) & (start + column - window >= 0)  # (nb, block, block + window)
    summed = query.new_empty(b, h, blocks, block)
    for head in range(h):
        tiles = torch.matmul(query[:, head].unflatten(1, (blocks, block)), keys[:, head // group])
        weights = tiles.mul_(scale).sub_(lse[:, head].view(b, blocks, block, 1)).exp_().mul_(inside)
        summed[:, head] = weights.sum(-1)
    return summed.view(b, h, -1)[..., :n]


@dataclass(frozen=True)
class Fold:
    """The same statistics from explicit blocks of weights (a capture Reduction's reduce function)."""

    spec: RowStatistics

    def __call__(self, state, block) -> list[torch.Tensor]:
        w, first = block.weights.float(), block.first  # (B, H, C, K')
        rows, width = w.shape[-2:]
        query = torch.arange(first, first + rows, device=w.device)[:, None]
        apart = (query - torch.arange(width, device=w.device)[None, :]).abs()  # (C, K')
        logs = torch.where(w > 0, w.log(), torch.zeros((), dtype=w.dtype))
        found = torch.stack(
            [
                -(w * logs).sum(-1),
                (w * apart).sum(-1),
                w[..., : self.spec.sink].sum(-1),
                (w * (apart <= self.spec.window)).sum(-1),
            ]
        )  # (4, B, H, C)
        return [*(state or []), found]

    @staticmethod
    def finish(state: list[torch.Tensor]) -> RowStats:
        return RowStats(*torch.cat(state, dim=-1).unbind(0))


@dataclass(frozen=True)
class Statistics(Reduction):
    """Row statistics as a reduction: from the fused kernel where it computes the call, else from blocks."""

    reduce: Fold = None  # set from spec
    spec: RowStatistics = field(default_factory=RowStatistics)
    record_as: ClassVar[str] = "row_stats"

    def __post_init__(self) -> None:
        object.__setattr__(self, "reduce", Fold(self.spec))
        object.__setattr__(self, "chunk", self.spec.chunk)

    def can_fuse(self, query, key, attention_mask, causal: bool) -> bool:
        return fusable(query, key, attention_mask, causal)

    def fuse(self, query, key, value, scale: float) -> Fused:
        stats, output, lse = fused(self.spec, query, key, scale, value)
        return Fused(on_cpu(stats), output, lse)

    def finish(self, state: list[torch.Tensor]) -> RowStats:
        return on_cpu(Fold.finish(state))


def on_cpu(stats: RowStats) -> RowStats:
    """The statistics detached, float32, on the CPU."""
    return RowStats(*(x.detach().float().cpu() for x in vars(stats).values()))
