"""The one attention function every model runs through, and what it records.

Models are loaded with ``attn_implementation="txviz"``. A ``ContextVar`` carries the per-call
settings, so concurrent Streamlit sessions sharing one cached model never see each other's
settings or records, and the shared model itself is never mutated per request.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

import numpy as np
import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import repeat_kv, sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from txviz.core.attention import Normalizer, causal_mask, softmax

IMPLEMENTATION = "txviz"
RECORDABLE = frozenset({"weights", "scores", "queries", "keys"})

# (query positions (Q, 1), key positions (1, K)) -> bool (Q, K), True where attention is allowed;
# the same shape of function as FlexAttention's mask_mod without batch and head.
MaskFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class CaptureSettings:
    """What the attention function should compute and record during one call."""

    record: frozenset[str] = frozenset()  # any of RECORDABLE
    normalize: Normalizer | None = None  # masked scores -> weights; None is softmax
    extra_mask: MaskFn | torch.Tensor | None = None  # applied on top of the model's own mask
    newest_query_only: bool = False  # keep only the last query row (generation)

    def __post_init__(self) -> None:
        unknown = set(self.record) - RECORDABLE
        if unknown:
            raise ValueError(f"Cannot record {sorted(unknown)}; choose from {sorted(RECORDABLE)}.")
        object.__setattr__(self, "record", frozenset(self.record))

    @property
    def fast_path(self) -> bool:
        """Nothing to record and plain softmax: hand over to SDPA."""
        return not self.record and self.normalize is None and self.extra_mask is None


@dataclass(frozen=True)
class AttentionRecord:
    """What one call of one attention module produced (batch first, float32, on CPU)."""

    weights: torch.Tensor | None = None  # (B, H, Q, K)
    scores: torch.Tensor | None = None  # (B, H, Q, K), -inf where masked
    queries: torch.Tensor | None = None  # (B, H, Q, D)
    keys: torch.Tensor | None = None  # (B, H, K, D), KV heads expanded to query heads
    is_causal: bool = False


@dataclass
class Recorder:
    """Collects records during a ``capture`` block, keyed by module name in call order."""

    settings: CaptureSettings
    module_names: dict[int, str]
    records: dict[str, list[AttentionRecord]] = field(default_factory=dict)

    def add(self, module: torch.nn.Module, record: AttentionRecord) -> None:
        name = self.module_names.get(id(module), type(module).__name__)
        self.records.setdefault(name, []).append(record)

    def stack(self, item: str = "weights", call: int = -1, names: list[str] | None = None):
        """One numpy array [layer, head, ...] of batch item 0 from the given call of each module."""
        names = list(self.records) if names is None else names
        return np.stack([getattr(self.records[n][call], item)[0].numpy() for n in names])


_active: ContextVar[Recorder | None] = ContextVar("txviz_capture", default=None)


_names_by_model: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def module_names(model: torch.nn.Module) -> dict[int, str]:
    """id -> name of every submodule, cached: walking the modules costs ~8 ms a call on SmolLM2."""
    names = _names_by_model.get(model)
    if names is None:
        names = _names_by_model[model] = {id(m): n for n, m in model.named_modules()}
    return names


@contextmanager
def capture(model: torch.nn.Module, settings: CaptureSettings) -> Iterator[Recorder]:
    """Within this block, attention of ``model`` follows ``settings`` and is recorded."""
    recorder = Recorder(settings=settings, module_names=module_names(model))
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
    settings = recorder.settings if recorder else CaptureSettings()
    if settings.fast_path and not kwargs.get("output_attentions"):
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout, scaling, is_causal, **kwargs
        )

    groups = getattr(module, "num_key_value_groups", 1)
    key, value = repeat_kv(key, groups), repeat_kv(value, groups)
    scale = query.shape[-1] ** -0.5 if scaling is None else scaling
    scores = torch.matmul(query, key.transpose(2, 3)).float() * scale  # (B, H, Q, K)
    if kwargs.get("softcap") is not None:
        scores = kwargs["softcap"] * torch.tanh(scores / kwargs["softcap"])
    if kwargs.get("position_bias") is not None:
        scores = scores + kwargs["position_bias"]

    n_query, n_key = scores.shape[-2:]
    causal = bool(is_causal if is_causal is not None else getattr(module, "is_causal", False))
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
        scores = scores.masked_fill(~causal_mask(n_query, n_key, scores.device), float("-inf"))
    if settings.extra_mask is not None:
        scores = scores.masked_fill(~_allowed(settings, n_query, n_key, scores.device), float("-inf"))

    weights = (settings.normalize or softmax)(scores)  # (B, H, Q, K)
    if module.training and dropout > 0:
        weights = torch.nn.functional.dropout(weights, p=dropout)
    output = torch.matmul(weights.to(value.dtype), value).transpose(1, 2).contiguous()

    if recorder is not None and settings.record:
        rows = slice(-1, None) if settings.newest_query_only else slice(None)
        recorder.add(
            module,
            AttentionRecord(
                weights=_keep(weights[..., rows, :], "weights", settings),
                scores=_keep(scores[..., rows, :], "scores", settings),
                queries=_keep(query[..., rows, :], "queries", settings),
                keys=_keep(key, "keys", settings),
                is_causal=causal,
            ),
        )
    return output, weights.to(query.dtype)


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
