"""Every head's pronoun-to-candidate attention over the shipped pairs, kept on disk per model and reading.

It does not depend on the visitor's input, so it is computed once (the Coreference page's first open
with that model) and read back after that (`txviz.core.stored`), keyed by the weights' identity, the
pairs, the reading and the format.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from txviz.core import stored
from txviz.coref.pairs import CorefPair
from txviz.coref.spans import PairAttention
from txviz.models import LoadedModel

log = logging.getLogger(__name__)

KIND = "coref"
FORMAT = 1


def key(loaded: LoadedModel, pairs: Sequence[CorefPair], query: str) -> str:
    from txviz.atlas.build import model_id

    described = [
        [p.sentence_a, p.sentence_b, p.pronoun, list(p.candidates), p.answer_a, p.answer_b, p.kind]
        for p in pairs
    ]
    return f"{stored.digest([model_id(loaded), described, query])}-f{FORMAT}"


def find(loaded: LoadedModel, pairs: Sequence[CorefPair], query: str) -> list[PairAttention] | None:
    """The stored attention of these pairs under this model and reading, or None when none is stored."""
    found = stored.read(KIND, key(loaded, pairs, query))
    if found is None:
        return None
    arrays, meta = found
    a, b = arrays.get("to_candidates_a"), arrays.get("to_candidates_b")
    if a is None or b is None or not (len(meta.get("pairs", ())) == len(a) == len(b) == len(pairs)):
        log.warning(
            "the stored coreference attention of %s does not match the pairs: computing it again", loaded.name
        )
        return None
    return [
        PairAttention(a[i], b[i], tuple(m["candidates"]), m["answer_a"], m["answer_b"], tuple(m["hidden"]))
        for i, m in enumerate(meta["pairs"])
    ]


def save(
    loaded: LoadedModel, pairs: Sequence[CorefPair], query: str, attentions: Sequence[PairAttention]
) -> bool:
    """Keep the attention of these pairs on disk; False (logged) where the disk refuses."""
    meta = {
        "model": loaded.name,
        "query": query,
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
    arrays = {
        "to_candidates_a": np.stack([x.to_candidates_a for x in attentions]),
        "to_candidates_b": np.stack([x.to_candidates_b for x in attentions]),
    }
    return stored.write(KIND, key(loaded, pairs, query), arrays, meta)
