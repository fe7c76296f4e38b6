"""What each feature of a dictionary does over a set of windows: how often it fires, how strongly, and where.

The windows are read at the dictionary's place batch by batch (position 0 skipped, as ``collect``
skips it) and encoded; a TopK dictionary has at most k nonzero latents per token, so only those are
kept, as triplets (feature, place = window x T + position, value). A dense features x tokens array
is never built: SmolLM2's 9,216 features over 50,000 tokens would be gigabytes, its triplets
(k = 32 per token) a few megabytes.

From the triplets: each feature's density (the share of counted tokens where it fires), its mean
activation when firing and its peak; its ``top`` largest activations; and HeadVis's bands as the Head
Atlas draws them (``txviz.atlas.topk.Running.bands_drawn``): band d holds the firing values in
(peak (1 - (d+1)/bands), peak (1 - d/bands)], the last band reaching down to 0, and keeps the
``per_band`` of its values with the lowest priority. Priorities are one seeded uniform draw per
triplet, in the order (place, feature): a uniform draw without replacement within each band, the
same whatever the batch size. Only firing tokens are candidates; a token where the feature is zero
is in no band.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
import torch

from txviz.features.activations import FeaturesError, Place, at_place, check_place
from txviz.features.sae import TopKSAE
from txviz.models import LoadedModel

FILE = "index.npz"
FORMAT = 2


@dataclass
class Triplets:
    """Every nonzero latent of the counted tokens: (feature, place, value), in (place, feature) order."""

    feature: np.ndarray  # int32 (n,)
    place: np.ndarray  # int64 (n,): window x T + position
    value: np.ndarray  # float32 (n,)
    tokens: int  # positions counted: windows x (T - 1)


@dataclass
class FeatureIndex:
    """Each feature's density, mean and peak, top contexts and band samples over windows ``ids``."""

    ids: np.ndarray  # int64 (W, T): the windows
    tokens: int  # positions counted: W x (T - 1)
    density: np.ndarray  # float64 (m,): share of counted tokens where the feature fires
    mean: np.ndarray  # float32 (m,): mean activation when firing, 0 where it never fires
    peak: np.ndarray  # float32 (m,): largest activation, 0 where it never fires
    top_window: np.ndarray  # int32 (m, top), largest first; -1 where fewer fired
    top_position: np.ndarray  # int32 (m, top)
    top_value: np.ndarray  # float32 (m, top); NaN where fewer fired
    band_window: np.ndarray  # int32 (m, bands, per_band), largest first within a band; -1 where empty
    band_position: np.ndarray  # int32 (m, bands, per_band)
    band_value: np.ndarray  # float32 (m, bands, per_band); NaN where empty
    starts: np.ndarray  # int64 (m + 1,): feature f's firings are fired_*[starts[f]:starts[f + 1]]
    fired_place: np.ndarray  # int64 (n,): every firing's window x T + position, grouped by feature
    fired_value: np.ndarray  # float32 (n,)

    @property
    def width(self) -> int:
        return len(self.density)

    def _check(self, feature: int) -> int:
        if not 0 <= int(feature) < self.width:
            raise FeaturesError(f"This dictionary has features 0 to {self.width - 1}; there is no {feature}.")
        return int(feature)

    def contexts(self, feature: int) -> list[tuple[int, int, float]]:
        """The feature's top contexts, largest first: (window, position, value)."""
        f = self._check(feature)
        return _listed(self.top_window[f], self.top_position[f], self.top_value[f])

    def band_contexts(self, feature: int) -> list[list[tuple[int, int, float]]]:
        """The feature's band samples, strongest band first, each band largest first."""
        f = self._check(feature)
        return [
            _listed(w, p, v)
            for w, p, v in zip(self.band_window[f], self.band_position[f], self.band_value[f], strict=True)
        ]

    def activations(self, feature: int, window: int) -> np.ndarray:
        """The feature's activation at every position of one indexed window (0 where it did not fire, and at
        position 0, never read), float32 (T,): from the kept firings, no forward."""
        f = self._check(feature)
        length = self.ids.shape[1]
        place = self.fired_place[self.starts[f] : self.starts[f + 1]]
        value = self.fired_value[self.starts[f] : self.starts[f + 1]]
        mine = place // length == int(window)
        out = np.zeros(length, np.float32)
        out[place[mine] % length] = value[mine]
        return out

    def save(self, folder: Path | str) -> Path:
        """Write ``index.npz`` into the dictionary's folder atomically (a temporary file replaced over it)."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        arrays = {f.name: np.asarray(getattr(self, f.name)) for f in fields(self)}
        handle, temporary = tempfile.mkstemp(prefix=".index-", suffix=".npz", dir=folder)
        try:
            with os.fdopen(handle, "wb") as out:  # a file object: savez adds no second suffix
                np.savez(out, format=np.int64(FORMAT), **arrays)
            os.replace(temporary, folder / FILE)
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)
        return folder / FILE

    @classmethod
    def load(cls, folder: Path | str) -> FeatureIndex:
        """The index saved in ``folder``, or a FeaturesError saying why it cannot be read."""
        path = Path(folder) / FILE
        if not path.exists():
            raise FeaturesError(f"No feature index in {folder}: index this dictionary first.")
        with np.load(path, allow_pickle=False) as data:
            if "format" not in data.files or int(data["format"]) != FORMAT:
                raise FeaturesError(f"The feature index in {folder} has another format; index it again.")
            missing = [f.name for f in fields(cls) if f.name not in data.files]
            if missing:
                raise FeaturesError(
                    f"The feature index in {folder} lacks {', '.join(missing)}; index it again."
                )
            found = {f.name: data[f.name] for f in fields(cls)}
        found["tokens"] = int(found["tokens"])
        return cls(**found)


def _listed(window: np.ndarray, position: np.ndarray, value: np.ndarray) -> list[tuple[int, int, float]]:
    kept = np.isfinite(value)
    return [
        (int(w), int(p), float(v)) for w, p, v in zip(window[kept], position[kept], value[kept], strict=True)
    ]


def check_dictionary(loaded: LoadedModel, place: Place, sae: TopKSAE) -> None:
    """Refuse a dictionary whose width is not the place's."""
    width = check_place(loaded, place)
    if sae.W_dec.shape[1] != width:
        raise FeaturesError(
            f"This dictionary reads {sae.W_dec.shape[1]} numbers per token but {place.name} of {loaded.name} "
            f"has {width}: it was built for another place or model."
        )


