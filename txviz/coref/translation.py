"""The book's il/elle example (probml 15.5.1): what a French translation of the animal/street pair needs.

No translation model ships with txviz: the French sentences are written here by hand. What a
model's attention can show is the English half of the problem: whether a head links "it" to the
animal when the animal is tired and to the street when the street is wide. A translator needs
that link, because French pronouns agree with their noun's gender.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import binomtest

from txviz.coref.pairs import CorefPair, load_pairs
from txviz.coref.spans import PairAttention

SENTENCE_A = "The animal didn't cross the street because it was too tired."
SENTENCE_B = "The animal didn't cross the street because it was too wide."


@dataclass(frozen=True)
class French:
    """A candidate's French noun, its gender, and the pronoun that refers back to it."""

    noun: str
    gender: str
    pronoun: str


FRENCH = {
    "animal": French("l'animal", "masculine", "il"),
    "street": French("la rue", "feminine", "elle"),
}
TRANSLATIONS = {  # by hand, for reading only
    SENTENCE_A: "L'animal n'a pas traversé la rue parce qu'il était trop fatigué.",
    SENTENCE_B: "L'animal n'a pas traversé la rue parce qu'elle était trop large.",
}


def book_pair() -> CorefPair:
    """The animal/street pair from the coreference set."""
    return next(p for p in load_pairs() if (p.sentence_a, p.sentence_b) == (SENTENCE_A, SENTENCE_B))


def rows(pair: CorefPair, attention: PairAttention, head: tuple[int, int]) -> list[dict]:
    """Per sentence: what 'it' means, the French it needs, and the pronoun one head's attention points to."""
    out = []
    for (name, shares, answer), sentence in zip(
        attention.sentences, (pair.sentence_a, pair.sentence_b), strict=True
    ):
        to = shares[head]  # (2,) attention to each candidate
        pick = attention.head_pick(shares, head)
        means = attention.candidates[answer]
        out.append(
            {
                "sentence": f"{name}: {sentence}",
                "'it' means": means,
                "French needs": f"{FRENCH[means].pronoun} ({FRENCH[means].noun}, {FRENCH[means].gender})",
                "hand translation": TRANSLATIONS[sentence],
                **{f"head → {c}": float(to[i]) for i, c in enumerate(attention.candidates)},
                "the head points to": "a tie" if pick is None else FRENCH[attention.candidates[pick]].pronoun,
            }
        )
    return out


def head_gets_both(attention: PairAttention, head: tuple[int, int]) -> bool:
    """Whether one head's larger share goes to the right candidate in both sentences."""
    return all(attention.head_pick(s, head) == a for _, s, a in attention.sentences)


def heads_getting_both(attention: PairAttention) -> np.ndarray:
    """bool [layer, head]: heads that would choose the right French pronoun in both sentences."""
    a, b = attention.to_candidates_a, attention.to_candidates_b
    right_a = np.argmax(a, -1) == attention.answer_a
    right_b = np.argmax(b, -1) == attention.answer_b
    return right_a & right_b & (a[..., 0] != a[..., 1]) & (b[..., 0] != b[..., 1])


def chance_verdict(attention: PairAttention) -> str:
    """What the count of heads getting both sentences right says, against one in four by chance."""
    both = heads_getting_both(attention)
    count, total, expected = int(both.sum()), both.size, both.size / 4
    # a two-sided binomial test at 5%: counts a random choice per head would rarely give
    p = binomtest(count, total, 0.25).pvalue
    if p >= 0.05:
        return (
            f"That is about the {expected:.0f} expected by chance (p = {p:.2f}): no sign either way that the "
            "heads resolve *it* by where they look."
        )
    if count > expected:
        return (
            f"That is more than the {expected:.0f} expected by chance (p = {p:.2g}), as the book's story "
            "predicts; one sentence pair is still thin evidence (the scores over the whole set are above)."
        )
    same = int((np.argmax(attention.to_candidates_a, -1) == np.argmax(attention.to_candidates_b, -1)).sum())
    return (
        f"That is fewer than the {expected:.0f} expected by chance (p = {p:.2g}), which contradicts the "
        "book's clean story that attention links *it* to the noun that decides il or elle: "
        f"{same} of {total} heads look more at the same noun in both sentences, whatever *it* means, so "
        "whatever resolves *it* in this model does not show as a head's attention on this pair."
    )
