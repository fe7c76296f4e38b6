"""The one attention function every model runs through, and the per-call settings it reads.

Models are loaded with ``attn_implementation="txviz"``. One ``ContextVar`` carries the per-call
settings (what to record, how to normalise, what to change) and the call's records, so concurrent
Streamlit sessions sharing one cached model never see each other's settings or records, and the
shared model itself is never mutated per request. The stage hooks (txviz.core.stages) read the
same ``ContextVar``: there is one recording system.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any, Literal, get_args

import numpy as np
import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import repeat_kv, sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from txviz.core import edits, rowstats, stages
from txviz.core.attention import Normalizer, causal_mask, softmax
from txviz.core.edits import Intervention, Plan
from txviz.core.errors import UserError
from txviz.core.layouts import Layout, cached_layout, module_names
from txviz.core.stages import StageRecord

IMPLEMENTATION = "txviz"
# What the attention function can record of each call; "heads" is each head's output before the
# output projection, (B, H, Q, D_head) (``run["head_out", layer]``).
RecordItem = Literal["weights", "scores", "queries", "keys", "values", "heads"]
RECORDABLE = frozenset(get_args(RecordItem))
# What the stage hooks can record inside a block (txviz.core.stages): what attention, cross-attention
# and the FFN add, the stream after each block, the stream entering block 0, the final norm.
Stage = Literal["attn", "cross", "ffn", "resid", "embed", "final_norm"]
STAGES = frozenset(get_args(Stage))
_SLOW = RECORDABLE - {"heads"}  # items only the explicit computation has

# Keyword arguments transformers passes to attention functions that carry context, not maths.
CONTEXT_KWARGS = frozenset({
    "use_cache", "position_ids", "cache_position", "past_key_values", "past_key_value", "layer_idx",
    "output_attentions", "output_hidden_states", "output_router_logits", "return_dict",
    "encoder_hidden_states", "position_embeddings", "token_type_ids",
})  # fmt: skip
# Switches of a fused kernel that change no number of a forward in evaluation (ModernBERT asks flash
# attention for a deterministic backward): accepted and ignored.
SWITCH_KWARGS = frozenset({"deterministic"})
# Those that change the maths, each applied by the explicit computation below.
MATHS_KWARGS = frozenset({"sliding_window", "softcap", "s_aux", "sinks", "position_bias"})

# (query positions (Q, 1), key positions (1, K)) -> bool (Q, K), True where attention is allowed;
# the same shape of function as FlexAttention's mask_mod without batch and head.
MaskFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class UnsupportedAttention(UserError):
    """The model's attention takes an argument txviz does not know how to apply."""


def check_kwargs(module: torch.nn.Module, kwargs: dict) -> None:
    """Refuse an attention argument that would change the maths and that txviz does not apply."""
    unknown = sorted(
        k
        for k, v in kwargs.items()
        if v is not None and k not in CONTEXT_KWARGS | SWITCH_KWARGS | MATHS_KWARGS
    )
    if unknown:
        raise UnsupportedAttention(
            f"{type(module).__name__} passes {', '.join(unknown)} to its attention, which txviz does not "
            "know how to apply, so it would show different numbers from the model's own. Load the model "
            "with a transformers version txviz knows, or use another model."
        )


@dataclass(frozen=True)
class Block:
    """One block of queries of one attention call, as a Reduction sees it."""

    first: int  # position of the block's first query
    weights: torch.Tensor  # (B, H, C, K'): queries first..first+C-1; a causal block has K' = first + C keys


@dataclass(frozen=True)
class Reduction:
    """Attention weights folded into a small summary while they are computed, then dropped.

    Queries are taken ``chunk`` at a time: each block's scores, weights and output are computed,
    ``reduce(state, block)`` folds the Block into the state (None before the first block), and the
    block is dropped. A causal block sees keys 0..first+C-1 only: later keys get no attention. The
    last state is the call's ``AttentionRecord.reduced``. Peak memory is one block, never a whole
    map; the output equals the plain forward's.
    """

    reduce: Callable[[Any, Block], Any]
    chunk: int = 256  # queries per block: a block holds B x H x chunk x K weights
    modules: frozenset[str] | None = None  # attention modules to reduce (None: all); others run SDPA
    rows: tuple[int, int] | None = None  # only query positions [start, stop): SDPA gives the output

    def applies(self, name: str | None) -> bool:
        return self.modules is None or name in self.modules


