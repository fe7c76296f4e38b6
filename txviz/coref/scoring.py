"""Scoring heads on minimal pairs: credit per sentence, splits, coin-flip bands."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    pass
from txviz.coref.pairs import CHANCE, CorefInputError
from txviz.coref.spans import PairAttention, picks


def sentence_credit(to_candidates: np.ndarray, answer: int) -> np.ndarray:
    """[layer, head]: 1 if a head attends more to the right candidate, 0 if less, 0.5 if tied."""
    pick = picks(to_candidates)
    return np.where(pick == 0.5, 0.5, (pick == answer) * 1.0)


def pair_credit(pa: PairAttention) -> np.ndarray:
    """[layer, head]: a head's mean credit over the two sentences of a pair."""
    if pa.answer_a is None or pa.answer_b is None:
        raise CorefInputError("Scoring heads needs the right answer for both sentences.")
    return (
        sentence_credit(pa.to_candidates_a, pa.answer_a) + sentence_credit(pa.to_candidates_b, pa.answer_b)
    ) / 2


def pair_margin(pa: PairAttention) -> np.ndarray:
    """[layer, head]: attention to the right candidate minus the wrong one, mean over A and B."""
    sign_a = 1.0 if pa.answer_a == 0 else -1.0
    sign_b = 1.0 if pa.answer_b == 0 else -1.0
    return (sign_a * pa.lean_a + sign_b * pa.lean_b) / 2


def split_pairs(
    n_pairs: int, test_fraction: float = 0.3, seed: int = 0
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Seeded split of pair indices into (choosing, held-out test); both halves of a pair stay together."""
    if n_pairs < 2:
        raise CorefInputError("Scoring heads needs at least two pairs: one to choose, one to test.")
    n_test = min(max(1, round(n_pairs * test_fraction)), n_pairs - 1)
    order = np.random.default_rng(seed).permutation(n_pairs)
    return tuple(sorted(int(i) for i in order[n_test:])), tuple(sorted(int(i) for i in order[:n_test]))


def coin_flip_band(n_sentences: int, level: float = 0.95) -> tuple[float, float]:
    """Accuracy range a coin flip reaches with probability `level` on n sentences (binomial)."""
    pmf = [math.comb(n_sentences, k) / 2**n_sentences for k in range(n_sentences + 1)]
    cdf = np.cumsum(pmf)
    tail = (1 - level) / 2
    low = int(np.searchsorted(cdf, tail))
    high = int(np.searchsorted(cdf, 1 - tail))
    return low / n_sentences, high / n_sentences


@dataclass(frozen=True, eq=False)
class HeadScores:
    """How often each head attends more to the right candidate, chosen on one split, tested on another."""

    choose_pairs: tuple[int, ...]
    test_pairs: tuple[int, ...]
    choose_accuracy: np.ndarray  # float [layer, head], on the choosing pairs
    test_accuracy: np.ndarray  # float [layer, head], on the held-out pairs
    choose_margin: np.ndarray  # float [layer, head]: mean right-minus-wrong attention, choosing
    best_head: tuple[int, int]  # chosen on the choosing pairs only
    chance: float = CHANCE

    @property
    def best_test_accuracy(self) -> float:
        """Held-out accuracy of the head chosen on the choosing pairs."""
        return float(self.test_accuracy[self.best_head])

    @property
    def n_test_sentences(self) -> int:
        return 2 * len(self.test_pairs)

    @property
    def coin_flip_band(self) -> tuple[float, float]:
        """95% range of a coin flip's accuracy on the held-out sentences."""
        return coin_flip_band(self.n_test_sentences)

    def ranked_heads(self, top: int = 15) -> list[tuple[int, int]]:
        """Heads by choosing accuracy, ties broken by margin, best first."""
        order = np.lexsort((-self.choose_margin.ravel(), -self.choose_accuracy.ravel()))
        n_heads = self.choose_accuracy.shape[1]
        return [(int(i) // n_heads, int(i) % n_heads) for i in order[:top]]


def score_heads(
    pair_attentions: Sequence[PairAttention], test_fraction: float = 0.3, seed: int = 0
) -> HeadScores:
    """Score every head on a seeded choosing split and report it on the held-out split."""
    choose, test = split_pairs(len(pair_attentions), test_fraction, seed)
    credit = np.stack([pair_credit(pa) for pa in pair_attentions])  # [pair, L, H]
    margin = np.stack([pair_margin(pa) for pa in pair_attentions])  # [pair, L, H]
    choose_accuracy = credit[list(choose)].mean(axis=0)
    choose_margin = margin[list(choose)].mean(axis=0)
    # Best = highest choosing accuracy; ties (common) go to the head with the larger margin.
    order = np.lexsort((-choose_margin.ravel(), -choose_accuracy.ravel()))
    best = np.unravel_index(int(order[0]), choose_accuracy.shape)
    return HeadScores(
        choose_pairs=choose,
        test_pairs=test,
        choose_accuracy=choose_accuracy,
        test_accuracy=credit[list(test)].mean(axis=0),
        choose_margin=choose_margin,
        best_head=(int(best[0]), int(best[1])),
    )
