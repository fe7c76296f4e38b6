"""Running top-k and decile samples of one criterion for every head, folded batch by batch on whole tensors.

Every batch hands in each row's value for every layer and head at once, (L, H, N), with the row's
place (window * window length + query) and its key; the state is a few (L, H, k) tensors, so a
corpus of any length costs the same memory. No per-head Python loop: one topk or sort per batch.
"""

from __future__ import annotations

import numpy as np
import torch

from txviz.atlas.atlas import Contexts


class Running:
    """The k largest values per head so far, and a seeded sample of each decile band below the max.

    Bands are HeadVis's: band d holds values in (max (1 - (d+1)/D), max (1 - d/D)] of the head's
    largest value. Each row draws a priority from the seeded generator; a band keeps its
    ``per_band`` rows of lowest priority. The pool is re-banded against the running max at every
    batch, so the sample is exact when the max is reached early (the usual case) and otherwise drawn
    from the rows that were kept then; every kept row lies in its band of the final max either way.
    """

    def __init__(self, shape: tuple[int, int], k: int, bands: int, per_band: int, seed: int) -> None:
        self.k, self.bands, self.per_band = k, bands, per_band
        self.top = _empty(shape, k)
        self.pool = {**_empty(shape, bands * per_band), "priority": torch.ones(*shape, bands * per_band)}
        self.max = torch.full(shape, -torch.inf)
        self.generator = torch.Generator().manual_seed(seed)

    def add(self, value: torch.Tensor, place: torch.Tensor, key: torch.Tensor) -> None:
        """Fold one batch: ``value`` (L, H, N) float (-inf: not a candidate), ``place`` (N,), ``key`` (L, H, N)."""
        value = value.float().cpu()
        place = place.to(torch.int64).cpu().expand_as(value)
        key = key.to(torch.int64).cpu()
        rows = {"value": value, "place": place, "key": key}
        joined = {n: torch.cat([self.top[n], rows[n]], -1) for n in self.top}
        best = joined["value"].topk(self.k, dim=-1).indices
        self.top = {n: joined[n].gather(-1, best) for n in joined}
        rows["priority"] = torch.rand(value.shape, generator=self.generator)
        self._sample({n: torch.cat([self.pool[n], rows[n]], -1) for n in self.pool})

    def _sample(self, pool: dict[str, torch.Tensor]) -> None:
        """Keep each band's ``per_band`` rows of lowest priority, bands taken against the running max."""
        value, d, p = pool["value"], self.bands, self.per_band
        self.max = torch.maximum(self.max, value.max(-1).values)
        top = self.max[..., None]
        ratio = torch.where(top > 0, value / top, torch.ones_like(value))
        band = ((1 - ratio) * d).floor().clamp(0, d - 1)
        band = torch.where(torch.isfinite(value), band, torch.full_like(band, d))  # d: not a candidate
        order = (band + pool["priority"].clamp(max=0.999999)).argsort(-1)
        band = band.gather(-1, order).contiguous()
        start = torch.searchsorted(band, band)  # each sorted row's band begins here
        rank = torch.arange(band.shape[-1]) - start
        keep = (rank < p) & (band < d)
        slot = torch.where(keep, band.long() * p + rank, d * p)  # the last slot takes what is dropped
        fresh = {**_empty(value.shape[:2], d * p + 1), "priority": torch.ones(*value.shape[:2], d * p + 1)}
        for name, array in pool.items():
            fresh[name].scatter_(-1, slot, array.gather(-1, order))
        self.pool = {n: a[..., :-1] for n, a in fresh.items()}

    def contexts(self, criterion: str, window: int) -> Contexts:
        """The finished top-k and bands (each band sorted by value, largest first) as Contexts."""
        shape = (*self.max.shape, self.bands, self.per_band)
        pool = {n: a.reshape(shape) for n, a in self.pool.items()}
        order = pool["value"].argsort(-1, descending=True)
        pool = {n: a.gather(-1, order) for n, a in pool.items()}
        top = _arrays(self.top, window)
        band = _arrays(pool, window)
        return Contexts(criterion, *top, *band)


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