def check_windows(ids: np.ndarray) -> np.ndarray:
    """``ids`` as int64 (W, T) with T >= 2, or a FeaturesError."""
    ids = np.asarray(ids)
    if ids.ndim != 2 or ids.shape[1] < 2 or not np.issubdtype(ids.dtype, np.integer):
        raise FeaturesError(f"Windows must be integer token ids of shape (windows, T >= 2), not {ids.shape}.")
    return ids.astype(np.int64, copy=False)


def triplets(
    loaded: LoadedModel,
    place: Place,
    sae: TopKSAE,
    ids: np.ndarray,
    batch: int = 8,
    progress: Callable[[float, str], None] | None = None,
    activations: np.ndarray | None = None,
) -> Triplets:
    """The nonzero latents of every window's positions after the first, batch by batch; ``activations``
    (windows x (T - 1), width), as ``collect`` returns them for ``ids``, saves the forwards."""
    check_dictionary(loaded, place, sae)
    ids = check_windows(ids)
    n_windows, length = ids.shape
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for start in range(0, n_windows, batch):
        if progress:
            progress(start / max(1, n_windows), f"{start:,} of {n_windows:,} windows read")
        if activations is not None:
            rows = torch.from_numpy(activations[start * (length - 1) : (start + batch) * (length - 1)])
        else:
            found = at_place(loaded, place, torch.from_numpy(ids[start : start + batch]))
            rows = found[:, 1:].reshape(-1, found.shape[-1])  # position 0: the sink the dictionary never saw
        with torch.no_grad():
            z = sae.encode(rows)  # (batch x (T - 1), m): one batch dense, never all tokens
        token, feature = torch.nonzero(z, as_tuple=True)  # row-major: (place, feature) order
        value = z[token, feature].numpy().astype(np.float32)
        token = token.numpy()
        window = start + token // (length - 1)
        parts.append((feature.numpy().astype(np.int32), window * length + token % (length - 1) + 1, value))
    if progress:
        progress(1.0, f"{n_windows:,} windows read")
    if not parts:
        return Triplets(np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0, np.float32), 0)
    feature, where, value = (np.concatenate(p) for p in zip(*parts, strict=True))
    return Triplets(feature, where.astype(np.int64), value, n_windows * (length - 1))


def _group_rank(keys: tuple[np.ndarray, ...]) -> np.ndarray:
    """Each sorted row's rank within its run of equal ``keys`` (rows already sorted by them)."""
    n = len(keys[0])
    if n == 0:
        return np.zeros(0, np.int64)
    new = np.zeros(n, dtype=bool)
    new[0] = True
    for key in keys:
        new[1:] |= key[1:] != key[:-1]
    starts = np.flatnonzero(new)
    return np.arange(n) - np.repeat(starts, np.diff(np.append(starts, n)))


