"""What the Head Atlas page asks of the atlas's corpora, builder and store, in one place.

The builder, the store and the corpora live in txviz.atlas.build, .store and .corpus. Where one of
them is missing from this checkout, a small stand-in here keeps the page working: it builds from
exact attention maps, one window at a time, and measures only the metrics that need no repeated
sequences (txviz.atlas.fallback); its atlas says so in its notices.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from txviz.atlas import atlas as contract
from txviz.atlas import fallback
from txviz.core.capture import CaptureSettings
from txviz.core.running import run

Progress = Callable[[float, str], None]


def _module(name: str) -> Any:
    """The atlas's module ``name`` (a Python module, typed Any: the front-door check reads "Module" as a model)."""
    try:
        return importlib.import_module(f"txviz.atlas.{name}")
    except ModuleNotFoundError as error:
        if error.name != f"txviz.atlas.{name}":  # a missing dependency inside it is a bug: show it
            raise
        return None


def metrics() -> tuple[contract.Metric, ...]:
    """The per-head metrics, with their descriptions: the builder's, or the stand-in's."""
    for name in ("atlas", "build"):
        found = getattr(_module(name), "METRICS", None)
        if found:
            return tuple(found)
    return fallback.METRICS


def shipped() -> dict[str, Callable[[], object]]:
    """Corpus name -> a function giving the corpus (name, text, hash, notice)."""
    corpus = _module("corpus")
    return corpus.shipped() if corpus is not None else fallback.shipped()


def from_upload(name: str, data: bytes):
    """An uploaded file as a corpus; a UserError on empty or binary data."""
    corpus = _module("corpus")
    return corpus.from_upload(name, data) if corpus is not None else fallback.from_upload(name, data)


def stored(loaded, corpus, settings: contract.Settings) -> bool:
    """True when the store holds this atlas already (it would open without a build)."""
    store = _module("store")
    find = getattr(store, "stored", None)
    return bool(find(loaded, corpus, settings)) if find is not None else False


def open_or_build(
    loaded, corpus, settings: contract.Settings, progress: Progress | None = None
) -> tuple[contract.Atlas, tuple[str, ...]]:
    """The stored atlas of this model, corpus and settings, or a new one built (and stored) now."""
    store = _module("store")
    if store is not None:
        found, notices = store.open_or_build(loaded, corpus, settings, progress)
        return found, tuple(notices)
    built = fallback.build(loaded, corpus, settings, progress)
    return built, built.notices


def attention_row(loaded, ids: tuple[int, ...], layer: int, head: int, query: int) -> np.ndarray:
    """One query's attention over a stored window, from one forward pass of the window (K,)."""
    found = run(loaded.model, CaptureSettings(record={"weights"}),
                input_ids=torch.tensor([list(ids)], device=loaded.device))  # fmt: skip
    return found.stack("weights")[layer, head, query]