@dataclass(frozen=True)
class CaptureSettings:
    """What one call should compute, record and change: the one per-call carrier."""

    record: frozenset[RecordItem] = frozenset()  # attention items, any of RECORDABLE
    normalize: Normalizer | None = None  # masked scores -> weights; None is softmax
    extra_mask: MaskFn | torch.Tensor | None = None  # applied on top of the model's own mask, every layer
    newest_query_only: bool = False  # keep only the last query row (generation)
    stages: frozenset[Stage] = frozenset()  # block stages to record, any of STAGES
    interventions: Sequence[Intervention] = ()  # txviz.core.edits, applied in order
    reduction: Reduction | None = None  # fold attention block by block instead of keeping it
    row_stats: rowstats.RowStatistics | None = None  # each row's entropy, distance, sink and local weight

    def __post_init__(self) -> None:
        for given, known, verb in (
            (self.record, RECORDABLE, "record"),
            (self.stages, STAGES, "record the stage"),
        ):
            unknown = set(given) - known
            if unknown:
                raise ValueError(f"Cannot {verb} {sorted(unknown)}; choose from {sorted(known)}.")
        object.__setattr__(self, "record", frozenset(self.record))
        object.__setattr__(self, "stages", frozenset(self.stages))
        object.__setattr__(self, "interventions", tuple(self.interventions))

    @property
    def fast_path(self) -> bool:
        """No weights to record and plain softmax: hand over to SDPA (heads are edited after it)."""
        return not (self.record & _SLOW) and self.normalize is None and self.extra_mask is None


PLAIN = CaptureSettings()  # nothing recorded or changed, softmax: the fast path


@dataclass(frozen=True)
class AttentionRecord:
    """What one call of one attention module produced (batch first, float32, on CPU)."""

    weights: torch.Tensor | None = None  # (B, H, Q, K)
    scores: torch.Tensor | None = None  # (B, H, Q, K), -inf where masked
    queries: torch.Tensor | None = None  # (B, H, Q, D)
    keys: torch.Tensor | None = None  # (B, H, K, D), KV heads expanded to query heads
    values: torch.Tensor | None = None  # (B, H, K, D), KV heads expanded to query heads
    heads: torch.Tensor | None = None  # (B, H, Q, D): each head's output before the output projection
    is_causal: bool = False
    reduced: Any = None  # the Reduction's last state, when the call was reduced
    row_stats: rowstats.RowStats | None = None  # when CaptureSettings.row_stats asked for them


@dataclass
class Recorder:
    """One call's settings, where its interventions act, and what it recorded, in call order."""

    settings: CaptureSettings
    module_names: dict[int, str]
    records: dict[str, list[AttentionRecord]] = field(default_factory=dict)  # attention module name ->
    stages: dict[str, list[StageRecord]] = field(default_factory=dict)  # point name, e.g. "decoder.3.ffn" ->
    plan: Plan = edits.EMPTY
    # One forward pass: a module called again is another layer (ALBERT shares one across layers), so
    # its later calls are recorded as "name#2", "name#3"...; in generate, calls are steps instead.
    one_pass: bool = False

    def add(self, module: torch.nn.Module, record: AttentionRecord) -> None:
        name = self.module_names.get(id(module), type(module).__name__)
        if self.one_pass and name in self.records:
            name = f"{name}#{sum(n.split('#')[0] == name for n in self.records) + 1}"
        self.records.setdefault(name, []).append(record)

    def stack(self, item: str = "weights", call: int = -1, names: list[str] | None = None):
        """One numpy array [layer, head, ...] of batch item 0 from the given call of each module."""
        names = list(self.records) if names is None else names
        return np.stack([getattr(self.records[n][call], item)[0].numpy() for n in names])

    def stage(self, name: str, call: int = -1) -> StageRecord | None:
        """What point ``name`` ('decoder.3.ffn', 'final_norm') saw in the given call, if recorded."""
        calls = self.stages.get(name)
        return calls[call] if calls else None


_active: ContextVar[Recorder | None] = ContextVar("txviz_capture", default=None)


def prepared(model: torch.nn.Module) -> Layout:
    """The model's layout, with the stage hooks installed once (idempotent, idle until asked)."""
    layout = cached_layout(model)
    stages.install(model, layout.points(model), _active)
    return layout


