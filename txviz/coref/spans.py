"""From words to token positions, and the attention a pronoun gives each candidate."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    pass
from txviz.coref.pairs import CorefInputError, CorefPair, Word, split_words


@dataclass(frozen=True)
class TokenSpans:
    """Token positions of the pronoun and of each candidate (all pieces of each word)."""

    pronoun: tuple[int, ...]
    candidates: tuple[tuple[int, ...], tuple[int, ...]]


def word_token_positions(offsets: Sequence[tuple[int, int]], word: Word) -> tuple[int, ...]:
    """Positions of every token whose characters overlap the word; special tokens have none."""
    return tuple(
        i for i, (start, end) in enumerate(offsets) if end > start and start < word.end and end > word.start
    )


def token_spans(
    text: str,
    offsets: Sequence[tuple[int, int]],
    pronoun: int,
    candidates: tuple[int, int],
) -> TokenSpans:
    """Map marked words (by index) to token positions using the tokenizer's character offsets."""
    words = split_words(text)

    def span(index: int) -> tuple[int, ...]:
        positions = word_token_positions(offsets, words[index])
        if not positions:
            raise CorefInputError(
                f"'{words[index].text}' has no tokens in the model input (was the text cut short?)."
            )
        return positions

    return TokenSpans(span(pronoun), (span(candidates[0]), span(candidates[1])))


def candidate_attention(weights: np.ndarray, spans: TokenSpans) -> np.ndarray:
    """Attention from the pronoun to each candidate: float [layer, head, 2].

    A candidate's share is the sum over its pieces (the mass it receives as a word), averaged over
    the pronoun's pieces (one query row per piece).
    """
    rows = weights[:, :, list(spans.pronoun), :]  # [L, H, pronoun pieces, K]
    shares = [rows[..., list(c)].sum(axis=-1).mean(axis=-1) for c in spans.candidates]
    return np.stack(shares, axis=-1)  # [L, H, 2]


def hidden_candidates(spans: TokenSpans, causal: bool) -> tuple[int, ...]:
    """Candidates (0, 1) a causal model's pronoun cannot see, because they come after it."""
    if not causal:
        return ()
    first_pronoun = min(spans.pronoun)
    return tuple(i for i, c in enumerate(spans.candidates) if min(c) > first_pronoun)


@dataclass(frozen=True, eq=False)
class PairAttention:
    """Pronoun-to-candidate attention of every head in sentence A and in sentence B."""

    to_candidates_a: np.ndarray  # float [layer, head, 2]
    to_candidates_b: np.ndarray  # float [layer, head, 2]
    candidates: tuple[str, str]
    answer_a: int | None = None
    answer_b: int | None = None
    hidden: tuple[int, ...] = ()  # candidates after the pronoun in a causal model

    @property
    def lean_a(self) -> np.ndarray:
        """[layer, head]: attention to the first candidate minus the second, in A."""
        return self.to_candidates_a[..., 0] - self.to_candidates_a[..., 1]

    @property
    def lean_b(self) -> np.ndarray:
        """[layer, head]: attention to the first candidate minus the second, in B."""
        return self.to_candidates_b[..., 0] - self.to_candidates_b[..., 1]

    @property
    def difference(self) -> np.ndarray:
        """[layer, head]: how much more a head leans to the first candidate in A than in B."""
        return self.lean_a - self.lean_b

    @property
    def sentences(self) -> tuple[tuple[str, np.ndarray, int | None], ...]:
        """("A", shares, answer) and ("B", shares, answer): the two sentences, for per-sentence loops."""
        return (("A", self.to_candidates_a, self.answer_a), ("B", self.to_candidates_b, self.answer_b))

    def head_pick(self, shares: np.ndarray, head: tuple[int, int]) -> int | None:
        """Which candidate (0 or 1) one head attends to more in one sentence; None for a tie."""
        pick = float(picks(shares)[head])
        return None if pick == 0.5 else int(pick)


def pair_attention(
    weights_a: np.ndarray,
    weights_b: np.ndarray,
    spans_a: TokenSpans,
    spans_b: TokenSpans,
    pair: CorefPair,
    causal: bool = False,
) -> PairAttention:
    """Pronoun-to-candidate attention for both sentences of a pair."""
    return PairAttention(
        to_candidates_a=candidate_attention(weights_a, spans_a),
        to_candidates_b=candidate_attention(weights_b, spans_b),
        candidates=pair.candidate_texts,
        answer_a=pair.answer_a,
        answer_b=pair.answer_b,
        hidden=hidden_candidates(spans_a, causal),
    )


def picks(to_candidates: np.ndarray) -> np.ndarray:
    """[layer, head]: the candidate a head attends to more (0 or 1), or 0.5 for a tie."""
    first, second = to_candidates[..., 0], to_candidates[..., 1]
    return np.where(np.isclose(first, second, rtol=0, atol=1e-7), 0.5, (second > first) * 1.0)
