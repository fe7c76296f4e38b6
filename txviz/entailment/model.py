"""Decomposable attention (Parikh et al. 2016) exactly as the book's equations 15.46-15.53 write it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from txviz.entailment.equations import numbered

LABELS = ("entailment", "neutral", "contradiction")
NEG = -1e9  # a padded position's score: exp underflows to exactly 0


def mlp(d_in: int, hidden: int, dropout: float = 0.0) -> nn.Sequential:
    """Two ReLU layers, as f, g and h are in the paper."""
    return nn.Sequential(
        nn.Dropout(dropout),
        nn.Linear(d_in, hidden),
        nn.ReLU(),
        nn.Dropout(dropout),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
    )


class DecomposableAttention(nn.Module):
    """Attend, compare, aggregate, classify; a and b are word vectors (B, m, d) and (B, n, d).

    The word vectors a_i, b_j are the embeddings times one learnt matrix (Parikh et al. project
    GloVe the same way): the input embeddings stay frozen, and a smaller d keeps training quick.
    """

    def __init__(self, d_embed: int, hidden: int = 64, dropout: float = 0.1, d_word: int = 64):
        super().__init__()
        self.project = nn.Linear(d_embed, d_word, bias=False)
        self.f = mlp(d_word, hidden, dropout)
        self.g = mlp(2 * d_word, hidden, dropout)
        self.h = nn.Sequential(mlp(2 * hidden, hidden, dropout), nn.Linear(hidden, len(LABELS)))

    @numbered
    def attend(self, a, b, mask_a, mask_b):
        """{e_ij} e_ij = f(a_i)^T f(b_j); {beta_i} beta_i and {alpha_j} alpha_j, with both softmax weights."""
        e = self.f(a) @ self.f(b).transpose(1, 2)  # (B, m, n)
        to_b = torch.softmax(e.masked_fill(~mask_b[:, None, :], NEG), dim=2)  # over j: rows sum to 1
        to_a = torch.softmax(e.masked_fill(~mask_a[:, :, None], NEG), dim=1)  # over i: columns sum to 1
        beta = to_b @ b  # (B, m, d): the part of b aligned with a_i
        alpha = to_a.transpose(1, 2) @ a  # (B, n, d): the part of a aligned with b_j
        return e, to_b, to_a, beta, alpha

    @numbered
    def compare(self, a, b, beta, alpha):
        """{v_A,i} v_A,i = g([a_i, beta_i]); {v_B,j} v_B,j = g([b_j, alpha_j])."""
        return self.g(torch.cat([a, beta], -1)), self.g(torch.cat([b, alpha], -1))

    @staticmethod
    @numbered
    def aggregate(v_a, v_b, mask_a, mask_b):
        """{v_A} v_A = sum_i v_A,i; {v_B} v_B = sum_j v_B,j (padding left out)."""
        return (v_a * mask_a[..., None]).sum(1), (v_b * mask_b[..., None]).sum(1)

    @numbered
    def classify(self, sum_a, sum_b):
        """{y} y = h([v_A, v_B]): three scores, softmax gives the class probabilities."""
        return self.h(torch.cat([sum_a, sum_b], -1))

    def forward(self, a, b, mask_a, mask_b):
        a, b = self.project(a), self.project(b)
        _, _, _, beta, alpha = self.attend(a, b, mask_a, mask_b)
        v_a, v_b = self.compare(a, b, beta, alpha)
        return self.classify(*self.aggregate(v_a, v_b, mask_a, mask_b))


class BagOfWords(nn.Module):
    """The baseline: the same g and h without attention, v_A = sum_i g(a_i), v_B = sum_j g(b_j)."""

    def __init__(self, d_embed: int, hidden: int = 64, dropout: float = 0.1, d_word: int = 64):
        super().__init__()
        self.project = nn.Linear(d_embed, d_word, bias=False)
        self.g = mlp(d_word, hidden, dropout)
        self.h = nn.Sequential(mlp(2 * hidden, hidden, dropout), nn.Linear(hidden, len(LABELS)))

    def forward(self, a, b, mask_a, mask_b):
        a, b = self.project(a), self.project(b)
        sum_a = (self.g(a) * mask_a[..., None]).sum(1)
        sum_b = (self.g(b) * mask_b[..., None]).sum(1)
        return self.h(torch.cat([sum_a, sum_b], -1))


@dataclass(frozen=True)
class Steps:
    """Every intermediate of one premise/hypothesis pair, as numpy."""

    premise: tuple[str, ...]
    hypothesis: tuple[str, ...]
    a: np.ndarray  # (m, d_word) projected word vectors
    b: np.ndarray  # (n, d_word)
    e: np.ndarray  # (m, n) alignment scores
    to_b: np.ndarray  # (m, n) softmax over j: row i weights b_j in beta_i
    to_a: np.ndarray  # (m, n) softmax over i: column j weights a_i in alpha_j
    v_a: np.ndarray  # (m, hidden)
    v_b: np.ndarray  # (n, hidden)
    sum_a: np.ndarray  # (hidden,)
    sum_b: np.ndarray
    probabilities: np.ndarray  # (3,)

    @property
    def label(self) -> str:
        return LABELS[int(self.probabilities.argmax())]


@torch.no_grad()
def run_steps(
    model: DecomposableAttention, a: torch.Tensor, b: torch.Tensor, premise: tuple, hypothesis: tuple
) -> Steps:
    """One pair through attend, compare, aggregate and classify, keeping each step's output."""
    model.eval()
    a, b = model.project(a[None]), model.project(b[None])
    mask_a, mask_b = torch.ones(a.shape[:2], dtype=torch.bool), torch.ones(b.shape[:2], dtype=torch.bool)
    e, to_b, to_a, beta, alpha = model.attend(a, b, mask_a, mask_b)
    v_a, v_b = model.compare(a, b, beta, alpha)
    sum_a, sum_b = model.aggregate(v_a, v_b, mask_a, mask_b)
    probabilities = torch.softmax(model.classify(sum_a, sum_b), -1)
    arrays = [t[0].numpy() for t in (a, b, e, to_b, to_a, v_a, v_b, sum_a, sum_b, probabilities)]
    return Steps(tuple(premise), tuple(hypothesis), *arrays)


@torch.no_grad()
def probabilities(model: nn.Module, a: torch.Tensor, b: torch.Tensor) -> np.ndarray:
    """(3,) class probabilities of either model for one pair of word-vector sequences."""
    model.eval()
    ones_a, ones_b = torch.ones(1, len(a), dtype=torch.bool), torch.ones(1, len(b), dtype=torch.bool)
    return torch.softmax(model(a[None], b[None], ones_a, ones_b), -1)[0].numpy()
