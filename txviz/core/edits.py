"""Changes made to one forward pass: zero, patch or steer a point of the model, or cut attention edges.

An intervention is a frozen value carried by ``CaptureSettings.interventions`` in the capture
``ContextVar``: it applies to the call it was given to and to nothing else, it never touches a
weight, and it adds no hook. Points:

- ``"head_out"``: the heads' outputs before the output projection, (B, T, H, D_head), or one head's
  (B, T, D_head) with ``head=``; edited inside the attention function, so it works on the SDPA fast
  path too.
- ``"attn"``, ``"cross"``, ``"ffn"``: what a block's self-attention, cross-attention or FFN adds to
  the residual stream (before the add), (B, T, D).
- ``"resid"``: the residual stream after block ``layer``; ``"embed"``: the stream entering block 0.

``Stop`` is an edit of its own kind: it ends the forward at its point, so reading a middle layer costs
the blocks before it only.

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

Point = Literal["head_out", "attn", "cross", "ffn", "resid", "embed"]
POINTS = frozenset(get_args(Point))


class InterventionError(UserError):
    """An intervention that does not fit the model or the input."""


@dataclass(frozen=True, eq=False)
class Where:
    """A point of the model: ``point`` of block ``layer`` (head ``head`` alone for point "head_out")."""

    point: Point
    layer: int = 0  # ignored for "embed"
    head: int | None = None  # only for "head_out"; None: every head
    positions: Sequence[int] | None = None  # None: every position
    rows: Sequence[int] | None = None  # batch rows changed; None: every row
    stack: str | None = None  # "encoder" or "decoder"; None: the stack that makes the output
    cross: bool = False  # "head_out" of cross-attention (encoder-decoder models)

    def __post_init__(self) -> None:
        if self.point not in POINTS:
            raise InterventionError(f"Cannot change {self.point!r}; choose from {sorted(POINTS)}.")
        if self.head is not None and self.point != "head_out":
            raise InterventionError("A head is a part of the point 'head_out' only.")
        for name in ("positions", "rows"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, tuple(int(p) for p in getattr(self, name)))

    def place(self, layout: Layout, places: Places) -> None:
        """File this edit under the attention module (head points) or the stage point it changes."""
        stack = self.stack or layout.last_stack
        if self.point == "head_out":
            places.head_out.setdefault(layout.attention_name(stack, self.layer, self.cross), []).append(self)
            return
        places.streams.setdefault(layout.point_name(self.point, stack, self.layer), []).append(self)

    def new_value(self, x: torch.Tensor) -> torch.Tensor:
        """What the point becomes where the edit applies; each edit kind says its own."""
        raise NotImplementedError

    def apply(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` (B, T, ...) with this edit applied at its rows and positions; a new tensor."""
        new = self.new_value(x)
        if self.positions is None and self.rows is None:
            return new
        rows = _chosen(self.rows, x.shape[0], "rows", x.device)
        positions = _chosen(self.positions, x.shape[1], "positions", x.device)
        chosen = rows[:, None] & positions[None, :]  # (B, T)
        return torch.where(chosen.view(*chosen.shape, *(1,) * (x.dim() - 2)), new, x)


