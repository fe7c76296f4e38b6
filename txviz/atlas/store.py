"""Atlases on disk: one folder per key (model and weights, corpus hash, settings, format), arrays in an
.npz and the rest in JSON, so opening one reads two small files and never unpickles anything.

The root is $TXVIZ_ATLAS_DIR or ~/.cache/txviz/atlas/. An atlas of another format is rebuilt with
a notice; a disk that is full or read-only keeps the new atlas in memory with a notice, never a crash.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from txviz.atlas import atlas as schema
from txviz.atlas.atlas import Atlas, Contexts, Settings
from txviz.atlas.corpus import AtlasCorpus
from txviz.models import LoadedModel

log = logging.getLogger(__name__)

ARRAYS, META = "atlas.npz", "atlas.json"
DEFAULT = Settings()
_FIELDS = [f.name for f in dataclasses.fields(Contexts) if f.name != "criterion"]


def root() -> Path:
    """Where atlases are kept: $TXVIZ_ATLAS_DIR, else ~/.cache/txviz/atlas/."""
    found = os.environ.get("TXVIZ_ATLAS_DIR")
    return Path(found) if found else Path.home() / ".cache" / "txviz" / "atlas"


def _stem(model_id: str, corpus_hash: str, settings: Settings) -> str:
    """The key without the format: the same atlas of any txviz version."""
    text = json.dumps([model_id, corpus_hash, dataclasses.asdict(settings)], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def key_of(model_id: str, corpus_hash: str, settings: Settings) -> str:
    return f"{_stem(model_id, corpus_hash, settings)}-f{schema.FORMAT}"


def key(loaded: LoadedModel, corpus: AtlasCorpus, settings: Settings = DEFAULT) -> str:
    """The folder name of this model's atlas over this corpus with these settings, in this format."""
    from txviz.atlas.build import model_id

    return key_of(model_id(loaded), corpus.hash, settings)


def save(atlas: Atlas) -> Path:
    """Write the atlas under its key (atomically: a half-written atlas is never found); its folder."""
    folder = root() / key_of(atlas.model_id, atlas.corpus_hash, atlas.settings)
    folder.parent.mkdir(parents=True, exist_ok=True)
    arrays = {"tokens": atlas.tokens, **{f"score.{n}": a for n, a in atlas.scores.items()}}
    for criterion, found in atlas.contexts.items():
        arrays.update({f"context.{criterion}.{f}": getattr(found, f) for f in _FIELDS})
    meta = {
        "model": atlas.model,
        "model_id": atlas.model_id,
        "corpus": atlas.corpus,
        "corpus_hash": atlas.corpus_hash,
        "settings": dataclasses.asdict(atlas.settings),
        "causal": atlas.causal,
        "layers": atlas.layers,
        "heads": atlas.heads,
        "scores": list(atlas.scores),
        "criteria": list(atlas.contexts),
        "notices": list(atlas.notices),
        "seconds": atlas.seconds,
        "format": atlas.format,
        "extra": atlas.extra,
    }
    staging = Path(tempfile.mkdtemp(prefix=".building-", dir=folder.parent))
    try:
        np.savez(staging / ARRAYS, **arrays)
        (staging / META).write_text(json.dumps(meta), encoding="utf-8")
        if folder.exists():
            shutil.rmtree(folder)
        staging.rename(folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def load(path: Path) -> Atlas:
    """The atlas stored in folder ``path`` (as ``save`` wrote it)."""
    path = Path(path)
    meta = json.loads((path / META).read_text(encoding="utf-8"))
    with np.load(path / ARRAYS, allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    contexts = {c: Contexts(c, *(arrays[f"context.{c}.{f}"] for f in _FIELDS)) for c in meta["criteria"]}
    return Atlas(
        model=meta["model"],
        model_id=meta["model_id"],
        corpus=meta["corpus"],
        corpus_hash=meta["corpus_hash"],
        settings=Settings(**meta["settings"]),
        causal=meta["causal"],
        layers=meta["layers"],
        heads=meta["heads"],
        tokens=arrays["tokens"],
        scores={n: arrays[f"score.{n}"] for n in meta["scores"]},
        contexts=contexts,
        notices=tuple(meta["notices"]),
        seconds=meta["seconds"],
        format=meta["format"],
        extra=meta["extra"],
    )


def _stale(folder: Path) -> list[Path]:
    """Stored atlases of the same model, corpus and settings in another format."""
    stem = folder.name.rsplit("-f", 1)[0]
    if not folder.parent.is_dir():
        return []
    return [p for p in folder.parent.glob(f"{stem}-f*") if p.name != folder.name and p.is_dir()]


def find(loaded: LoadedModel, corpus: AtlasCorpus, settings: Settings = DEFAULT) -> Atlas | None:
    """The stored atlas of this format when there is a readable one, else None (nothing is built)."""
    folder = root() / key(loaded, corpus, settings)
    try:
        found = load(folder) if (folder / META).exists() else None
    except (OSError, ValueError, KeyError, TypeError):
        # The page then offers to build it again; a damaged store is the operator's to know of.
        log.warning("the stored atlas %s cannot be read", folder, exc_info=True)
        return None
    return found if found is not None and found.format == schema.FORMAT else None


def open_or_build(
    loaded: LoadedModel,
    corpus: AtlasCorpus,
    settings: Settings = DEFAULT,
    progress: Callable[[float, str], None] | None = None,
) -> tuple[Atlas, tuple[str, ...]]:
    """The stored atlas when there is one of this format, else a new one built and stored; and notices."""
    from txviz.atlas.build import build

    folder = root() / key(loaded, corpus, settings)
    notices: list[str] = []
    if (folder / META).exists():
        try:
            found = load(folder)
            if found.format == schema.FORMAT:
                return found, ()
            notices.append(
                f"The stored atlas has format {found.format}; it was rebuilt in format {schema.FORMAT}."
            )
        except (OSError, ValueError, KeyError, TypeError) as error:
            log.warning("the stored atlas %s cannot be read; rebuilding it", folder, exc_info=True)
            notices.append(f"The stored atlas could not be read ({error}); it was rebuilt.")
    for old in _stale(folder):
        notices.append(f"An atlas stored by another txviz version ({old.name}) was rebuilt for this one.")
        shutil.rmtree(old, ignore_errors=True)
    atlas = build(loaded, corpus, settings, progress)
    try:
        save(atlas)
    except OSError as error:  # full, read-only, or no permission
        # The notice reaches one visitor; the fix (TXVIZ_ATLAS_DIR, disk space) is the operator's.
        log.warning("the atlas cannot be stored in %s: %s", folder.parent, error.strerror or error)
        notices.append(
            f"The atlas could not be stored in {folder.parent} ({error.strerror or error}); it is kept in "
            "memory for this session and will be built again next time. Set TXVIZ_ATLAS_DIR to a "
            "writable folder to keep it."
        )
    return atlas, tuple(dict.fromkeys(notices))
