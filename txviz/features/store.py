"""Dictionaries on disk, as the atlas keeps atlases: one folder per key, arrays in an .npz, the rest in JSON.

The key is the model id with its weights digest (``txviz.atlas.build.model_id``), the corpus's
sha256, the place and the settings. A checkpoint is written to a temporary folder and renamed over
the last one, so an interrupted build finds a whole checkpoint and resumes from its step. A
dictionary whose JSON names other weights is refused by digest, wherever it was found. The root is
$TXVIZ_FEATURES_DIR or ~/.cache/txviz/features/.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch

from txviz.features.activations import FeaturesError
from txviz.features.sae import PARAMS, Settings, State, TopKSAE

log = logging.getLogger(__name__)
ARRAYS, META = "dictionary.npz", "dictionary.json"
FORMAT = 1


def root() -> Path:
    """Where dictionaries are kept: $TXVIZ_FEATURES_DIR, else ~/.cache/txviz/features/."""
    found = os.environ.get("TXVIZ_FEATURES_DIR")
    return Path(found) if found else Path.home() / ".cache" / "txviz" / "features"


def key_of(model_id: str, corpus_hash: str, place: str, settings: Settings) -> str:
    """The folder name: a hash of model and weights, corpus, place and settings, then the format."""
    text = json.dumps([model_id, corpus_hash, place, settings.as_dict()], sort_keys=True)
    return f"{hashlib.sha256(text.encode()).hexdigest()[:24]}-f{FORMAT}"


def save(folder: Path, state: State, meta: dict) -> Path:
    """Write the checkpoint atomically (a temporary folder renamed over the old one); its folder."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        **meta,
        "step": state.step,
        "seconds": state.seconds,
        "last_loss": state.last_loss,
        "k": state.sae.k,
        "scale": state.sae.scale,
        "format": FORMAT,
    }
    staging = Path(tempfile.mkdtemp(prefix=".building-", dir=folder.parent))
    try:
        np.savez(staging / ARRAYS, **state.arrays())
        (staging / META).write_text(json.dumps(meta), encoding="utf-8")
        old = folder.with_name(f".old-{folder.name}-{os.getpid()}")
        if folder.exists():
            folder.rename(old)  # a rename, not a delete: a crash here still leaves a whole folder
        staging.rename(folder)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def load(folder: Path, model_id: str | None = None) -> tuple[State, dict]:
    """The checkpoint in ``folder`` and its JSON; refused when built for weights other than ``model_id``."""
    folder = Path(folder)
    meta = json.loads((folder / META).read_text(encoding="utf-8"))
    if meta.get("format") != FORMAT:
        raise FeaturesError(
            f"The dictionary in {folder} has format {meta.get('format')}; this txviz reads {FORMAT}."
        )
    if model_id is not None and meta.get("model_id") != model_id:
        theirs, ours = str(meta.get("model_id")), model_id
        raise FeaturesError(
            f"This dictionary was built for other weights ({theirs.rsplit('@', 1)[-1]}, not "
            f"{ours.rsplit('@', 1)[-1]}): its features would not mean anything for this model. Build one for it."
        )
    with np.load(folder / ARRAYS, allow_pickle=False) as data:
        arrays = {name: torch.from_numpy(data[name].copy()) for name in data.files}
    sae = TopKSAE({n: arrays[n] for n in PARAMS}, int(meta["k"]), float(meta["scale"]))
    moments = {n: arrays[n] for n in arrays if n[:2] in ("m.", "v.")}
    state = State(
        sae, moments, arrays["since_fired"], int(meta["step"]), float(meta["seconds"]), meta["last_loss"]
    )
    return state, meta


def finished(folder: Path) -> dict | None:
    """The JSON of the finished dictionary in ``folder`` (of this format), or None."""
    try:
        meta = json.loads((Path(folder) / META).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:  # a folder being written, or not ours: skipped, said
        log.warning("skipped %s: %s", folder, error)
        return None
    done = meta.get("format") == FORMAT and meta.get("step", 0) >= meta.get("total_steps", 1)
    return meta if done else None


def find(model_id: str, place: str | None = None) -> list[tuple[Path, dict]]:
    """Finished dictionaries of these weights (at ``place`` when given), newest first: (folder, JSON)."""
    base = root()
    if not base.is_dir():
        return []
    found = []
    for meta_file in base.glob(f"*/{META}"):
        meta = finished(meta_file.parent)
        if meta and meta.get("model_id") == model_id and place in (None, meta.get("place")):
            found.append((meta_file.parent, meta))
    return sorted(found, key=lambda pair: pair[0].stat().st_mtime, reverse=True)
