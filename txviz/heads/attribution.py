"""Attention against attribution: per input token, last-layer attention, attention rollout, gradient x input
and integrated gradients (Captum) for one prediction, with their rank correlations.

A decoder explains its next-token prediction (the logit of its top token); an encoder explains the cosine
similarity of its mean-pooled sentence embedding to a second sentence (as sentence-transformers pools).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from txviz.core import aggregate
from txviz.core.errors import UserError, require_kind
from txviz.core.running import run
from txviz.core.tracing import encode, trace_text
from txviz.explain.gradients import (
    embed,
    gradient_x_input,
    integrated_gradients,
    per_token,
    reference_embeddings,
)
from txviz.models import LoadedModel

MEASURES = ("last-layer attention", "attention rollout", "gradient × input", "integrated gradients")
MAX_TOKENS = 64  # integrated gradients runs the model steps times over the text
IG_STEPS = 32  # this comparison's path steps (the step explanations default to fewer: explain.methods)


class AttributionError(UserError):
    """The comparison cannot be made; the message says why."""


@dataclass(frozen=True)
class TokenComparison:
    """Four per-token measures of one prediction, each normalised to sum 1, and their rank correlations."""

    tokens: tuple[str, ...]
    special: tuple[bool, ...]
    measures: dict[str, np.ndarray]  # name -> (T,) non-negative, sums to 1
    correlations: np.ndarray  # (4, 4) Spearman over the tokens compared
    compared: np.ndarray  # (T,) bool: tokens that enter the correlations
    target: str  # what is explained, in words
    ig_delta: float  # |sum of integrated gradients - change|: 0 for an exact path integral
    change: float  # forward(input) - forward(baseline), what integrated gradients splits over tokens
    seconds: float
    notice: str = ""


def _share(values: np.ndarray) -> np.ndarray:
    values = np.abs(np.asarray(values, dtype=np.float64))
    total = values.sum()
    return values / total if total > 0 else values


def spearman_matrix(measures: dict[str, np.ndarray], keep: np.ndarray) -> np.ndarray:
    """Spearman rank correlation between every pair of measures over the kept tokens."""
    from scipy.stats import spearmanr

    rows = np.stack([m[keep] for m in measures.values()])
    if keep.sum() < 3:
        raise AttributionError("Ranking needs at least 3 tokens to compare: use a longer text.")
    rho = spearmanr(rows, axis=1).statistic
    return np.atleast_2d(rho)


def _compare(loaded, text, forward, ids, rows_of, target, skip_special, start, steps) -> TokenComparison:
    trace = trace_text(loaded, text, max_tokens=MAX_TOKENS)
    special = np.asarray(trace.special, dtype=bool)
    if loaded.kind == "decoder":
        special[0] = True  # the attention sink: kept in the baseline, so it gets no attribution
    keep = ~special if skip_special and (~special).sum() >= 3 else np.ones_like(special)
    if keep.sum() < 3:
        raise AttributionError("Ranking needs at least 3 tokens to compare: use a longer text.")
    embeds = embed(loaded, ids)
    reference = reference_embeddings(embeds, special)
    last_layer = trace.weights[-1].mean(axis=0)  # (T, T) mean over heads
    rollout = aggregate.attention_rollout(trace.weights)[-1]
    with torch.enable_grad():
        gxi = per_token(gradient_x_input(forward, embeds))
        ig, delta = integrated_gradients(forward, embeds, reference, steps=steps)
    with torch.no_grad():
        change = float((forward(embeds) - forward(reference))[0])
    measures = dict(
        zip(MEASURES, map(_share, (rows_of(last_layer), rows_of(rollout), gxi, per_token(ig))), strict=True)
    )
    return TokenComparison(
        tokens=trace.query_tokens,
        special=tuple(special),
        measures=measures,
        correlations=spearman_matrix(measures, keep),
        compared=keep,
        target=target,
        ig_delta=delta,
        change=change,
        seconds=time.perf_counter() - start,
        notice=trace.notice,
    )


def explain_next_token(
    loaded: LoadedModel, text: str, skip_special: bool = True, steps: int = IG_STEPS
) -> TokenComparison:
    """A decoder's top next token after ``text``: attention from the last position against attributions."""
    require_kind(
        loaded, ("decoder",), "explain a next-token prediction (explain a sentence similarity instead)"
    )
    start = time.perf_counter()
    ids = encode(loaded, text, MAX_TOKENS).ids
    logits = run(loaded.model, outputs=("logits",), inputs_embeds=embed(loaded, ids)).logits[0, -1]
    target = int(logits.argmax())
    p = float(torch.softmax(logits.float(), -1)[target])

    def forward(e: torch.Tensor) -> torch.Tensor:
        # grad: the attribution methods differentiate this through the model
        return run(loaded.model, outputs=("logits",), grad=True, inputs_embeds=e).logits[:, -1, target]

    word = loaded.tokenizer.decode([target])
    return _compare(
        loaded,
        text,
        forward,
        ids,
        lambda m: m[-1],
        f"the next token {word!r} (p = {p:.2f}), its logit",
        skip_special,
        start,
        steps,
    )


def _pooled(loaded: LoadedModel, embeds: torch.Tensor) -> torch.Tensor:
    """Mean over tokens of the last hidden state (sentence-transformers' pooling)."""
    return run(loaded.model, outputs=("hidden",), grad=True, inputs_embeds=embeds).hidden.mean(dim=1)


def explain_similarity(
    loaded: LoadedModel, text: str, other: str, skip_special: bool = True, steps: int = IG_STEPS
) -> TokenComparison:
    """An encoder's cosine similarity between ``text`` and ``other``: attributed to the tokens of ``text``.

    Mean pooling reads every position, so attention is the attention each token receives, averaged over
    all query rows (and rollout likewise)."""
    require_kind(
        loaded, ("encoder",), "explain a sentence similarity (explain a next-token prediction instead)"
    )
    start = time.perf_counter()
    ids = encode(loaded, text, MAX_TOKENS).ids
    with torch.no_grad():
        reference = _pooled(loaded, embed(loaded, encode(loaded, other, MAX_TOKENS).ids))
        similarity = float(torch.cosine_similarity(_pooled(loaded, embed(loaded, ids)), reference)[0])

    def forward(e: torch.Tensor) -> torch.Tensor:
        return torch.cosine_similarity(_pooled(loaded, e), reference.expand(len(e), -1))

    return _compare(
        loaded,
        text,
        forward,
        ids,
        lambda m: m.mean(axis=0),
        f"the cosine similarity of the two sentences' embeddings ({similarity:.2f})",
        skip_special,
        start,
        steps,
    )
