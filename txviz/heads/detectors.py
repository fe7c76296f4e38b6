"""Head detectors: one score in [0, 1] per layer and head, from attention tensors [layer, head, q, k].

Each positional detector is a target mask T (q, k) and the query rows where it is defined. A head's
score is the attention mass it puts on the targets, averaged over those rows (TransformerLens'
"mul" head-detector score, restricted to the rows where the behaviour is possible), so a head that
does exactly the behaviour scores 1 and a uniform head over n keys scores 1/n.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from txviz.core import aggregate

LOCAL_WIDTH = 8  # "local": keys at most this many positions from the query


@dataclass(frozen=True)
class Detector:
    """A named behaviour, what text it is measured on, and a one-line description."""

    name: str  # the key in heads.npz
    label: str
    on: str  # "text": the corpus; "repeats": repeated random token sequences (Olsson et al. 2022)
    description: str


def offset_name(k: int) -> str:
    return f"offset_{'plus' if k > 0 else 'minus'}{abs(k)}"


def detectors(offset: int = 2) -> tuple[Detector, ...]:
    """Every detector, with the fixed offset +-``offset``."""
    return (
        Detector("previous_token", "previous token", "text", "attention from token i to i-1"),
        Detector(
            "first_token", "first token (sink)", "text", "attention to position 0 ([CLS] or the first token)"
        ),
        Detector(
            "sep",
            "[SEP] / end tokens",
            "text",
            "attention to special tokens after position 0 (Clark et al. 2019)",
        ),
        Detector("punctuation", "punctuation", "text", "attention to tokens made only of punctuation"),
        Detector(offset_name(-offset), f"offset -{offset}", "text", f"attention from token i to i-{offset}"),
        Detector(offset_name(offset), f"offset +{offset}", "text", f"attention from token i to i+{offset}"),
        Detector("broad", "broad (entropy)", "text", "row entropy divided by its maximum, log(visible keys)"),
        Detector(
            "duplicate_token", "duplicate token", "repeats", "attention to earlier copies of the same token"
        ),
        Detector(
            "induction", "induction", "repeats", "attention to the token after an earlier copy (i - L + 1)"
        ),
    )


def is_punctuation(token: str) -> bool:
    """A token made only of punctuation (markers such as Ġ and ## already removed)."""
    text = str(token).strip()
    return bool(text) and all(unicodedata.category(c).startswith("P") for c in text)


def _visible(n: int, causal: bool) -> np.ndarray:
    return np.tril(np.ones((n, n), dtype=bool)) if causal else np.ones((n, n), dtype=bool)


def offset_targets(n: int, k: int) -> np.ndarray:
    """T[i, i+k]: the key k positions after (k > 0) or before (k < 0) each query."""
    return np.eye(n, k=k, dtype=bool)


def key_targets(n: int, keys: np.ndarray) -> np.ndarray:
    """T[i, j] for every query i and every key j in the boolean mask ``keys``."""
    return np.broadcast_to(np.asarray(keys, dtype=bool)[None, :], (n, n)).copy()


def duplicate_targets(ids: Sequence) -> np.ndarray:
    """T[i, j] where token j < i is the same token as i (TransformerLens' duplicate-token pattern)."""
    same = np.asarray(ids, dtype=object)[:, None] == np.asarray(ids, dtype=object)[None, :]
    return np.tril(same, k=-1)


def induction_targets(ids: Sequence) -> np.ndarray:
    """T[i, j + 1] where token j < i is the same token as i: the token after its earlier copy."""
    dup = duplicate_targets(ids)
    out = np.zeros_like(dup)
    out[:, 1:] = dup[:, :-1]
    return out


def target_mass(weights: np.ndarray, targets: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, int]:
    """Sum over the given query rows of the attention on the targets ([layer, head]), and the row count."""
    if not rows.any():
        return np.zeros(weights.shape[:2]), 0
    w = weights[:, :, rows].astype(np.float64)
    total = w.sum(axis=-1)  # rows sum to 1, but may not after hiding tokens: divide per row
    on_target = (w * targets[rows]).sum(axis=-1)
    share = np.divide(on_target, total, out=np.zeros_like(on_target), where=total > 0)
    return share.sum(axis=-1), int(rows.sum())


def broad_mass(weights: np.ndarray, causal: bool) -> tuple[np.ndarray, int]:
    """Sum over rows with >= 2 visible keys of entropy / log(visible keys), and the row count."""
    n = weights.shape[-1]
    visible = _visible(n, causal).sum(axis=1)
    rows = visible >= 2
    if not rows.any():
        return np.zeros(weights.shape[:2]), 0
    w = weights[:, :, rows].astype(np.float64)
    entropy = -(w * np.log(np.clip(w, 1e-12, None))).sum(axis=-1)
    return (entropy / np.log(visible[rows])).sum(axis=-1), int(rows.sum())


def local_targets(n: int, width: int = LOCAL_WIDTH) -> np.ndarray:
    """T[i, j] for keys at most ``width`` positions from the query (the query itself included)."""
    apart = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])
    return apart <= width


