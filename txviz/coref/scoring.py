"""Scoring heads on minimal pairs: credit per sentence, k-fold cross-validation, coin-flip bands."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from txviz.coref.pairs import CHANCE, CorefInputError, CorefPair, pairs_of_kind
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


def coin_flip_band(n_sentences: int, level: float = 0.95) -> tuple[float, float]:
    """Accuracy range a coin flip reaches with probability `level` on n sentences (binomial).

    The ends are the binomial's (1 - level) / 2 and (1 + level) / 2 quantiles: the fewest right
    answers whose cumulative probability reaches each tail."""
    from scipy.stats import binom  # imported on use, like all of scipy and scikit-learn here: slow to import

    low, high = binom.interval(level, n_sentences, 0.5)
    return float(low) / n_sentences, float(high) / n_sentences


def assign_folds(n_pairs: int, k: int = 5, seed: int = 0) -> tuple[tuple[int, ...], ...]:
    """Seeded k folds of pair indices (scikit-learn's shuffled KFold), sizes within one.

    The unit is the pair, so both sentences of a pair are always held out together."""
    if n_pairs < 2:
        raise CorefInputError("Scoring heads needs at least two pairs: one to choose, one to test.")
    from sklearn.model_selection import KFold

    k = max(2, min(k, n_pairs))
    splits = KFold(n_splits=k, shuffle=True, random_state=seed).split(np.arange(n_pairs))
    return tuple(tuple(int(i) for i in held_out) for _, held_out in splits)


def choose_head(accuracy: np.ndarray, margin: np.ndarray) -> tuple[int, int]:
    """The head with the highest accuracy; ties (common) go to the larger right-minus-wrong margin."""
    order = np.lexsort((-margin.ravel(), -accuracy.ravel()))
    layer, head = np.unravel_index(int(order[0]), accuracy.shape)
    return int(layer), int(head)


@dataclass(frozen=True, eq=False)
class CrossValidation:
    """Heads chosen on k-1 folds of pairs and tested on the held-out fold, for every fold."""

    folds: tuple[tuple[int, ...], ...]  # pair indices held out in each fold
    fold_heads: tuple[tuple[int, int], ...]  # per fold: the head chosen on the other folds
    fold_accuracy: np.ndarray  # float [fold]: that head's accuracy on the held-out sentences
    accuracy: np.ndarray  # float [layer, head]: every head's accuracy on all pairs (in-sample)
    margin: np.ndarray  # float [layer, head]: mean right-minus-wrong attention on all pairs
    best_head: tuple[int, int]  # chosen on all pairs, the way each fold chooses
    seed: int = 0
    chance: float = CHANCE

    @property
    def k(self) -> int:
        return len(self.folds)

    @property
    def n_pairs(self) -> int:
        return sum(map(len, self.folds))

    @property
    def n_sentences(self) -> int:
        """Held-out sentences over all folds: every sentence is held out exactly once."""
        return 2 * self.n_pairs

    @property
    def held_out_accuracy(self) -> float:
        """Share of all sentences scored right by a head chosen without them (folds weighted by size)."""
        sizes = np.array([len(f) for f in self.folds], dtype=float)
        return float((self.fold_accuracy * sizes).sum() / sizes.sum())

    @property
    def mean_fold_accuracy(self) -> float:
        return float(self.fold_accuracy.mean())

    @property
    def fold_spread(self) -> float:
        """Standard deviation of the held-out accuracy over folds (sample, ddof=1)."""
        return float(self.fold_accuracy.std(ddof=1)) if self.k > 1 else 0.0

    @property
    def best_accuracy(self) -> float:
        """Accuracy on all pairs of the head chosen on all pairs: optimistic, it chose itself."""
        return float(self.accuracy[self.best_head])

    @property
    def choice_counts(self) -> tuple[tuple[tuple[int, int], int], ...]:
        """(head, number of folds that chose it), most often chosen first."""
        return tuple(Counter(self.fold_heads).most_common())

    @property
    def coin_flip_band(self) -> tuple[float, float]:
        """95% range of a coin flip's accuracy on all held-out sentences."""
        return coin_flip_band(self.n_sentences)

    @property
    def beats_chance(self) -> bool:
        """Held-out accuracy above the top of the coin-flip band."""
        return self.held_out_accuracy > self.coin_flip_band[1]

    @property
    def all_tied(self) -> bool:
        """Every head scores the same on every pair: the chosen head is only the first of a tie."""
        return bool(
            np.all(self.accuracy == self.accuracy.flat[0]) and np.all(self.margin == self.margin.flat[0])
        )

    def ranked_heads(self, top: int = 15) -> list[tuple[int, int]]:
        """Heads by accuracy on all pairs, ties broken by margin, best first."""
        order = np.lexsort((-self.margin.ravel(), -self.accuracy.ravel()))
        n_heads = self.accuracy.shape[1]
        return [(int(i) // n_heads, int(i) % n_heads) for i in order[:top]]


def credit_and_margin(pair_attentions: Sequence[PairAttention]) -> tuple[np.ndarray, np.ndarray]:
    """[pair, layer, head] credit and right-minus-wrong margin of every head on every pair."""
    if not pair_attentions:
        raise CorefInputError("Scoring heads needs at least two pairs: one to choose, one to test.")
    credit = np.stack([pair_credit(pa) for pa in pair_attentions])
    margin = np.stack([pair_margin(pa) for pa in pair_attentions])
    return credit, margin


def cross_validate(pair_attentions: Sequence[PairAttention], k: int = 5, seed: int = 0) -> CrossValidation:
    """Choose a head on k-1 folds of pairs, test it on the held-out fold, for each of k folds."""
    return _cross_validate(*credit_and_margin(pair_attentions), k, seed)


def _cross_validate(credit: np.ndarray, margin: np.ndarray, k: int, seed: int) -> CrossValidation:
    folds = assign_folds(len(credit), k, seed)
    heads, accuracy = [], []
    for held_out in folds:
        train = np.ones(len(credit), dtype=bool)
        train[list(held_out)] = False
        head = choose_head(credit[train].mean(axis=0), margin[train].mean(axis=0))
        heads.append(head)
        accuracy.append(float(credit[list(held_out)][:, head[0], head[1]].mean()))
    return CrossValidation(
        folds=folds,
        fold_heads=tuple(heads),
        fold_accuracy=np.array(accuracy),
        accuracy=credit.mean(axis=0),
        margin=margin.mean(axis=0),
        best_head=choose_head(credit.mean(axis=0), margin.mean(axis=0)),
        seed=seed,
    )


def cv_by_kind(
    pair_attentions: Sequence[PairAttention], pairs: Sequence[CorefPair], k: int = 5, seed: int = 0
) -> list[dict]:
    """One row per kind of pair (all kinds first): its cross-validated head choice, for a table."""
    rows = []
    for kind in [None, *dict.fromkeys(p.kind for p in pairs)]:
        chosen = pairs_of_kind(pairs, kind)
        if len(chosen) < 2:
            continue
        cv = cross_validate([pair_attentions[i] for i in chosen], k, seed)
        low, high = cv.coin_flip_band
        rows.append(
            {
                "kind": kind or "all kinds",
                "pairs": cv.n_pairs,
                "head chosen on all": "L{} H{}".format(*cv.best_head),
                "its accuracy (in-sample)": f"{cv.best_accuracy:.1%}",
                "cross-validated": f"{cv.held_out_accuracy:.1%} ± {cv.fold_spread:.1%}",
                "coin flip": f"{low:.0%} – {high:.0%}",
                "beats chance": "yes" if cv.beats_chance else "no",
            }
        )
    return rows


@dataclass(frozen=True)
class SeedStability:
    """The same cross-validation under several fold seeds."""

    seeds: tuple[int, ...]
    accuracies: tuple[float, ...]  # held-out accuracy per seed
    top_heads: tuple[tuple[int, int], ...]  # per seed: the head chosen in most folds

    @property
    def sentence(self) -> str:
        """One line for the page: how far the result moves when only the folds change."""
        low, high = min(self.accuracies), max(self.accuracies)
        head, times = Counter(self.top_heads).most_common(1)[0]
        return (
            f"Under {len(self.seeds)} fold seeds ({self.seeds[0]}–{self.seeds[-1]}) the held-out "
            f"accuracy ranges from {low:.1%} to {high:.1%}, and L{head[0]} H{head[1]} is the head "
            f"chosen most often in {times} of them."
        )


def seed_stability(
    pair_attentions: Sequence[PairAttention], k: int = 5, seeds: Sequence[int] = range(10)
) -> SeedStability:
    """Cross-validate under each fold seed: a result that moves with the seed is luck of the folds."""
    credit, margin = credit_and_margin(pair_attentions)
    runs = [_cross_validate(credit, margin, k, seed) for seed in seeds]
    return SeedStability(
        seeds=tuple(seeds),
        accuracies=tuple(cv.held_out_accuracy for cv in runs),
        top_heads=tuple(cv.choice_counts[0][0] for cv in runs),
    )