def band_of(value: np.ndarray, peak: np.ndarray, bands: int) -> np.ndarray:
    """HeadVis's band of each value against its feature's peak: floor((1 - value / peak) x bands), clipped."""
    # float32 throughout, as the Head Atlas's torch version computes it, so a value on an edge lands alike
    value, peak = value.astype(np.float32), peak.astype(np.float32)
    ratio = np.where(peak > 0, value / np.where(peak > 0, peak, 1), np.float32(1))
    return np.clip(np.floor((1 - ratio) * np.float32(bands)), 0, bands - 1).astype(np.int64)


def summarise(
    found: Triplets,
    ids: np.ndarray,
    width: int,
    top: int = 12,
    bands: int = 10,
    per_band: int = 3,
    seed: int = 0,
) -> FeatureIndex:
    """The index of ``width`` features from their triplets (numpy sorts; no features x tokens array)."""
    length = ids.shape[1]
    f, place, value = found.feature.astype(np.int64), found.place, found.value
    count = np.bincount(f, minlength=width)
    total = np.bincount(f, weights=value.astype(np.float64), minlength=width)
    peak = np.zeros(width, np.float32)
    np.maximum.at(peak, f, value)
    density = count / found.tokens if found.tokens else np.zeros(width)
    mean = np.where(count > 0, total / np.maximum(count, 1), 0.0).astype(np.float32)

    # top: by feature, then value descending (lexsort is stable: ties keep (place, feature) order)
    order = np.lexsort((-value, f))
    rank = _group_rank((f[order],))
    keep = order[rank < top]
    top_w, top_p, top_v = _slots((width, top), f[keep], rank[rank < top], place[keep], value[keep], length)

    # bands: a priority per triplet, drawn in (place, feature) order; each band keeps its lowest
    priority = np.random.default_rng(seed).random(len(value))
    band = band_of(value, peak[f], bands)
    order = np.lexsort((priority, band, f))
    rank = _group_rank((f[order], band[order]))
    keep = order[rank < per_band]
    slot = band[keep] * per_band + rank[rank < per_band]
    band_w, band_p, band_v = _slots(
        (width, bands * per_band), f[keep], slot, place[keep], value[keep], length
    )
    shape = (width, bands, per_band)
    band_w, band_p, band_v = band_w.reshape(shape), band_p.reshape(shape), band_v.reshape(shape)
    # within a band largest first, as the Head Atlas shows its samples; empty slots (NaN) last
    by = np.argsort(-np.nan_to_num(band_v, nan=-np.inf), axis=-1, kind="stable")
    band_w, band_p, band_v = (np.take_along_axis(a, by, -1) for a in (band_w, band_p, band_v))
    # every firing kept, grouped by feature: shading a context's tokens needs no forward
    grouped = np.argsort(f, kind="stable")
    starts = np.concatenate([[0], np.cumsum(count)]).astype(np.int64)
    return FeatureIndex(
        ids, found.tokens, density, mean, peak, top_w, top_p, top_v, band_w, band_p, band_v,
        starts, place[grouped].astype(np.int64), value[grouped].astype(np.float32),
    )  # fmt: skip


def _slots(
    shape: tuple[int, int],
    row: np.ndarray,
    col: np.ndarray,
    place: np.ndarray,
    value: np.ndarray,
    length: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(window, position, value) arrays of ``shape`` filled at (row, col); -1 and NaN elsewhere."""
    window = np.full(shape, -1, np.int32)
    position = np.full(shape, -1, np.int32)
    values = np.full(shape, np.nan, np.float32)
    window[row, col] = place // length
    position[row, col] = place % length
    values[row, col] = value
    return window, position, values


def index(
    loaded: LoadedModel,
    place: Place,
    sae: TopKSAE,
    ids: np.ndarray,
    top: int = 12,
    bands: int = 10,
    per_band: int = 3,
    seed: int = 0,
    batch: int = 8,
    progress: Callable[[float, str], None] | None = None,
    activations: np.ndarray | None = None,
) -> FeatureIndex:
    """Each feature's density, mean, peak, top contexts and band samples over windows ``ids`` (W, T)
    (``activations``: theirs at the place, when already read)."""
    if top < 1 or bands < 1 or per_band < 1:
        raise FeaturesError(f"top, bands and per_band must be at least 1 (got {top}, {bands}, {per_band}).")
    ids = check_windows(ids)
    if activations is not None and len(activations) != ids.shape[0] * (ids.shape[1] - 1):
        raise FeaturesError(
            f"{len(activations):,} activations do not fit {ids.shape[0]:,} windows of {ids.shape[1]}."
        )
    found = triplets(loaded, place, sae, ids, batch, progress, activations)
    return summarise(found, ids, sae.width, top, bands, per_band, seed)
