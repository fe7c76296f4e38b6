"""Building a dictionary: a corpus cut into windows, activations at a place, a TopK SAE trained and stored.

The first windows give the training tokens, the last ones the held-out tokens the quality measures
read, so the two never share a token. A stored checkpoint of the same key resumes where it stopped;
a disk that is full or read-only keeps the dictionary in memory with a notice.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from txviz.atlas.build import model_id
from txviz.atlas.corpus import AtlasCorpus
from txviz.features import store
from txviz.features.activations import FeaturesError, Place, check_place, collect, token_windows
from txviz.features.sae import Progress, Settings, State, TopKSAE, steps_of, train

log = logging.getLogger(__name__)
DEFAULT = Settings()


@dataclass(frozen=True)
class Split:
    """Training and held-out windows of one corpus at one window length."""

    train: np.ndarray  # int64 (windows, T)
    held: np.ndarray


def minimum_tokens(settings: Settings) -> int:
    """The fewest corpus tokens a build accepts: two training batches and the held-out set."""
    return 2 * settings.batch + settings.held_out


def split(loaded, corpus: AtlasCorpus, settings: Settings) -> Split:
    """Training and held-out windows, or a refusal naming the minimum when the corpus is too small."""
    ids = token_windows(loaded, corpus, settings.window)
    per = ids.shape[1] - 1 if ids.size else max(1, settings.window - 1)  # position 0 is never used
    have, need = len(ids) * per, minimum_tokens(settings)
    if have < need:
        raise FeaturesError(
            f"{corpus.name} gives {have:,} usable tokens in windows of {settings.window}; a dictionary needs "
            f"at least {need:,} ({2 * settings.batch:,} to train on and {settings.held_out:,} held out). "
            "Use a longer text."
        )
    n_held = -(-settings.held_out // per)
    n_train = min(len(ids) - n_held, -(-settings.tokens // per))
    return Split(ids[:n_train], ids[len(ids) - n_held :])


@dataclass
class Dictionary:
    """A trained (or partly trained) dictionary with its key, its JSON and what happened on the way."""

    sae: TopKSAE
    meta: dict
    folder: Path
    notices: tuple[str, ...] = ()
    windows: np.ndarray | None = None  # a fresh build's training windows and their activations (not stored),
    activations: np.ndarray | None = None  # so the index needs no second pass over them

    @property
    def done(self) -> bool:
        return self.meta["step"] >= self.meta["total_steps"]


def build(
    loaded,
    corpus: AtlasCorpus,
    place: Place,
    settings: Settings = DEFAULT,
    progress: Progress | None = None,
    stop_after: int | None = None,
) -> Dictionary:
    """Train (or resume, or open) the dictionary of ``place`` over ``corpus``; ``stop_after`` steps at most."""
    check_place(loaded, place)
    weights = model_id(loaded)
    folder = store.root() / store.key_of(weights, corpus.hash, place.name, settings)
    state: State | None = None
    notices: list[str] = []
    if (folder / store.META).exists():
        state, meta = store.load(folder, weights)
        if meta["step"] >= meta["total_steps"]:
            return Dictionary(state.sae, meta, folder)
        notices.append(f"Resumed an interrupted build at step {meta['step']:,} of {meta['total_steps']:,}.")
    cut = split(loaded, corpus, settings)
    began = time.perf_counter()
    report = (lambda f, text: progress(0.5 * f, f"reading activations: {text}")) if progress else None
    data = collect(loaded, place, cut.train, progress=report)[: settings.tokens]
    meta = {
        "model": loaded.name,
        "model_id": weights,
        "corpus": corpus.name,
        "corpus_hash": corpus.hash,
        "place": place.name,
        "settings": settings.as_dict(),
        "total_steps": steps_of(len(data), settings),
        "tokens": len(data),
        "collect_seconds": time.perf_counter() - began,
    }
    kept = {"stored": True}

    def checkpoint(now: State, total: int) -> None:
        if not kept["stored"]:
            return
        try:
            store.save(folder, now, meta)
        except OSError as error:  # full, read-only, or no permission: train on, in memory
            log.warning("the dictionary cannot be stored in %s: %s", folder.parent, error.strerror or error)
            kept["stored"] = False
            notices.append(
                f"The dictionary could not be stored in {folder.parent} ({error.strerror or error}); it is kept "
                "in memory and an interruption cannot resume. Set TXVIZ_FEATURES_DIR to a writable folder."
            )

    on_train = (lambda f, text: progress(0.5 + 0.5 * f, f"training: {text}")) if progress else None
    state = train(data, settings, state, on_train, checkpoint, stop_after)
    final = {**meta, "step": state.step, "seconds": state.seconds, "k": state.sae.k, "scale": state.sae.scale}
    return Dictionary(state.sae, final, folder, tuple(notices), cut.train, data)
