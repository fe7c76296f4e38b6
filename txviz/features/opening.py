"""What the Features page opens: the places of a model, the memory a build needs, a dictionary and its index.

``open_or_build`` opens a stored dictionary, resumes an interrupted one or trains it, then indexes what
each feature does over the first training windows, from the activations the training just read (kept
beside the dictionary, so a link to a feature opens at once the next time).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from txviz.atlas.build import model_id
from txviz.atlas.corpus import AtlasCorpus
from txviz.features import build, store
from txviz.features.activations import KINDS, FeaturesError, Place, check_place
from txviz.features.index import FeatureIndex, index
from txviz.features.sae import Settings, TopKSAE

log = logging.getLogger(__name__)
INDEX_TOKENS = 16_384  # the tokens a feature page draws its contexts from: the first training windows
BUDGETS = (16_384, 65_536, 262_144, 1_048_576)  # training tokens offered, 1M the benchmark's budget
MEMORY_SHARE = 0.8  # of the memory free now: what a build may plan to use
SHOWN_DENSITY = (
    0.005  # the feature a page opens on fires on about 1 token in 200: specific, yet with contexts
)


def places(loaded) -> list[str]:
    """Every place the map can name on this decoder: each block's input stream, then its heads' output."""
    found = []
    for layer in range(loaded.n_layers):
        for kind in KINDS:
            try:
                check_place(loaded, Place(kind, layer))
            except FeaturesError:
                continue
            found.append(Place(kind, layer).name)
    return found


def place_label(name: str) -> str:
    """A place's name in words ('block 15's input stream')."""
    place = Place.parse(name)
    if place.kind == "resid_pre":
        return f"block {place.layer}'s input (the residual stream)"
    return f"block {place.layer}'s heads, concatenated before the output projection"


def default_place(loaded) -> str:
    """The stream entering the middle block, where the benchmark measures."""
    return Place("resid_pre", loaded.n_layers // 2).name


@dataclass(frozen=True)
class Memory:
    """What a build would hold at once besides the model, against the memory free now (bytes)."""

    needed: int
    available: int | None

    @property
    def fits(self) -> bool:
        return self.available is None or self.needed <= MEMORY_SHARE * self.available

    def __str__(self) -> str:
        free = "unknown" if self.available is None else f"{self.available / 2**30:.1f} GB"
        return f"about {_size(self.needed)} of memory (free now: {free})"


def _size(n: float) -> str:
    return f"{n / 2**30:.1f} GB" if n >= 2**30 else f"{max(n, 2**20) / 2**20:.0f} MB"


def available_memory() -> int | None:
    """MemAvailable from /proc/meminfo (Linux), None where it cannot be read."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError) as error:
        log.info("free memory unknown: %s", error)
    return None


def memory(loaded, place: Place, settings: Settings) -> Memory:
    """The estimate said before a build starts: activations, the dictionary with Adam's two moments, a batch."""
    d = check_place(loaded, place)
    width = settings.expansion * d
    activations = (settings.tokens + settings.held_out) * d * 4
    dictionary = 3 * (2 * d * width + width + d) * 4  # weights, Adam's m and v
    batch = 8 * settings.batch * width * 4  # pre-activations, latents, their gradients and the AuxK pass
    return Memory(activations + dictionary + batch, available_memory())


def check_memory(loaded, place: Place, settings: Settings) -> Memory:
    """The estimate, or a refusal saying it when the build would not fit in the memory free now."""
    found = memory(loaded, place, settings)
    if not found.fits:
        raise FeaturesError(
            f"This dictionary needs {found}: more than this machine can spare. Choose fewer training tokens "
            "or a narrower dictionary."
        )
    return found


@dataclass
class Opened:
    """A finished dictionary, what each feature does, and what happened on the way."""

    sae: TopKSAE
    meta: dict
    index: FeatureIndex
    place: Place
    notices: tuple[str, ...] = ()


