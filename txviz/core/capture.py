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
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, get_args

import numpy as np
import torch
from transformers import AttentionInterface
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from txviz.core import edits, routes, rowstats, stages
from txviz.core.attention import Normalizer
from txviz.core.edits import Intervention, Plan
from txviz.core.layouts import Layout, cached_layout, module_names, place_names
from txviz.core.reduction import Block, Reduction  # noqa: F401  (Block: callers import it from here)
from txviz.core.routes import UnsupportedAttention
from txviz.core.stages import StageRecord

IMPLEMENTATION = "txviz"
# What the attention function can record of each call; "head_out" is each head's output before the
# output projection, (B, H, Q, D_head) (``run["head_out", layer]``), the place edits call "head_out" too.
RecordItem = Literal["weights", "scores", "queries", "keys", "values", "head_out"]
RECORDABLE = frozenset(get_args(RecordItem))
# What the stage hooks can record inside a block (txviz.core.stages): what attention, cross-attention
# and the FFN add, the stream after each block, the stream entering block 0, the final norm.
Stage = Literal["attn", "cross", "ffn", "resid", "embed", "final_norm"]
STAGES = frozenset(get_args(Stage))

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
    # (calls, B, H, Q, K) float32: the i-th call's weights are written into weights_into[i] (no copy
    # afterwards), where its shape and device fit; other calls keep their own tensors
    weights_into: torch.Tensor | None = None

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

    @cached_property
    def _reductions(self) -> tuple[Reduction, ...]:
        """Every reduction asked for; row statistics are one that can fuse."""
        stats = () if self.row_stats is None else (rowstats.Statistics(spec=self.row_stats),)
        return (() if self.reduction is None else (self.reduction,)) + stats

    def reductions(self, name: str | None) -> tuple[Reduction, ...]:
        """The reductions that apply to attention module ``name``."""
        return tuple(r for r in self._reductions if r.applies(name))


PLAIN = CaptureSettings()  # nothing recorded or changed, softmax: SDPA


@dataclass(frozen=True)
class AttentionRecord:
    """What one call of one attention module produced (batch first, float32, on CPU)."""

    weights: torch.Tensor | None = None  # (B, H, Q, K)
    scores: torch.Tensor | None = None  # (B, H, Q, K), -inf where masked
    queries: torch.Tensor | None = None  # (B, H, Q, D)
    keys: torch.Tensor | None = None  # (B, H, K, D), KV heads expanded to query heads
    values: torch.Tensor | None = None  # (B, H, K, D), KV heads expanded to query heads
    head_out: torch.Tensor | None = None  # (B, H, Q, D): each head's output before the output projection
    is_causal: bool = False
    reduced: Any = None  # the Reduction's last state, when the call was reduced
    row_stats: rowstats.RowStats | None = None  # when CaptureSettings.row_stats asked for them


@dataclass
class Recorder:
    """One call's settings, where its interventions act, and what it recorded, in call order."""

    settings: CaptureSettings
    module_names: dict[int, str]
    places: dict[int, str] = field(default_factory=dict)  # id -> place: txviz.core.layouts.place_names
    records: dict[str, list[AttentionRecord]] = field(default_factory=dict)  # place ('decoder.3.attn') ->
    stages: dict[str, list[StageRecord]] = field(default_factory=dict)  # point name, e.g. "decoder.3.ffn" ->
    plan: Plan = edits.EMPTY
    # One forward pass: a module called again is another layer (ALBERT shares one across layers), so
    # its later calls are recorded as "name#2", "name#3"...; in generate, calls are steps instead.
    one_pass: bool = False
    filled: int = 0  # slots of settings.weights_into given out so far

    def slot(self, query: torch.Tensor, key: torch.Tensor) -> torch.Tensor | None:
        """The next slot of ``settings.weights_into`` for this call's (B, H, Q, K) weights, if it fits."""
        into, settings = self.settings.weights_into, self.settings
        if into is None or self.filled >= len(into) or settings.newest_query_only or query.requires_grad:
            return None
        if into.shape[1:] != (*query.shape[:-1], key.shape[-2]) or into.device != query.device:
            return None
        self.filled += 1
        return into[self.filled - 1]

    def place(self, module: torch.nn.Module) -> str:
        """The key of ``module``'s records: its canonical place, or its path where the map places none."""
        return self.places.get(id(module)) or self.module_names.get(id(module), type(module).__name__)

    def add(self, module: torch.nn.Module, record: AttentionRecord) -> None:
        name = self.place(module)
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
def capture(
    model: torch.nn.Module, settings: CaptureSettings, one_pass: bool = False, places: bool = True
) -> Iterator[Recorder]:
    """Within this block, ``model`` follows ``settings``: its attention and stages record and change.

    Stages and interventions outside attention need the model's block layout
    (txviz.core.layouts); their hooks are installed once per model and idle unless asked. Records
    are keyed by canonical place ('decoder.3.attn'); ``places=False`` keys them by module path, for
    the discovery probe that finds those places.
    """
    plan = edits.EMPTY
    if settings.interventions:
        plan = edits.plan(cached_layout(model), settings.interventions)
    if settings.stages or plan.streams:
        prepared(model)
    keyed = places and (settings.record or settings.reduction is not None or settings.row_stats is not None)
    recorder = Recorder(
        settings=settings,
        module_names=module_names(model),
        places=place_names(model) if keyed else {},
        plan=plan,
        one_pass=one_pass,
    )
    token = _active.set(recorder)
    try:
        yield recorder
    finally:
        _active.reset(token)


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
    """Attention as the model defines it, with the active settings applied and recorded.

    The route (SDPA, explicit, block by block: txviz.core.routes) is planned once per call from the
    settings, this module's edits and reductions, and the model's arguments.
    """
    check_kwargs(module, kwargs)
    recorder = _active.get()
    if recorder is None:
        settings, name, plan, into = PLAIN, None, edits.EMPTY, None
    else:
        settings, name, plan = recorder.settings, recorder.module_names.get(id(module)), recorder.plan
        into = recorder.slot(query, key) if "weights" in settings.record else None
    reductions = settings.reductions(recorder.place(module)) if recorder is not None else ()
    call = routes.Call(
        module, query, key, value, attention_mask, dropout, scaling, is_causal,
        settings, plan.knockouts.get(name), kwargs, into,
    )  # fmt: skip
    output, weights, record = routes.plan(call, reductions)(call)
    head_edits = plan.head_out.get(name)
    if head_edits:
        output = edits.edit_head_out(output, head_edits)  # (B, Q, H, D), before the output projection
    if recorder is not None and (settings.record or reductions):
        rows = slice(-1, None) if settings.newest_query_only else slice(None)
        if "head_out" in settings.record:
            record["head_out"] = routes.keep(output.transpose(1, 2)[..., rows, :], "head_out", settings)
        recorder.add(module, AttentionRecord(**record, is_causal=call.causal))
    return output, weights


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
