"""The same alignment e_ij = a_i^T b_j from a pretrained encoder's contextual word vectors (no training)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from txviz.core.errors import require_kind
from txviz.core.running import run


@dataclass(frozen=True)
class Alignment:
    """Scores e (m, n) and both softmax directions, as numpy."""

    e: np.ndarray
    to_b: np.ndarray  # softmax over j (each premise word's row sums to 1)
    to_a: np.ndarray  # softmax over i (each hypothesis word's column sums to 1)


def word_vectors(loaded, words: tuple[str, ...]) -> torch.Tensor:
    """(len(words), d): the last layer's token vectors, averaged over each word's pieces."""
    require_kind(loaded, ("encoder",), "give contextual word vectors")
    enc = loaded.tokenizer(list(words), is_split_into_words=True, return_tensors="pt", truncation=True)
    hidden = run(loaded.model, outputs=("hidden_states",), **enc.to(loaded.device)).hidden_states[-1]
    hidden = hidden[0].float().cpu()
    ids = enc.word_ids(0)
    out = torch.zeros(len(words), hidden.shape[-1])
    for w in range(len(words)):
        rows = [t for t, i in enumerate(ids) if i == w]
        out[w] = hidden[rows].mean(0) if rows else 0.0  # a word cut by the tokenizer's limit stays 0
    return out


TEMPERATURE = 0.1  # cosines lie in [-1, 1]; dividing by 0.1 lets the softmax pick a word


def fixed_f(x: torch.Tensor) -> torch.Tensor:
    """f(x) = x / (|x| sqrt(T)): e_ij becomes the cosine of a_i and b_j over T.

    Raw dot products of MiniLM's vectors are dominated by their lengths (every word aligns to the
    longest vector); the cosine compares directions only.
    """
    return torch.nn.functional.normalize(x, dim=-1) / TEMPERATURE**0.5


def alignment(loaded, premise: tuple[str, ...], hypothesis: tuple[str, ...]) -> Alignment:
    """Equations 15.46-15.48 with a fixed f and a_i, b_j read from the encoder, each sentence alone."""
    require_kind(loaded, ("encoder",), "align two sentences with contextual word vectors")
    a, b = word_vectors(loaded, premise), word_vectors(loaded, hypothesis)
    e = fixed_f(a) @ fixed_f(b).T
    return Alignment(e.numpy(), torch.softmax(e, 1).numpy(), torch.softmax(e, 0).numpy())