def text_targets(
    tokens: Sequence[str],
    special: Sequence[bool],
    causal: bool,
    ids: Sequence | None = None,
    offset: int = 2,
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each target detector's (targets T [q, k], rows where it is measurable [q]) on one text.

    The one definition of every target behaviour: Head Detectors and the Head Atlas both score with it.
    """
    n = len(tokens)
    ids = list(tokens) if ids is None else list(ids)
    special = np.asarray(special if len(special) == n else [False] * n, dtype=bool)
    visible = _visible(n, causal)
    positions = np.arange(n)
    targets: dict[str, np.ndarray] = {
        "previous_token": offset_targets(n, -1),
        "first_token": key_targets(n, positions == 0),
        "sep": key_targets(n, special & (positions > 0)),
        "punctuation": key_targets(
            n, np.array([is_punctuation(t) and not s for t, s in zip(tokens, special, strict=True)])
        ),
        offset_name(-offset): offset_targets(n, -offset),
        offset_name(offset): offset_targets(n, offset),
        "duplicate_token": duplicate_targets(ids),
        "induction": induction_targets(ids),
        "local": local_targets(n),
    }
    out = {}
    for name, t in targets.items():
        rows = (t & visible).any(axis=1)  # the rows where the behaviour is possible
        if name == "first_token":
            rows &= positions > 0  # position 0 attending to itself is not a sink
        if name.startswith("offset_plus") and causal:
            rows[:] = False  # a causal head cannot see the future: not measurable, not zero
        out[name] = (t, rows)
    return out


def text_masses(
    weights: np.ndarray,
    tokens: Sequence[str],
    special: Sequence[bool],
    causal: bool,
    ids: Sequence | None = None,
    offset: int = 2,
    which: str = "text",
) -> dict[str, tuple[np.ndarray, int]]:
    """(sum of per-row scores [layer, head], row count) of each detector measured on ``which`` texts."""
    targets = text_targets(tokens, special, causal, ids, offset)
    out = {}
    for det in detectors(offset):
        if det.on != which:
            continue
        if det.name == "broad":
            out[det.name] = broad_mass(weights, causal)
            continue
        out[det.name] = target_mass(weights, *targets[det.name])
    return out


def mean_score(parts: Sequence[tuple[np.ndarray, int]], shape: tuple[int, int]) -> np.ndarray:
    """Pool (sum, count) pairs over texts into one score per head; NaN where no row qualified."""
    total = sum((p[0] for p in parts), np.zeros(shape))
    count = sum(p[1] for p in parts)
    return (
        np.clip(total / count, 0.0, 1.0) if count else np.full(shape, np.nan)
    )  # float32 rows sum to 1 +- eps


def head_entropy_distance(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean row entropy (nats) and mean attention distance (tokens), each [layer, head]."""
    return aggregate.head_entropy(weights), aggregate.mean_attention_distance(weights)
