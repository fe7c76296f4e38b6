"""What the Head Atlas page asks of the atlas's corpora, builder and store, in one place."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from txviz.atlas import corpus as corpora
from txviz.atlas import store
from txviz.atlas.atlas import METRICS, Atlas, Metric, Settings
from txviz.core.capture import CaptureSettings
from txviz.core.running import run
from txviz.heads import corpus as head_corpus

Progress = Callable[[float, str], None]
EXAMPLES = "txviz examples"  # six sentences: an atlas in seconds, for a first look or a lecture step
SMALL_CORPUS_CHARS = 20_000  # a corpus this short builds in seconds: the atlas opens without a click
READ_CHARS = (SMALL_CORPUS_CHARS, 100_000, 500_000)  # a corpus's slices offered before "all"
QUICK_LAYER_CHARS = 6 * SMALL_CORPUS_CHARS  # MiniLM's 6 layers over the first slice: a build of seconds


def metrics() -> tuple[Metric, ...]:
    return METRICS


def examples() -> corpora.AtlasCorpus:
    """Head Detectors' example passages as a corpus."""
    return corpora.of_text(EXAMPLES, "\n\n".join(head_corpus.DEFAULT_TEXTS))


def shipped() -> dict[str, Callable[[], corpora.AtlasCorpus]]:
    """Corpus name -> a function reading that corpus: the installed corpora, then the examples."""
    return {**corpora.shipped(), EXAMPLES: examples}


def from_upload(name: str, data: bytes) -> corpora.AtlasCorpus:
    """An uploaded file as a corpus; a UserError on empty or binary data, a notice when cut."""
    return corpora.from_upload(name, data)


def stored(loaded, corpus: corpora.AtlasCorpus, settings: Settings) -> bool:
    """True when this atlas is on disk in this format: it opens without a build."""
    return (store.root() / store.key(loaded, corpus, settings) / store.META).exists()


def quick(loaded, corpus: corpora.AtlasCorpus) -> bool:
    """Whether this model's atlas over the corpus builds in seconds (characters times layers), so that a
    view may build it without a click; SmolLM2's 30 layers over the first slice take minutes on a busy CPU."""
    return len(corpus.text) * max(1, loaded.n_layers) <= QUICK_LAYER_CHARS


def open_or_build(
    loaded, corpus: corpora.AtlasCorpus, settings: Settings, progress: Progress | None = None
) -> tuple[Atlas, tuple[str, ...]]:
    """The stored atlas of this model, corpus and settings, or a new one built (and stored) now."""
    found, notices = store.open_or_build(loaded, corpus, settings, progress)
    return found, tuple(dict.fromkeys((*found.notices, *notices)))


def attention_row(loaded, ids: tuple[int, ...], layer: int, head: int, query: int) -> np.ndarray:
    """One query's attention over a stored window (K,), from one forward pass of the window's ids."""
    found = run(loaded.model, CaptureSettings(record={"weights"}),
                input_ids=torch.tensor([list(ids)], device=loaded.device))  # fmt: skip
    return found.stack("weights")[layer, head, query]


def positions_in(loaded, ids: list[int], text: str) -> Callable[[int], int | None]:
    """Where a stored window's positions fall in ``text`` (the window decoded without special tokens)
    tokenized as the other pages tokenize it: a function of the window's position, None for a special
    token ([CLS], an unknown token that decoding dropped) or for every position when the text does not
    tokenize back to the window's tokens."""
    special = set(loaded.tokenizer.all_special_ids)
    again = loaded.tokenizer(text)["input_ids"]
    found, j = {}, 0
    for position, token in enumerate(ids):
        if token in special:
            continue
        while j < len(again) and again[j] in special:
            j += 1
        if j >= len(again) or again[j] != token:
            return lambda position: None
        found[position], j = j, j + 1
    return found.get
