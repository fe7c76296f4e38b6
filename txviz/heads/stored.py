"""The heads' detector scores on the shipped texts, kept on disk per model and settings.

They do not depend on the visitor's input (the shipped passages, the repeated random sequences of a
seed), so they are computed once (the Head Detectors page's first open with that model, either tab)
and read back after that (`txviz.core.stored`), keyed by the weights' identity, the texts, the repeat
settings, the offset and the format. A visitor's own texts are never written to disk.
"""

from __future__ import annotations

import dataclasses
import logging

import numpy as np

from txviz.core import stored
from txviz.heads import corpus as corpora
from txviz.heads import detectors as det
from txviz.heads.corpus import Corpus
from txviz.heads.runs import HeadScores, RepeatSettings
from txviz.models import LoadedModel

log = logging.getLogger(__name__)

KIND = "head-scores"
FORMAT = 1


def shipped(texts: Corpus) -> bool:
    """Whether these are the shipped texts (the only ones stored)."""
    return tuple(texts.texts) == tuple(corpora.DEFAULT_TEXTS)


def key(loaded: LoadedModel, texts: Corpus, repeats: RepeatSettings | None, offset: int) -> str:
    from txviz.atlas.build import model_id

    settings = dataclasses.asdict(repeats) if repeats else None
    return f"{stored.digest([model_id(loaded), list(texts.texts), settings, offset])}-f{FORMAT}"


def find(
    loaded: LoadedModel, texts: Corpus, repeats: RepeatSettings | None, offset: int
) -> HeadScores | None:
    """The stored scores of the shipped texts, or None (other texts, or nothing stored yet)."""
    if not shipped(texts):
        return None
    found = stored.read(KIND, key(loaded, texts, repeats, offset))
    if found is None:
        return None
    arrays, meta = found
    detectors = det.detectors(offset)
    names = [d.name for d in detectors]
    if meta.get("detectors") != names or any(f"score_{n}" not in arrays for n in names):
        log.warning("the stored head scores of %s do not match the detectors: scoring again", loaded.name)
        return None
    return HeadScores(
        model_name=loaded.name,
        detectors=detectors,
        scores={n: arrays[f"score_{n}"] for n in names},
        best_text={n: arrays[f"best_{n}"] for n in names},
        texts=tuple(meta["texts"]),
        entropy=arrays["entropy"],
        distance=arrays["distance"],
        notice=meta["notice"],
        seconds=float(meta["seconds"]),
    )


def save(
    loaded: LoadedModel, texts: Corpus, repeats: RepeatSettings | None, offset: int, scores: HeadScores
) -> bool:
    """Keep the shipped texts' scores on disk (other texts are not kept); False where nothing was kept."""
    if not shipped(texts):
        return False
    names = [d.name for d in scores.detectors]
    arrays = {f"score_{n}": scores.scores[n] for n in names}
    arrays |= {f"best_{n}": scores.best_text[n] for n in names}
    arrays |= {"entropy": scores.entropy, "distance": scores.distance}
    meta = {
        "model": loaded.name,
        "detectors": names,
        "texts": list(scores.texts),
        "notice": scores.notice,
        "seconds": scores.seconds,
    }
    return stored.write(
        KIND, key(loaded, texts, repeats, offset), {k: np.asarray(v) for k, v in arrays.items()}, meta
    )
