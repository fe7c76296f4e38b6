"""Scoring every head of a model over a corpus and repeated random sequences."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from txviz.core.tracing import trace_text
from txviz.heads import corpus as corpora
from txviz.heads import detectors as det
from txviz.heads.corpus import Corpus, CorpusError
from txviz.models import LoadedModel

MAX_HEADS = 4096  # layers x heads past this are refused: traces and tables would not fit a page
Progress = Callable[[float, str], None]


@dataclass(frozen=True)
class RepeatSettings:
    """Repeated random sequences: how many, how long, from which seed."""

    n: int = 4
    length: int = 16
    seed: int = 0


@dataclass(frozen=True, eq=False)
class HeadScores:
    """Every detector's [layer, head] scores of one model, and where each head scored best."""

    model_name: str
    detectors: tuple[det.Detector, ...]
    scores: dict[str, np.ndarray]  # detector name -> [layer, head] in [0, 1], NaN if never measurable
    best_text: dict[str, np.ndarray]  # detector name -> [layer, head] index into texts (-1: none)
    texts: tuple[str, ...]  # corpus texts, then repeated sequences
    entropy: np.ndarray  # [layer, head] mean row entropy (nats) over the corpus texts
    distance: np.ndarray  # [layer, head] mean attention distance (tokens) over the corpus texts
    notice: str
    seconds: float

    @property
    def shape(self) -> tuple[int, int]:
        return self.entropy.shape


def check_size(loaded: LoadedModel) -> None:
    """Refuse clearly a model with more heads than a page can score and show."""
    heads = loaded.n_layers * loaded.n_heads
    if heads > MAX_HEADS:
        raise CorpusError(
            f"{loaded.name} has {loaded.n_layers} x {loaded.n_heads} = {heads:,} heads; the detectors "
            f"score at most {MAX_HEADS:,}. Use `python -m txviz trace` on single texts instead."
        )


def score_heads(
    loaded: LoadedModel,
    corpus: Corpus,
    repeats: RepeatSettings | None = RepeatSettings(),
    offset: int = 2,
    progress: Progress | None = None,
) -> HeadScores:
    """Trace every text (one forward pass each) and pool each detector's per-row scores over them."""
    check_size(loaded)
    start = time.perf_counter()
    sequences = corpora.repeated_sequences(loaded, repeats.n, repeats.length, repeats.seed) if repeats else ()
    jobs = [(t, "text") for t in corpus.texts] + [(t, "repeats") for t in sequences]
    names = [d.name for d in det.detectors(offset)]
    parts: dict[str, list[tuple[np.ndarray, int]]] = {n: [] for n in names}
    per_text: dict[str, list[np.ndarray]] = {n: [] for n in names}
    entropy, distance, notices, skipped = [], [], [], 0  # the corpus notice is the caller's to show
    shape = (loaded.n_layers, loaded.n_heads)
    for i, (text, which) in enumerate(jobs):
        if progress:
            progress(i / len(jobs), f"Text {i + 1} of {len(jobs)}")
        trace = trace_text(loaded, text, max_tokens=corpora.MAX_TOKENS)
        shape = trace.weights.shape[:2]
        if trace.weights.shape[-1] < 2:
            skipped += 1
        if trace.notice and which == "text":
            notices.append("Texts longer than 128 tokens are cut to their first 128.")
        masses = det.text_masses(
            trace.weights,
            trace.query_tokens,
            trace.special,
            trace.kind == "causal",
            ids=trace.raw_tokens or trace.query_tokens,
            offset=offset,
            which=which,
        )
        for name in names:
            mass = masses.get(name, (np.zeros(shape), 0))
            parts[name].append(mass)
            per_text[name].append(mass[0] / mass[1] if mass[1] else np.full(shape, -np.inf))
        if which == "text":
            e, d = det.head_entropy_distance(trace.weights)
            entropy.append(e)
            distance.append(d)
    if progress:
        progress(1.0, f"Scored {len(jobs)} texts")
    if skipped == len(jobs):
        raise CorpusError("Every text is a single token: heads need at least 2 tokens to score.")
    if skipped:
        notices.append(f"{skipped} text(s) of a single token cannot show any pattern and count for nothing.")
    scores = {n: det.mean_score(parts[n], shape) for n in names}
    best = {}
    for n in names:
        stack = np.stack(per_text[n])  # (texts, layer, head)
        best[n] = np.where(np.isfinite(stack).any(axis=0), stack.argmax(axis=0), -1)
    return HeadScores(
        model_name=loaded.name,
        detectors=det.detectors(offset),
        scores=scores,
        best_text=best,
        texts=tuple(t for t, _ in jobs),
        entropy=np.mean(entropy, axis=0) if entropy else np.full(shape, np.nan),
        distance=np.mean(distance, axis=0) if distance else np.full(shape, np.nan),
        notice=" ".join(dict.fromkeys(notices)),
        seconds=time.perf_counter() - start,
    )


def save_npz(scores: HeadScores, path) -> None:
    """One float array [layers, heads] per detector, plus entropy and distance."""
    arrays = {n: a.astype(np.float32) for n, a in scores.scores.items()}
    np.savez(path, **arrays, entropy=scores.entropy, distance=scores.distance)
