"""The Attention Explorer's view of a trace: options applied, figures chosen."""

from __future__ import annotations

import dataclasses

import numpy as np

from txviz.core import aggregate
from txviz.core.trace import AttentionTrace, lock_arrays
from txviz.core.tracing import words_of
from txviz.models import LoadedModel

AGGREGATES = ("mean over heads", "max over heads", "attention rollout")
DEFAULT_HEAD = (3, 1)  # MiniLM's layer 3, head 1 sends "it" to "animal" in the default sentence
PRONOUNS = frozenset(
    {"it", "he", "she", "they", "him", "her", "them", "his", "its", "their", "hers", "theirs"}
    | {"we", "us", "our", "you", "your", "i", "me", "my"}
)


def view(
    loaded: LoadedModel, text: str, trace: AttentionTrace, hide_special: bool, whole_words: bool
) -> AttentionTrace:
    """The trace as the options ask: sub-words merged into words, special tokens hidden."""
    if whole_words:
        groups = words_of(loaded, text)[: len(trace.query_tokens)]
        trace = aggregate.merge_words(trace, groups, aggregate.word_texts(trace.query_tokens, groups))
    if hide_special:
        trace = aggregate.hide_special(trace)
    return trace


def aggregated(trace: AttentionTrace, how: str) -> np.ndarray:
    """[layer, Q, K] by the chosen aggregate."""
    if how == "mean over heads":
        return aggregate.head_mean(trace.weights)
    if how == "max over heads":
        return aggregate.head_max(trace.weights)
    if how == "attention rollout":
        return aggregate.attention_rollout(trace.weights)
    raise ValueError(f"Unknown aggregate '{how}'; choose from {', '.join(AGGREGATES)}.")


def focus_across_layers(trace: AttentionTrace, token: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean over heads of what ``token`` attends to and what attends to it: two [layer, T] arrays."""
    mean = aggregate.head_mean(trace.weights)  # (L, Q, K)
    return mean[:, token, :], mean[:, :, token]


def focus_default(tokens: list[str]) -> int:
    """Where Token focus starts: the first pronoun of the text, else the first token after [CLS]."""
    for index, token in enumerate(tokens):
        if token.strip().lower() in PRONOUNS:
            return index
    return min(1, len(tokens) - 1)


def read_only(trace: AttentionTrace) -> AttentionTrace:
    """The same trace with arrays locked, because cached traces are shared by every session."""
    return dataclasses.replace(lock_arrays(trace))


def entropy(trace: AttentionTrace) -> np.ndarray:
    """[layer, head] mean row entropy: low is focused, high is spread out."""
    return aggregate.head_entropy(trace.weights)


def distance(trace: AttentionTrace) -> np.ndarray:
    """[layer, head] expected distance in tokens between a query and what it attends to."""
    return aggregate.mean_attention_distance(trace.weights)