def stored(loaded, corpus: AtlasCorpus, place: Place, settings: Settings) -> bool:
    """Whether a finished dictionary of this key is on disk (so the page opens it without asking)."""
    weights = model_id(loaded)
    meta = store.finished(store.root() / store.key_of(weights, corpus.hash, place.name, settings))
    return meta is not None and meta.get("model_id") == weights


def _indexed(loaded, corpus: AtlasCorpus, place: Place, made: build.Dictionary, settings: Settings, progress):
    """The stored index, or one made over the first training windows (their activations already read when the
    dictionary was just trained) and stored beside the dictionary."""
    try:
        return FeatureIndex.load(made.folder), ""
    except FeaturesError:
        pass  # not made yet (or by an older txviz): made now
    windows, activations = made.windows, made.activations
    if windows is None or activations is None:  # opened or resumed: read the windows again
        windows, activations = build.split(loaded, corpus, settings).train, None
    per = windows.shape[1] - 1
    n = max(1, min(INDEX_TOKENS, settings.tokens, len(windows) * per) // per)
    if activations is not None:
        n = min(n, len(activations) // per)
        activations = activations[: n * per]
    report = (lambda f, text: progress(f, f"indexing the features: {text}")) if progress else None
    found = index(loaded, place, made.sae, windows[:n], progress=report, activations=activations)
    try:
        found.save(made.folder)
    except OSError as error:
        log.warning("the feature index cannot be stored in %s: %s", made.folder, error)
        return (
            found,
            f"The features' index could not be stored ({error.strerror or error}); it is kept in memory.",
        )
    return found, ""


def open_or_build(loaded, corpus: AtlasCorpus, place: Place, settings: Settings, progress=None) -> Opened:
    """The dictionary of ``place`` over ``corpus`` (opened, resumed or trained) and its index."""
    check_memory(loaded, place, settings)
    train = (lambda f, text: progress(0.85 * f, text)) if progress else None
    made = build.build(loaded, corpus, place, settings, train)
    rest = (lambda f, text: progress(0.85 + 0.15 * f, text)) if progress else None
    found, notice = _indexed(loaded, corpus, place, made, settings, rest)
    notices = (*made.notices, notice) if notice else made.notices
    return Opened(made.sae, made.meta, found, place, notices)


def open_stored(loaded, folder: Path) -> Opened:
    """A finished dictionary from its folder, refused when built for other weights; indexed now when it was
    trained without its index (by ``build`` alone) over a corpus still at hand."""
    state, meta = store.load(folder, model_id(loaded))
    place = Place.parse(meta["place"])
    try:
        return Opened(state.sae, meta, FeatureIndex.load(folder), place)
    except FeaturesError:
        corpus = _corpus_of(meta)
    made = build.Dictionary(state.sae, meta, Path(folder))
    found, notice = _indexed(loaded, corpus, place, made, Settings(**meta["settings"]), None)
    return Opened(state.sae, meta, found, place, (notice,) if notice else ())


def _corpus_of(meta: dict) -> AtlasCorpus:
    """The shipped corpus a dictionary was trained on (its hash checked), or why it cannot be read again."""
    from txviz.atlas import opening as atlas_opening  # the corpora the Head Atlas offers, by name

    reader = atlas_opening.shipped().get(meta.get("corpus", ""))
    corpus = reader() if reader else None
    if corpus is None or corpus.hash != meta.get("corpus_hash"):
        raise FeaturesError(
            f"This dictionary has no index of its features, and its corpus ({meta.get('corpus', 'unknown')}) is "
            "not at hand to make one: train it again from the Features page."
        )
    return corpus


def first_feature(found: FeatureIndex) -> int:
    """The feature a page opens on: of those firing on at least ten indexed tokens, the one whose density is
    nearest 1 in 200 (the densest are often the dictionary's bias at work, the rarest have few contexts)."""
    counts = found.density * found.tokens
    candidates = np.flatnonzero(counts >= 10)
    if not candidates.size:
        candidates = np.flatnonzero(counts > 0)
    if not candidates.size:
        return 0
    distance = np.abs(np.log(found.density[candidates] / SHOWN_DENSITY))
    return int(candidates[np.argmin(distance)])