@contextmanager
def capture(model: torch.nn.Module, settings: CaptureSettings, one_pass: bool = False) -> Iterator[Recorder]:
    """Within this block, ``model`` follows ``settings``: its attention and stages record and change.

    Stages and interventions outside attention need the model's block layout
    (txviz.core.layouts); their hooks are installed once per model and idle unless asked.
    """
    plan = edits.EMPTY
    if settings.interventions:
        plan = edits.plan(cached_layout(model), settings.interventions)
    if settings.stages or plan.streams:
        prepared(model)
    recorder = Recorder(settings=settings, module_names=module_names(model), plan=plan, one_pass=one_pass)
    token = _active.set(recorder)
    try:
        yield recorder
    finally:
        _active.reset(token)


def _allowed(settings: CaptureSettings, n_query: int, n_key: int, device) -> torch.Tensor:
    """The extra mask for queries that are the last n_query of n_key positions."""
    mask = settings.extra_mask
    if isinstance(mask, torch.Tensor):
        return mask[n_key - n_query : n_key, :n_key].to(device)
    q = torch.arange(n_key - n_query, n_key, device=device)[:, None]
    k = torch.arange(n_key, device=device)[None, :]
    return mask(q, k).expand(n_query, n_key)


def txviz_attention(
    module: torch.nn.Module,
    query: torch.Tensor,  # (B, H, Q, D)
    key: torch.Tensor,  # (B, H_kv, K, D)
    value: torch.Tensor,  # (B, H_kv, K, D)
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **kwargs,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Attention as the model defines it, with the active settings applied and recorded."""
    recorder = _active.get()
    settings = recorder.settings if recorder else PLAIN
    # identity, not truth: this runs for every layer of every generation step
    changed = recorder is not None and recorder.plan is not edits.EMPTY
    name = recorder.module_names.get(id(module)) if changed else None
    knockouts = recorder.plan.knockouts.get(name) if name else None
    head_edits = recorder.plan.heads.get(name) if name else None
    check_kwargs(module, kwargs)
    # SDPA applies none of these (sliding windows come in the mask when there is one)
    maths = any(kwargs.get(k) is not None for k in ("softcap", "s_aux", "sinks", "position_bias"))
    window = kwargs.get("sliding_window") is not None and attention_mask is None
    reduction = settings.reduction
    reduced = (
        reduction is not None
        and recorder is not None
        and reduction.applies(recorder.module_names.get(id(module)))
    )
    folded = reduced or (settings.row_stats is not None and recorder is not None)
    if folded and (maths or window):  # the block-by-block fold writes out plain masked softmax only
        raise UnsupportedAttention(
            f"{type(module).__name__} uses soft-capping, attention sinks, a position bias or a sliding "
            "window without a mask, which the long-document view does not apply yet: open this model "
            "in the Attention Explorer instead."
        )
    plain = settings.fast_path and not (knockouts or maths or window or kwargs.get("output_attentions"))
    causal = bool(is_causal if is_causal is not None else getattr(module, "is_causal", False))
    merged = (
        plain
        and settings.row_stats is not None
        and recorder is not None
        and rowstats.fusable(query, key, attention_mask, causal)
        and not module.training
    )
    if merged:
        # one kernel call gives the output and the row statistics (txviz.core.rowstats)
        stats, output, lse = rowstats.fused(settings.row_stats, query, key, _scale(query, scaling), value)
        output, weights = output.to(query.dtype).transpose(1, 2).contiguous(), None
        record = {"row_stats": _cpu(stats)}
        if reduced:
            # this layer's blocks are folded too; the output and each row's softmax sum are the kernel's
            args = (module, query, key, value, attention_mask, 0.0, scaling, causal, settings, knockouts)
            record["reduced"] = _reduced(*args, with_output=False, log_partition=lse, **kwargs)[2]["reduced"]
    elif plain and not reduced:
        output, weights = sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout, scaling, is_causal, **kwargs
        )
        record = {}
    else:
        compute = _reduced if reduced else _explicit
        output, weights, record, causal = compute(
            module,
            query,
            key,
            value,
            attention_mask,
            dropout,
            scaling,
            is_causal,
            settings,
            knockouts,
            **kwargs,
        )
    if head_edits:
        output = edits.edit_heads(output, head_edits)  # (B, Q, H, D), before the output projection
    if folded and settings.row_stats is not None and "row_stats" not in record:
        record["row_stats"] = _row_stats(
            module, query, key, value, attention_mask, scaling, causal, settings, knockouts, **kwargs
        )
    if recorder is not None and (settings.record or "reduced" in record or "row_stats" in record):
        rows = slice(-1, None) if settings.newest_query_only else slice(None)
        if "heads" in settings.record:
            record["heads"] = _keep(output.transpose(1, 2)[..., rows, :], "heads", settings)
        recorder.add(module, AttentionRecord(**record, is_causal=causal))
    return output, weights


def _explicit(
    module, query, key, value, attention_mask, dropout, scaling, is_causal, settings, knockouts, **kwargs
):
    """Attention computed step by step: scores, masks, the normaliser, weights, output, records."""
    scale = _scale(query, scaling)
    scores = _grouped(query, key.transpose(2, 3)).float() * scale  # (B, H, Q, K)
    if kwargs.get("softcap") is not None:
        scores = kwargs["softcap"] * torch.tanh(scores / kwargs["softcap"])
    if kwargs.get("position_bias") is not None:
        scores = scores + kwargs["position_bias"]

    n_query, n_key = scores.shape[-2:]
    causal = bool(is_causal if is_causal is not None else getattr(module, "is_causal", False))
    sinks = kwargs.get("s_aux", kwargs.get("sinks"))
    if sinks is not None and settings.normalize is not None:
        raise UnsupportedAttention(
            "This model's attention has sinks (a learned extra score per head that takes part of the "
            "softmax), so another normaliser would not be the model's attention with a change. Use "
            "softmax, or a model without attention sinks."
        )
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attention_mask, float("-inf"))
        else:
            scores = scores + attention_mask.float()
            # additive masks use the dtype's minimum: show them as -inf, exactly zero weight
            scores = scores.masked_fill(
                attention_mask <= torch.finfo(attention_mask.dtype).min / 2, float("-inf")
            )
    elif causal and n_query > 1:
        allowed = causal_mask(n_query, n_key, scores.device)
        if kwargs.get("sliding_window") is not None:  # a key at most window - 1 positions back
            q = torch.arange(n_key - n_query, n_key, device=scores.device)[:, None]
            allowed = allowed & (
                q - torch.arange(n_key, device=scores.device)[None, :] < kwargs["sliding_window"]
            )
        scores = scores.masked_fill(~allowed, float("-inf"))
    if settings.extra_mask is not None:
        scores = scores.masked_fill(~_allowed(settings, n_query, n_key, scores.device), float("-inf"))
    if knockouts:
        cut = ~edits.knockout_mask(
            knockouts, scores.shape[1], n_query, n_key, scores.device, n_batch=scores.shape[0]
        )
        scores = scores.masked_fill(cut, float("-inf"))

    if sinks is not None:
        # gpt-oss: softmax over [scores, sink], then the sink column is dropped, as the model computes
        # it; each row then sums to less than one (the rest went to the sink).
        sink = sinks.float().reshape(1, -1, 1, 1).expand(*scores.shape[:-1], 1)
        weights = torch.softmax(torch.cat([scores, sink], dim=-1), dim=-1)[..., :-1]
    else:
        weights = (settings.normalize or softmax)(scores)  # (B, H, Q, K)
    if module.training and dropout > 0:
        weights = torch.nn.functional.dropout(weights, p=dropout)
    output = _grouped(weights.to(value.dtype), value).transpose(1, 2).contiguous()
    rows = slice(-1, None) if settings.newest_query_only else slice(None)
    groups = query.shape[1] // key.shape[1]
    record = {
        "weights": _keep(weights[..., rows, :], "weights", settings),
        "scores": _keep(scores[..., rows, :], "scores", settings),
        "queries": _keep(query[..., rows, :], "queries", settings),
        "keys": _keep(repeat_kv(key, groups), "keys", settings) if "keys" in settings.record else None,
        "values": _keep(repeat_kv(value, groups), "values", settings)
        if "values" in settings.record
        else None,
    }
    return output, weights.to(query.dtype), record, causal


def _row_stats(module, query, key, value, attention_mask, scaling, causal, settings, knockouts, **kwargs):
    """The call's row statistics: fused where the kernel computes this attention, else from blocks."""
    spec = settings.row_stats
    plain = settings.normalize is None and settings.extra_mask is None and not knockouts
    if plain and rowstats.fusable(query, key, attention_mask, causal):
        return _cpu(rowstats.fused(spec, query.detach(), key.detach(), _scale(query, scaling))[0])
    fold = rowstats.Fold(spec)
    blocks = Reduction(fold, chunk=spec.chunk, rows=(0, key.shape[-2]))
    _, _, record, _ = _reduced(
        module, query, key, value, attention_mask, 0.0, scaling, causal,
        replace(settings, reduction=blocks), knockouts, **kwargs,
    )  # fmt: skip
    return _cpu(fold.finish(record["reduced"]))


def _scale(query: torch.Tensor, scaling: float | None) -> float:
    return query.shape[-1] ** -0.5 if scaling is None else scaling


def _cpu(stats: rowstats.RowStats) -> rowstats.RowStats:
    return rowstats.RowStats(*(x.detach().float().cpu() for x in vars(stats).values()))


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


def _reduced(
    module, query, key, value, attention_mask, dropout, scaling, is_causal, settings, knockouts,
    with_output: bool = True, log_partition: torch.Tensor | None = None, **kwargs,
):  # fmt: skip
    """Attention one block of queries at a time, each block's weights folded by the Reduction
    (and the output computed, unless the caller has it already)."""
    reduction = settings.reduction
    causal = bool(is_causal if is_causal is not None else getattr(module, "is_causal", False))
    groups = getattr(module, "num_key_value_groups", 1)
    scale = _scale(query, scaling)
    n_query, n_key = query.shape[-2], key.shape[-2]
    offset = n_key - n_query  # queries are the last n_query positions
    start, stop = reduction.rows or (0, n_key)
    start, stop = max(start, offset), min(stop, n_key)
    blockwise = with_output and reduction.rows is None
    if blockwise:
        output = torch.empty_like(query)  # (B, H, Q, D), filled block by block
    elif with_output:  # only some rows' weights are asked for: the output comes from SDPA, whole
        output = sdpa_attention_forward(module, query, key, value, attention_mask, 0.0, scaling, is_causal)[0]
    else:
        output = None
    key, value = repeat_kv(key, groups), repeat_kv(value, groups)
    state = None
    for first in range(start, stop, reduction.chunk):
        last = min(first + reduction.chunk, stop)
        rows = slice(first - offset, last - offset)
        width = last if causal else n_key  # a causal query sees no later key
        scores = torch.matmul(query[:, :, rows] * scale, key[:, :, :width].transpose(2, 3)).float()
        if attention_mask is not None:
            mask = attention_mask[..., rows if attention_mask.shape[-2] > 1 else slice(None), :width]
            if mask.dtype == torch.bool:
                scores = scores.masked_fill_(~mask, float("-inf"))
            else:
                scores = scores.add_(mask.float()).masked_fill_(
                    mask <= torch.finfo(mask.dtype).min / 2, float("-inf")
                )
        elif causal:  # only the diagonal square has later keys
            diagonal = scores[..., first:width]
            diagonal.masked_fill_(~causal_mask(last - first, width - first, scores.device), float("-inf"))
        if settings.extra_mask is not None:
            allowed = _allowed(settings, n_key - first, n_key, scores.device)[: last - first, :width]
            scores = scores.masked_fill_(~allowed, float("-inf"))
        if knockouts:
            kept = edits.knockout_mask(
                knockouts, scores.shape[1], n_query, n_key, scores.device, n_batch=scores.shape[0]
            )
            scores = scores.masked_fill_(~kept[..., rows, :width], float("-inf"))
        if log_partition is not None:
            # softmax with each row's log-sum-exp known: one subtraction, one exp, both in place (a
            # new tensor the size of a block costs more in page faults than the arithmetic)
            weights = scores.sub_(log_partition[..., rows, None]).exp_()
        elif settings.normalize is None and causal and attention_mask is None:
            weights = torch.softmax(scores, dim=-1)  # every causal row sees its own key: no empty row
        else:
            weights = (settings.normalize or softmax)(scores)
        state = reduction.reduce(state, Block(first, weights))
        if blockwise:
            output[:, :, rows] = torch.matmul(weights.to(value.dtype), value[:, :, :width])
        del scores, weights
    if blockwise:
        output = output.transpose(1, 2).contiguous()
    return output, None, {"reduced": state}, causal


def _keep(tensor: torch.Tensor, item: str, settings: CaptureSettings) -> torch.Tensor | None:
    """A detached float32 CPU copy when ``item`` is asked for."""
    if item not in settings.record:
        return None
    return tensor.detach().float().cpu()


def register() -> None:
    """Register the attention function and its mask builder with transformers (idempotent)."""
    AttentionInterface.register(IMPLEMENTATION, txviz_attention)
    # Without a mask function of its own name, transformers would build no mask at all.
    AttentionMaskInterface.register(IMPLEMENTATION, sdpa_mask)


def use_capture(model: torch.nn.Module) -> torch.nn.Module:
    """Switch a model built elsewhere (e.g. from a config in a test) to the capture function."""
    register()
    model.set_attn_implementation(IMPLEMENTATION)
    return model


register()
