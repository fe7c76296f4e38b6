"""Changes made to one forward pass: zero, patch or steer a point of the model, or cut attention edges.

An intervention is a frozen value carried by ``CaptureSettings.interventions`` in the capture
``ContextVar``: it applies to the call it was given to and to nothing else, it never touches a
weight, and it adds no hook. Points:

- ``"head"``: one head's output before the output projection, (B, T, D_head) of (B, T, H, D_head);
  edited inside the attention function, so it works on the SDPA fast path too. ``"heads"``: every
  head of the block at once, (B, T, H, D_head).
- ``"attn"``, ``"cross"``, ``"ffn"``: what a block's self-attention, cross-attention or FFN adds to
  the residual stream (before the add), (B, T, D).
- ``"resid"``: the residual stream after block ``layer``; ``"embed"``: the stream entering block 0.

Positions index the query (token) axis of the call; a value given to ``Patch`` broadcasts against
the whole point, (B, T, D) or (T, D) or (D,), and only the chosen positions take it. ``rows``
picks batch rows the same way, so one batched call can run a different intervention in each row
(a sweep over every head is one batch, one ablation per row).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, get_args

import torch

from txviz.core.errors import UserError
from txviz.core.layouts import Layout

Point = Literal["head", "heads", "attn", "cross", "ffn", "resid", "embed"]
POINTS = frozenset(get_args(Point))


class InterventionError(UserError):
    """An intervention that does not fit the model or the input."""


@dataclass(frozen=True, eq=False)
class Where:
    """A point of the model: ``point`` of block ``layer`` (head ``head`` for point "head")."""

    point: Point
    layer: int = 0  # ignored for "embed"
    head: int | None = None  # only for "head"
    positions: Sequence[int] | None = None  # None: every position
    rows: Sequence[int] | None = None  # batch rows changed; None: every row
    stack: str | None = None  # "encoder" or "decoder"; None: the stack that makes the output
    cross: bool = False  # "head" or "heads" of cross-attention (encoder-decoder models)

    def __post_init__(self) -> None:
        if self.point not in POINTS:
            raise InterventionError(f"Cannot change {self.point!r}; choose from {sorted(POINTS)}.")
        if (self.point == "head") != (self.head is not None):
            raise InterventionError("Give a head exactly when the point is 'head'.")
        for name in ("positions", "rows"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, tuple(int(p) for p in getattr(self, name)))


@dataclass(frozen=True, eq=False)
class Ablate(Where):
    """Zero the point (at ``positions``)."""


@dataclass(frozen=True, eq=False)
class Patch(Where):
    """Replace the point by ``value``, e.g. a mean or what another run recorded there."""

    value: torch.Tensor = field(kw_only=True)


@dataclass(frozen=True, eq=False)
class Steer(Where):
    """Add ``strength`` times ``vector`` to the point."""

    vector: torch.Tensor = field(kw_only=True)
    strength: float = field(default=1.0, kw_only=True)


Edit = Ablate | Patch | Steer


@dataclass(frozen=True, eq=False)
class Knockout:
    """Cut attention from query ``i`` to key ``j`` for each (i, j) of ``edges`` in ``layers`` only."""

    edges: Sequence[tuple[int, int]]
    layers: Sequence[int]
    heads: Sequence[int] | None = None  # None: every head
    stack: str | None = None
    cross: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "edges", tuple((int(q), int(k)) for q, k in self.edges))
        object.__setattr__(self, "layers", tuple(int(n) for n in self.layers))
        if self.heads is not None:
            object.__setattr__(self, "heads", tuple(int(h) for h in self.heads))


Intervention = Ablate | Patch | Steer | Knockout


@dataclass(frozen=True)
class Plan:
    """Interventions resolved against one model: by attention module name and by stage point name."""

    heads: Mapping[str, tuple[Edit, ...]] = field(default_factory=dict)
    streams: Mapping[str, tuple[Edit, ...]] = field(default_factory=dict)
    knockouts: Mapping[str, tuple[Knockout, ...]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.heads or self.streams or self.knockouts)


EMPTY = Plan()


def plan(layout: Layout, interventions: Sequence[Intervention]) -> Plan:
    """Where each intervention acts in a model of this layout; a clear error when it cannot."""
    heads: dict[str, list] = {}
    streams: dict[str, list] = {}
    knockouts: dict[str, list] = {}
    try:
        _place(layout, interventions, heads, streams, knockouts)
    except UserError as error:  # a layer or stack the model lacks: one error type for every intervention
        if isinstance(error, InterventionError):
            raise
        raise InterventionError(str(error)) from error
    freeze = lambda found: {name: tuple(items) for name, items in found.items()}  # noqa: E731
    return Plan(freeze(heads), freeze(streams), freeze(knockouts))


def _place(layout: Layout, interventions, heads: dict, streams: dict, knockouts: dict) -> None:
    for item in interventions:
        stack = item.stack or layout.last_stack
        if isinstance(item, Knockout):
            for layer in item.layers:
                knockouts.setdefault(layout.attention_name(stack, layer, item.cross), []).append(item)
        elif isinstance(item, (Ablate, Patch, Steer)):
            if item.point in ("head", "heads"):
                heads.setdefault(layout.attention_name(stack, item.layer, item.cross), []).append(item)
            else:
                streams.setdefault(layout.point_name(item.point, stack, item.layer), []).append(item)
        else:
            raise InterventionError(f"Not an intervention: {item!r}.")


def _fit(value: torch.Tensor, like: torch.Tensor, what: str) -> torch.Tensor:
    value = torch.as_tensor(value).to(device=like.device, dtype=like.dtype)
    try:
        return value.expand_as(like)
    except RuntimeError:
        raise InterventionError(
            f"The {what} has shape {tuple(value.shape)}; the point it changes has shape {tuple(like.shape)}."
        ) from None


def _position_index(positions: Sequence[int], n: int, what: str = "positions") -> torch.Tensor:
    bad = [p for p in positions if not -n <= p < n]
    if bad:
        raise InterventionError(f"{what.capitalize()} {bad} are outside this input's {n} {what}.")
    return torch.tensor([p % n for p in positions], dtype=torch.long)


def _chosen(indices: Sequence[int] | None, n: int, what: str, device) -> torch.Tensor:
    """Bool (n,), True at the chosen indices (every one when None)."""
    if indices is None:
        return torch.ones(n, dtype=torch.bool, device=device)
    chosen = torch.zeros(n, dtype=torch.bool, device=device)
    chosen[_position_index(indices, n, what).to(device)] = True
    return chosen


def edited(x: torch.Tensor, edit: Edit) -> torch.Tensor:
    """``x`` (B, T, ...) with one edit applied along its position axis; a new tensor."""
    if isinstance(edit, Ablate):
        new = torch.zeros_like(x)
    elif isinstance(edit, Patch):
        new = _fit(edit.value, x, "patch value")
    else:
        vector = _fit(edit.vector, x, "steering vector")
        new = x + (vector if edit.strength == 1 else edit.strength * vector)  # attribution adds many at 1
    if edit.positions is None and edit.rows is None:
        return new
    rows = _chosen(edit.rows, x.shape[0], "rows", x.device)
    positions = _chosen(edit.positions, x.shape[1], "positions", x.device)
    chosen = rows[:, None] & positions[None, :]  # (B, T)
    return torch.where(chosen.view(*chosen.shape, *(1,) * (x.dim() - 2)), new, x)


def edit_stream(x: torch.Tensor, edits: Sequence[Edit]) -> torch.Tensor:
    """The stream or sub-block output ``x`` (B, T, D) with ``edits`` applied in order."""
    for edit in edits:
        x = edited(x, edit)
    return x


def edit_heads(output: torch.Tensor, edits: Sequence[Edit]) -> torch.Tensor:
    """The attention output (B, Q, H, D) before the output projection with head ``edits`` applied."""
    n_heads = output.shape[2]
    if any(edit.head is not None for edit in edits):  # one head is written in place: not the caller's tensor
        output = output.clone()
    for edit in edits:
        if edit.head is None:  # point "heads": a new tensor
            output = edited(output, edit)
            continue
        if not 0 <= edit.head < n_heads:
            raise InterventionError(
                f"This attention has heads 0 to {n_heads - 1}; there is no head {edit.head}."
            )
        output[:, :, edit.head, :] = edited(output[:, :, edit.head, :], edit)
    return output


def knockout_mask(
    knockouts: Sequence[Knockout], n_heads: int, n_query: int, n_key: int, device
) -> torch.Tensor:
    """Bool (H, Q, K), False where an edge is cut; queries are the last n_query of n_key positions."""
    allowed = torch.ones(n_heads, n_query, n_key, dtype=torch.bool, device=device)
    offset = n_key - n_query
    for knockout in knockouts:
        heads = list(range(n_heads)) if knockout.heads is None else list(knockout.heads)
        if any(not 0 <= h < n_heads for h in heads):
            raise InterventionError(f"This attention has heads 0 to {n_heads - 1}.")
        for query, key in knockout.edges:
            if not (0 <= query < n_key and 0 <= key < n_key):
                raise InterventionError(
                    f"The edge {query} -> {key} is outside this input's {n_key} positions."
                )
            if query >= offset:  # earlier queries were computed by an earlier call (KV cache)
                allowed[heads, query - offset, key] = False
    return allowed
