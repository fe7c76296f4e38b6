"""Activations at one place of a decoder, collected through the front door and stopped at that place.

A place is the residual stream entering block L ("decoder.L.resid_pre") or block L's attention
output before the output projection, every head concatenated ("decoder.L.head_out"), so a
feature's share per head can be read off its slice. ``collect`` reads it with the front door's
``run_until``: its ``Stop`` edit takes the value there and ends the forward, so the
blocks after it never run (about half the cost at a middle layer). The front door's ``capture``
resets its ContextVar on the way out, so nothing leaks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from txviz.atlas.atlas import Settings as AtlasSettings
from txviz.atlas.build import windows
from txviz.atlas.corpus import AtlasCorpus
from txviz.core import errors
from txviz.core.capture import CaptureSettings
from txviz.core.edits import Ablate, Patch
from txviz.core.errors import UserError
from txviz.core.layouts import cached_layout
from txviz.core.running import run_until
from txviz.models import LoadedModel

Kind = Literal["resid_pre", "head_out"]
KINDS = ("resid_pre", "head_out")
_NAME = re.compile(r"^decoder\.(\d+)\.(resid_pre|head_out)$")


class FeaturesError(UserError):
    """A place, corpus or dictionary the features cannot use; the message says why."""


@dataclass(frozen=True)
class Place:
    """Where activations are read: the stream entering block ``layer``, or its heads' concatenated output."""

    kind: Kind
    layer: int

    @property
    def name(self) -> str:
        return f"decoder.{self.layer}.{self.kind}"

    @classmethod
    def parse(cls, name: str) -> Place:
        """A place from its name ('decoder.15.resid_pre'), as links carry it."""
        found = _NAME.match(name.strip())
        if not found:
            raise FeaturesError(
                f"{name!r} is not a place: write decoder.LAYER.resid_pre or decoder.LAYER.head_out."
            )
        return cls(found.group(2), int(found.group(1)))  # type: ignore[arg-type]

    def edit_point(self) -> tuple[str, int]:
        """The front door's edit point holding this value: (point, layer)."""
        # resid_pre L is the stream after block L - 1 (entering block 0 for L = 0); head_out is block L's
        if self.kind == "head_out":
            return "head_out", self.layer
        return ("embed", 0) if self.layer == 0 else ("resid", self.layer - 1)


def check_place(loaded: LoadedModel, place: Place) -> int:
    """Refuse a place the model map cannot name on this model; its width (d_model or heads x d_head)."""
    errors.require_kind(loaded, ("decoder",), "train a dictionary of its features")
    if place.kind not in KINDS:
        raise FeaturesError(f"Unknown place kind {place.kind!r}; choose from {', '.join(KINDS)}.")
    if not 0 <= place.layer < loaded.n_layers:
        raise FeaturesError(
            f"{loaded.name} has blocks 0 to {loaded.n_layers - 1}; there is no block {place.layer}."
        )
    layout = cached_layout(loaded.model)
    point, layer = place.edit_point()
    try:
        if point == "head_out":
            layout.attention_name(layout.last_stack, layer)
        else:
            layout.point_name(point, layout.last_stack, layer)
    except UserError as error:
        raise FeaturesError(f"The model map cannot place {place.name} on {loaded.name}: {error}") from error
    d_model = loaded.model.config.hidden_size
    if place.kind == "resid_pre":
        return int(d_model)
    head_dim = getattr(loaded.model.config, "head_dim", None) or d_model // loaded.n_heads
    return int(loaded.n_heads * head_dim)


def flat(value: torch.Tensor) -> torch.Tensor:
    """(B, T, D) or the heads' (B, T, H, D_head) as (B, T, width) float32 on the CPU."""
    return value.reshape(*value.shape[:2], -1).float().cpu()


def at_place(loaded: LoadedModel, place: Place, ids: torch.Tensor) -> torch.Tensor:
    """The activations at ``place`` of a batch of windows, (B, T, width); the forward stops there."""
    point, layer = place.edit_point()
    return flat(run_until(loaded.model, point, layer, input_ids=ids.to(loaded.device)))


def token_windows(loaded: LoadedModel, corpus: AtlasCorpus, window: int) -> np.ndarray:
    """The corpus as full windows of ``window`` tokens cut as the atlas cuts them, int64 (W, T)."""
    # each starts with the model's fixed first token; a short last window is dropped: no padding
    cut = windows(loaded, corpus, AtlasSettings(window=window))
    full = cut.ids[(cut.ids >= 0).all(axis=1)]
    return full.astype(np.int64)


def collect(loaded: LoadedModel, place: Place, ids: np.ndarray, batch: int = 8, progress=None) -> np.ndarray:
    """Activations at ``place`` of every window's positions after the first, (windows x (T - 1), width)."""
    # position 0 is the fixed first token, an attention sink whose norm is many times the others':
    # it would dominate the reconstruction loss
    parts = []
    for start in range(0, len(ids), batch):
        if progress:
            progress(start / max(1, len(ids)), f"{start:,} of {len(ids):,} windows read")
        found = at_place(loaded, place, torch.from_numpy(ids[start : start + batch]))
        parts.append(found[:, 1:].reshape(-1, found.shape[-1]).numpy())
    return np.concatenate(parts) if parts else np.zeros((0, check_place(loaded, place)), np.float32)


def splice_edit(place: Place, value: torch.Tensor | None, n_tokens: int, heads: int):
    """The front door's edit that puts ``value`` (B, T, width) at the place (None: zeros), position 0 kept."""
    point, layer = place.edit_point()
    positions = tuple(range(1, n_tokens))
    if value is None:
        return Ablate(point, layer, positions=positions)
    if place.kind == "head_out":
        value = value.reshape(*value.shape[:2], heads, -1)
    return Patch(point, layer, positions=positions, value=value)


def recording(place: Place) -> CaptureSettings:
    """What a full forward records to read the place: the stage or the heads."""
    point, _ = place.edit_point()
    if point == "head_out":
        return CaptureSettings(record=frozenset({"head_out"}))
    return CaptureSettings(stages=frozenset({point}))


def recorded(result, place: Place) -> torch.Tensor:
    """The place's value in a run that ``recording(place)`` asked, (B, T, width)."""
    point, layer = place.edit_point()
    if point == "head_out":
        return flat(result["head_out", layer].transpose(1, 2))  # (B, H, T, D) -> (B, T, H * D)
    return flat(result.stage_output(point, layer))