@dataclass(frozen=True, eq=False)
class Ablate(Where):
    """Zero the point (at ``positions``)."""

    def new_value(self, x: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(x)


@dataclass(frozen=True, eq=False)
class Patch(Where):
    """Replace the point by ``value``, e.g. a mean or what another run recorded there."""

    value: torch.Tensor = field(kw_only=True)

    def new_value(self, x: torch.Tensor) -> torch.Tensor:
        return _fit(self.value, x, "patch value")


@dataclass(frozen=True, eq=False)
class Steer(Where):
    """Add ``strength`` times ``vector`` to the point."""

    vector: torch.Tensor = field(kw_only=True)
    strength: float = field(default=1.0, kw_only=True)

    def new_value(self, x: torch.Tensor) -> torch.Tensor:
        vector = _fit(self.vector, x, "steering vector")
        return x + (vector if self.strength == 1 else self.strength * vector)  # attribution adds many at 1


Edit = Ablate | Patch | Steer


class Reached(Exception):  # noqa: N818 (not an error: how a Stop hands its value out of the forward)
    """Carries the value found at a ``Stop`` out of the forward."""

    def __init__(self, value: torch.Tensor) -> None:
        super().__init__("reached the point")
        self.value = value


@dataclass(frozen=True, eq=False)
class Stop(Where):
    """Hand back the value at the point and end the forward there: what comes after never runs
    (``running.run_until`` catches it)."""

    def new_value(self, x: torch.Tensor) -> torch.Tensor:
        raise Reached(x.detach())


@dataclass(frozen=True, eq=False)
class Knockout:
    """Cut attention from query ``i`` to key ``j`` for each (i, j) of ``edges`` in ``layers`` only."""

    edges: Sequence[tuple[int, int]]
    layers: Sequence[int]
    heads: Sequence[int] | None = None  # None: every head
    stack: str | None = None
    cross: bool = False
    rows: Sequence[int] | None = None  # batch rows cut; None: every row

    def __post_init__(self) -> None:
        object.__setattr__(self, "edges", tuple((int(q), int(k)) for q, k in self.edges))
        object.__setattr__(self, "layers", tuple(int(n) for n in self.layers))
        for name in ("heads", "rows"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, tuple(int(i) for i in getattr(self, name)))

    def place(self, layout: Layout, places: Places) -> None:
        """File this knockout under the attention module of each of its layers."""
        stack = self.stack or layout.last_stack
        for layer in self.layers:
            places.knockouts.setdefault(layout.attention_name(stack, layer, self.cross), []).append(self)

    def apply(self, allowed: torch.Tensor, offset: int) -> None:
        """Clear this knockout's edges in ``allowed`` ((B,) H, Q, K), whose queries start at ``offset``."""
        n_heads, n_query, n_key = allowed.shape[-3:]
        heads = list(range(n_heads)) if self.heads is None else list(self.heads)
        if any(not 0 <= h < n_heads for h in heads):
            raise InterventionError(f"This attention has heads 0 to {n_heads - 1}.")
        cut = torch.zeros(n_heads, n_query, n_key, dtype=torch.bool, device=allowed.device)
        for query, key in self.edges:
            if not (0 <= query < n_key and 0 <= key < n_key):
                raise InterventionError(
                    f"The edge {query} -> {key} is outside this input's {n_key} positions."
                )
            if query >= offset:  # earlier queries were computed by an earlier call (KV cache)
                cut[heads, query - offset, key] = True
        if self.rows is None:
            allowed &= ~cut
        else:  # a batched sweep: one knockout per row
            rows = _chosen(self.rows, allowed.shape[0], "rows", allowed.device)
            allowed[rows] &= ~cut


Intervention = Ablate | Patch | Steer | Knockout


@dataclass(frozen=True)
class Plan:
    """Interventions resolved against one model: by attention module name and by stage point name."""

    head_out: Mapping[str, tuple[Edit, ...]] = field(default_factory=dict)
    streams: Mapping[str, tuple[Edit, ...]] = field(default_factory=dict)
    knockouts: Mapping[str, tuple[Knockout, ...]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.head_out or self.streams or self.knockouts)


EMPTY = Plan()


@dataclass
class Places:
    """Where each edit was filed while planning: mutable lists, frozen into a ``Plan``."""

    head_out: dict[str, list] = field(default_factory=dict)
    streams: dict[str, list] = field(default_factory=dict)
    knockouts: dict[str, list] = field(default_factory=dict)


def plan(layout: Layout, interventions: Sequence[Intervention]) -> Plan:
    """Where each intervention acts in a model of this layout; a clear error when it cannot."""
    places = Places()
    try:
        for item in interventions:
            if not callable(getattr(item, "place", None)):
                raise InterventionError(f"Not an intervention: {item!r}.")
            item.place(layout, places)
    except UserError as error:  # a layer or stack the model lacks: one error type for every intervention
        if isinstance(error, InterventionError):
            raise
        raise InterventionError(str(error)) from error
    freeze = lambda found: {name: tuple(items) for name, items in found.items()}  # noqa: E731
    return Plan(freeze(places.head_out), freeze(places.streams), freeze(places.knockouts))


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
    return edit.apply(x)


def edit_stream(x: torch.Tensor, edits: Sequence[Edit]) -> torch.Tensor:
    """The stream or sub-block output ``x`` (B, T, D) with ``edits`` applied in order."""
    for edit in edits:
        x = edited(x, edit)
    return x


def edit_head_out(output: torch.Tensor, edits: Sequence[Edit]) -> torch.Tensor:
    """The attention output (B, Q, H, D) before the output projection with its ``edits`` applied."""
    n_heads = output.shape[2]
    if any(edit.head is not None for edit in edits):  # one head is written in place: not the caller's tensor
        output = output.clone()
    for edit in edits:
        if edit.head is None:  # every head at once: a new tensor
            output = edited(output, edit)
            continue
        if not 0 <= edit.head < n_heads:
            raise InterventionError(
                f"This attention has heads 0 to {n_heads - 1}; there is no head {edit.head}."
            )
        output[:, :, edit.head, :] = edited(output[:, :, edit.head, :], edit)
    return output


def knockout_mask(
    knockouts: Sequence[Knockout], n_heads: int, n_query: int, n_key: int, device, n_batch: int = 1
) -> torch.Tensor:
    """Bool (H, Q, K), or (B, H, Q, K) when a knockout picks rows: False where an edge is cut.

    Queries are the last n_query of n_key positions.
    """
    batch = (n_batch,) if any(k.rows is not None for k in knockouts) else ()
    allowed = torch.ones(*batch, n_heads, n_query, n_key, dtype=torch.bool, device=device)
    for knockout in knockouts:
        knockout.apply(allowed, n_key - n_query)
    return allowed
