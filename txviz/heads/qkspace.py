"""The query-key space of one head (AttentionViz, Yeh et al. 2023): queries and keys of every token
projected together into 2-D, after the key translation and norm balance that leave attention unchanged."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from txviz.core.errors import UserError
from txviz.core.trace import AttentionTrace
from txviz.core.tracing import trace_text
from txviz.models import LoadedModel

METHODS = ("PCA", "t-SNE")
MAX_POINTS = 4000  # queries + keys; t-SNE and the browser slow down past this
CONTEXT = 3  # tokens either side in the hover text


class ProjectionError(UserError):
    """The projection cannot be made; the message says why."""


def translate_keys(queries: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Keys moved by one vector so their centroid is the queries' centroid.

    q . (k + c) = q . k + q . c: every score of a query row moves by the same constant, which softmax
    ignores, so attention is unchanged while keys and queries now share one cloud."""
    return keys - keys.mean(axis=0) + queries.mean(axis=0)


def balance_norms(queries: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Queries times s and keys divided by s, with s making their mean norms equal: q . k unchanged."""
    q_norm = np.linalg.norm(queries, axis=1).mean()
    k_norm = np.linalg.norm(keys, axis=1).mean()
    if q_norm == 0 or k_norm == 0:
        return queries, keys
    s = np.sqrt(k_norm / q_norm)
    return queries * s, keys / s


def pca(vectors: np.ndarray) -> tuple[np.ndarray, float]:
    """2-D coordinates on the two directions of largest variance, and the share of variance kept.

    scikit-learn's exact (full SVD) PCA; points that do not vary at all sit at the origin with
    everything kept, and fewer than two dimensions are padded with zeros."""
    from sklearn.decomposition import PCA

    if not np.any(vectors != vectors[0]):  # one point, or all equal: no direction to find
        return np.zeros((len(vectors), 2)), 1.0
    model = PCA(n_components=min(2, *vectors.shape), svd_solver="full")
    coords = model.fit_transform(vectors)
    if coords.shape[1] < 2:
        coords = np.pad(coords, ((0, 0), (0, 2 - coords.shape[1])))
    return coords, float(model.explained_variance_ratio_.sum())


def tsne(vectors: np.ndarray, seed: int = 0) -> np.ndarray:
    """t-SNE (scikit-learn) from a PCA start, with a fixed seed, on one thread.

    On a busy machine its OpenMP threads spin against each other: 600 points took 75 s with the
    default threads and 9 s with one; below 200 points the exact method is faster still."""
    from sklearn.manifold import TSNE
    from threadpoolctl import threadpool_limits

    perplexity = float(min(30, max(2, (len(vectors) - 1) // 3)))
    method = "exact" if len(vectors) < 200 else "barnes_hut"
    with threadpool_limits(1):
        return TSNE(2, perplexity=perplexity, init="pca", random_state=seed, method=method).fit_transform(
            vectors
        )


@dataclass(frozen=True)
class QKPoints:
    """Queries then keys of one head over a set of texts, in 2-D, with what to label them."""

    coords: np.ndarray  # (2N, 2): the N queries first, then the N keys
    is_key: np.ndarray  # (2N,) bool
    tokens: tuple[str, ...]  # (2N,)
    positions: np.ndarray  # (2N,) position in its text
    text_index: np.ndarray  # (2N,)
    context: tuple[str, ...]  # (2N,) the token in context, e.g. "the cat [sat] on the"
    method: str
    variance_kept: float | None  # PCA only
    first: int = 0  # 1 when each text's first token was left out


def _context(tokens: Sequence[str], i: int) -> str:
    before = " ".join(tokens[max(0, i - CONTEXT) : i])
    after = " ".join(tokens[i + 1 : i + 1 + CONTEXT])
    return f"{before} [{tokens[i]}] {after}".strip()


def head_vectors(
    traces: Sequence[AttentionTrace], layer: int, head: int, skip_first: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Queries and keys (N, d_head) of one head, every token of every trace stacked (optionally without
    each text's first token, the attention sink whose outlying key squeezes the rest of the map)."""
    start = 1 if skip_first else 0
    q = np.concatenate([t.queries[layer, head, start:] for t in traces]).astype(np.float64)
    k = np.concatenate([t.keys[layer, head, start:] for t in traces]).astype(np.float64)
    return q, k


def project_head(
    traces: Sequence[AttentionTrace],
    layer: int,
    head: int,
    method: str = "PCA",
    translate: bool = True,
    skip_first: bool = False,
) -> QKPoints:
    """One head's queries and keys over the texts, translated and balanced, projected to 2-D."""
    if method not in METHODS:
        raise ProjectionError(f"Unknown projection '{method}'; choose from {', '.join(METHODS)}.")
    q, k = head_vectors(traces, layer, head, skip_first)
    if 2 * len(q) > MAX_POINTS:
        raise ProjectionError(
            f"{2 * len(q):,} points is more than {MAX_POINTS:,}: use fewer or shorter texts."
        )
    if translate:
        q, k = balance_norms(q, translate_keys(q, k))
    both = np.concatenate([q, k])
    kept = None
    if method == "t-SNE" and len(both) >= 8:
        coords = tsne(both)
    else:
        coords, kept = pca(both)
        method = "PCA"  # t-SNE needs more than a handful of points
    first = 1 if skip_first else 0
    tokens = [tok for t in traces for tok in t.query_tokens[first:]]
    context = [_context(t.query_tokens, i) for t in traces for i in range(first, len(t.query_tokens))]
    positions = np.concatenate([np.arange(first, len(t.query_tokens)) for t in traces])
    text_index = np.concatenate([np.full(len(t.query_tokens) - first, i) for i, t in enumerate(traces)])
    n = len(tokens)
    return QKPoints(
        coords=coords,
        is_key=np.arange(2 * n) >= n,
        tokens=tuple(tokens * 2),
        positions=np.concatenate([positions, positions]),
        text_index=np.concatenate([text_index, text_index]),
        context=tuple(context * 2),
        method=method,
        variance_kept=kept,
        first=first,
    )


def distance_agreement(points: QKPoints, traces: Sequence[AttentionTrace], layer: int, head: int) -> float:
    """Mean over queries (with >= 3 visible keys) of the Spearman correlation between closeness in 2-D
    (minus the distance from the query to each key of its text) and the head's attention weights."""
    from scipy.stats import spearmanr

    n = len(points.tokens) // 2
    qs, ks = points.coords[:n], points.coords[n:]
    values, start = [], 0
    for trace in traces:
        weights = trace.weights[layer, head, points.first :, points.first :]  # the tokens on the map
        length = len(weights)
        for i in range(length):
            visible = np.flatnonzero(np.arange(length) <= i) if trace.kind == "causal" else np.arange(length)
            if len(visible) < 3 or np.ptp(weights[i, visible]) == 0:
                continue
            closeness = -np.linalg.norm(ks[start + visible] - qs[start + i], axis=1)
            rho = spearmanr(closeness, weights[i, visible]).statistic
            if np.isfinite(rho):
                values.append(rho)
        start += length
    return float(np.mean(values)) if values else float("nan")


def trace_texts(loaded: LoadedModel, texts: Sequence[str], max_tokens: int = 128) -> list[AttentionTrace]:
    """Each text's weights, queries and keys (one forward pass each), through the one capture."""
    return [
        trace_text(loaded, t, max_tokens=max_tokens, record=("weights", "queries", "keys")) for t in texts
    ]
