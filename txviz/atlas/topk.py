"""Running top-k and decile samples of one criterion for every head, folded batch by batch on whole tensors.

Every batch hands in each row's value for every layer and head at once, (L, H, N), with the row's
place (window * window length + query) and its key. The top k is folded at once (one topk per
batch; no per-head Python loop). The decile bands are relative to each head's final max, which no
stream knows early: a sample kept while the max still rises misses rows that later fall into a
band, so each row's value is kept (4 bytes per row, layer and head: 108 MB for SmolLM2 over 100,000
tokens) and the bands are drawn once at the end, exactly.
"""

from __future__ import annotations

import numpy as np
import torch

from txviz.atlas.atlas import Contexts


class Running:
    """The k largest values per head so far, and each row's value for the decile samples at the end.

    Bands are HeadVis's: band d holds values in (max (1 - (d+1)/D), max (1 - d/D)] of the head's
    largest value (the last band reaches down to 0). Each row draws a priority from the seeded
    generator and a band keeps its ``per_band`` rows of lowest priority: a uniform draw without
    replacement from the band.
    """

    def __init__(self, shape: tuple[int, int], k: int, bands: int, per_band: int, seed: int) -> None:
        self.k, self.bands, self.per_band, self.seed = k, bands, per_band, seed
        self.top = _empty(shape, k)
        self.values: list[torch.Tensor] = []
        self.places: list[torch.Tensor] = []
        self.keys: list[torch.Tensor] = []

    def add(self, value: torch.Tensor, place: torch.Tensor, key: torch.Tensor) -> None:
        """Fold one batch: ``value`` (L, H, N) float (-inf: not a candidate), ``place`` (N,), ``key`` (L, H, N)."""
        value = value.float().cpu()
        place = place.to(torch.int64).cpu()
        key = key.to(torch.int32).cpu()  # a position in its window
        rows = {"value": value, "place": place.expand_as(value), "key": key.long()}
        joined = {n: torch.cat([self.top[n], rows[n]], -1) for n in self.top}
        best = joined["value"].topk(self.k, dim=-1).indices
        self.top = {n: joined[n].gather(-1, best) for n in joined}
        self.values.append(value)
        self.places.append(place)
        self.keys.append(key)

    def bands_drawn(self) -> dict[str, torch.Tensor]:
        """Each band's draw, (L, H, bands, per_band) per field, largest value first in a band."""
        value = torch.cat(self.values, -1)
        place = torch.cat(self.places).expand_as(value)
        key = torch.cat(self.keys, -1)
        priority = torch.rand(value.shape, generator=torch.Generator().manual_seed(self.seed))
        peak = value.max(-1, keepdim=True).values
        ratio = torch.where(peak > 0, value / peak, torch.ones_like(value))
        band = ((1 - ratio) * self.bands).floor().clamp(0, self.bands - 1)
        band = torch.where(torch.isfinite(value), band, torch.full_like(band, self.bands))  # not a candidate
        shape = (*value.shape[:2], self.bands, self.per_band)
        out = {
            n: torch.empty(shape, dtype=t)
            for n, t in (("value", torch.float32), ("place", torch.int64), ("key", torch.int64))
        }
        count = min(self.per_band, value.shape[-1])
        for d in range(self.bands):
            ranked = torch.where(band == d, priority, torch.inf).topk(count, dim=-1, largest=False)
            found = torch.isfinite(ranked.values)
            pick = ranked.indices
            out["value"][..., d, :count] = torch.where(found, value.gather(-1, pick), -torch.inf)
            out["place"][..., d, :count] = place.gather(-1, pick)
            out["key"][..., d, :count] = key.gather(-1, pick).long()
            out["value"][..., d, count:] = -torch.inf
        order = out["value"].argsort(-1, descending=True)
        return {n: a.gather(-1, order) for n, a in out.items()}

    def contexts(self, criterion: str, window: int) -> Contexts:
        """The finished top-k and bands as Contexts."""
        return Contexts(criterion, *_arrays(self.top, window), *_arrays(self.bands_drawn(), window))


def _empty(shape: tuple[int, int], k: int) -> dict[str, torch.Tensor]:
    return {
        "value": torch.full((*shape, k), -torch.inf),
        "place": torch.full((*shape, k), -1, dtype=torch.int64),
        "key": torch.full((*shape, k), -1, dtype=torch.int64),
    }


def _arrays(state: dict[str, torch.Tensor], window: int) -> tuple[np.ndarray, ...]:
    """(window, query, key, value) numpy arrays; -1 and NaN where no row was kept."""
    value = state["value"].numpy()
    found = np.isfinite(value)
    place = state["place"].numpy()
    where = lambda a: np.where(found, a, -1).astype(np.int32)  # noqa: E731
    return (
        where(place // window),
        where(place % window),
        where(state["key"].numpy()),
        np.where(found, value, np.nan).astype(np.float32),
    )
