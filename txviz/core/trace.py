"""Frozen numpy records of what a model did, ready to plot, cache and export."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True, eq=False)
class AttentionTrace:
    """Attention of one forward pass, ready to plot."""

    query_tokens: tuple[str, ...]
    key_tokens: tuple[str, ...]  # differ from query_tokens only for cross-attention
    weights: np.ndarray  # float32 [layer, head, query_pos, key_pos]
    model_name: str
    kind: str  # "self", "causal", "cross", "vision"
    layer_names: tuple[str, ...] = ()  # module name of each layer's attention
    special: tuple[bool, ...] = ()  # per key token: [CLS], [SEP], <s> ...
    scores: np.ndarray | None = None  # pre-normalisation scores, masked = -inf
    queries: np.ndarray | None = None  # [layer, head, query_pos, d_head]
    keys: np.ndarray | None = None  # [layer, head, key_pos, d_head]
    notice: str = ""  # e.g. "text truncated to 512 tokens"
    raw_tokens: tuple[str, ...] = field(default=())  # tokenizer's own pieces (Ġ, ##) for hover

    @property
    def n_layers(self) -> int:
        return self.weights.shape[0]

    @property
    def n_heads(self) -> int:
        return self.weights.shape[1]

    def head(self, layer: int, head: int) -> np.ndarray:
        """One head's [query_pos, key_pos] matrix."""
        return self.weights[layer, head]


def lock_arrays(value: Any, _seen: set[int] | None = None) -> Any:
    """Make every numpy array in ``value`` read-only (through dataclasses, tuples, lists, dicts).

    Results cached for every session are shared objects: a locked array fails loudly where an
    in-place change would silently alter another session's view. Returns ``value`` itself.
    """
    seen = set() if _seen is None else _seen
    if id(value) in seen:
        return value
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
        if value.dtype == object:
            for item in value.flat:
                lock_arrays(item, seen)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            lock_arrays(getattr(value, f.name), seen)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            lock_arrays(item, seen)
    elif isinstance(value, dict):
        for item in value.values():
            lock_arrays(item, seen)
    return value
