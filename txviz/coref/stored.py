"""Every head's pronoun-to-candidate attention over the shipped pairs, kept on disk per model and reading.

It does not depend on the visitor's input, so it is computed once (the Coreference page's first open
with that model) and read back after that: one .npz and one JSON file per
key (the weights' identity, the pairs, the reading, the format), written atomically. The root is
$TXVIZ_COREF_DIR, else a `coref` folder beside the Head Atlas's stored atlases. A disk that cannot be
written keeps nothing and logs why: the page computes again next time, it never fails for it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from txviz.coref.pairs import CorefPair
from txviz.coref.spans import PairAttention
from txviz.models import LoadedModel

log = logging.getLogger(__name__)

FORMAT = 1
ARRAYS, META = "attention.npz", "attention.json"


def root() -> Path:
    """$TXVIZ_COREF_DIR, else `coref` beside the atlas store's root (~/.cache/txviz/coref)."""
    from txviz.atlas import store

    found = os.environ.get("TXVIZ_COREF_DIR")
    return Path(found) if found else store.root().parent / "coref"


def pairs_hash(pairs: Sequence[CorefPair]) -> str:
    text = json.dumps(
        [
            [p.sentence_a, p.sentence_b, p.pronoun, list(p.candidates), p.answer_a, p.answer_b, p.kind]
            for p in pairs
        ]
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def key(loaded: LoadedModel, pairs: Sequence[CorefPair], query: str) -> str:
    from txviz.atlas.build import model_id

    text = json.dumps([model_id(loaded), pairs_hash(pairs), query])
    return f"{hashlib.sha256(text.encode()).hexdigest()[:24]}-f{FORMAT}"


def find(loaded: LoadedModel, pairs: Sequence[CorefPair], query: str) -> list[PairAttention] | None:
    """The stored attention of these pairs under this model and reading, or None when none is stored."""
    folder = root() / key(loaded, pairs, query)
    if not (folder / META).is_file():
        return None
    try:
        meta = json.loads((folder / META).read_text(encoding="utf-8"))
        with np.load(folder / ARRAYS, allow_pickle=False) as arrays:
            a, b = arrays["to_candidates_a"], arrays["to_candidates_b"]
    except (OSError, ValueError, KeyError):
        log.warning(
            "stored coreference attention in %s cannot be read: computing it again", folder, exc_info=True
        )
        return None
    if len(meta["pairs"]) != len(pairs) or len(a) != len(pairs):
        log.warning("stored coreference attention in %s does not match the pairs: computing it again", folder)
        return None
    return [
        PairAttention(a[i], b[i], tuple(m["candidates"]), m["answer_a"], m["answer_b"], tuple(m["hidden"]))
        for i, m in enumerate(meta["pairs"])
    ]


def save(
    loaded: LoadedModel, pairs: Sequence[CorefPair], query: str, attentions: Sequence[PairAttention]
) -> bool:
    """Keep the attention of these pairs on disk; False (logged) where the disk refuses."""
    folder = root() / key(loaded, pairs, query)
    meta = {
        "model": loaded.name,
        "query": query,
        "format": FORMAT,
        "pairs": [
            {
                "candidates": list(x.candidates),
                "answer_a": x.answer_a,
                "answer_b": x.answer_b,
                "hidden": list(x.hidden),
            }
            for x in attentions
        ],
    }
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".writing-", dir=folder.parent))
        np.savez(
            staging / ARRAYS,
            to_candidates_a=np.stack([x.to_candidates_a for x in attentions]),
            to_candidates_b=np.stack([x.to_candidates_b for x in attentions]),
        )
        (staging / META).write_text(json.dumps(meta), encoding="utf-8")
        try:
            staging.rename(folder)
        except OSError:  # another process stored the same key first: keep theirs
            for item in staging.iterdir():
                item.unlink()
            staging.rmdir()
            if not (folder / META).is_file():
                raise
    except OSError:
        log.warning(
            "coreference attention of %s cannot be stored under %s", loaded.name, folder, exc_info=True
        )
        return False
    return True
