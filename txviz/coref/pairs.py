"""Coreference minimal pairs: words, pairs and the checks every pair passes."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from txviz.core import paths

PAIRS_PATH = paths.ASSETS / "coref_pairs.json"


# A word is letters or digits, with inner apostrophes kept ("didn't" is one word); punctuation
# is not a word, so "tired." and "tired" are the same word.
_WORD_RE = re.compile(r"\w+(?:['’]\w+)*")


CHANCE = 0.5  # two candidates: a coin flip picks the right one half the time


class CorefInputError(ValueError):
    """A pair or a marking the page cannot use; the message is written for the user."""


@dataclass(frozen=True)
class Word:
    """One word of a sentence and its character span."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class CorefPair:
    """Two sentences that differ in one word, with the pronoun and two candidates marked by word."""

    sentence_a: str
    sentence_b: str
    pronoun: int  # word index of the pronoun (same in A and B)
    candidates: tuple[int, int]  # word indices of the two candidates
    answer_a: int | None = None  # 0 or 1: which candidate the pronoun means in A; None if unknown
    answer_b: int | None = None
    kind: str = ""  # what decides the pair (size, animacy, ...); empty for a pair typed by a user

    @property
    def words_a(self) -> tuple[Word, ...]:
        return split_words(self.sentence_a)

    @property
    def words_b(self) -> tuple[Word, ...]:
        return split_words(self.sentence_b)

    @property
    def pronoun_text(self) -> str:
        return self.words_a[self.pronoun].text

    @property
    def candidate_texts(self) -> tuple[str, str]:
        words = self.words_a
        return (words[self.candidates[0]].text, words[self.candidates[1]].text)

    @property
    def changed_words(self) -> tuple[int, ...]:
        """Word indices where A and B differ."""
        return differing_words(self.sentence_a, self.sentence_b)

    @property
    def label(self) -> str:
        """Short name for a picker: the pair's changed words."""
        a, b = self.words_a, self.words_b
        swap = " / ".join(f"{a[i].text} / {b[i].text}" for i in self.changed_words)
        return f"{self.candidate_texts[0]} vs {self.candidate_texts[1]} ({swap})"


def split_words(text: str) -> tuple[Word, ...]:
    """Words of a sentence with their character spans."""
    return tuple(Word(m.group(), m.start(), m.end()) for m in _WORD_RE.finditer(text))


def differing_words(sentence_a: str, sentence_b: str) -> tuple[int, ...]:
    """Indices of the words that differ; the sentences must have the same number of words."""
    a, b = split_words(sentence_a), split_words(sentence_b)
    if len(a) != len(b):
        raise CorefInputError(
            f"Sentence A has {len(a)} words and sentence B has {len(b)}: a minimal pair keeps "
            "every word but one, so both sentences need the same number of words."
        )
    return tuple(i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x.text != y.text)


def find_word(words: Sequence[Word], text: str) -> int:
    """Index of the one word equal to text (case-insensitive)."""
    hits = [i for i, w in enumerate(words) if w.text.lower() == text.lower()]
    sentence = " ".join(w.text for w in words)
    if not hits:
        raise CorefInputError(f"'{text}' is not a word of the sentence “{sentence}”.")
    if len(hits) > 1:
        raise CorefInputError(
            f"'{text}' occurs {len(hits)} times in “{sentence}”: mark the one you mean by position."
        )
    return hits[0]


def make_pair(
    sentence_a: str,
    sentence_b: str,
    pronoun: str | int,
    candidates: tuple[str | int, str | int],
    answer_a: str | int | None = None,
    answer_b: str | int | None = None,
    kind: str = "",
) -> CorefPair:
    """Build and check a pair; words are given as text or as word index in sentence A."""
    words = split_words(sentence_a)
    if not sentence_a.strip() or not sentence_b.strip():
        raise CorefInputError("Write both sentences of the pair.")

    def index(word: str | int, role: str) -> int:
        if isinstance(word, int):
            if not 0 <= word < len(words):
                raise CorefInputError(f"The {role} must be one of the {len(words)} words.")
            return word
        return find_word(words, word)

    def answer(value: str | int | None, cands: tuple[int, int]) -> int | None:
        if value is None or isinstance(value, int):
            return value
        index_in_a = find_word(words, value)
        if index_in_a not in cands:
            raise CorefInputError(f"The answer '{value}' is not one of the two candidates.")
        return cands.index(index_in_a)

    cands = (
        index(candidates[0], "first candidate"),
        index(candidates[1], "second candidate"),
    )
    pair = CorefPair(
        sentence_a=sentence_a,
        sentence_b=sentence_b,
        pronoun=index(pronoun, "pronoun"),
        candidates=cands,
        answer_a=answer(answer_a, cands),
        answer_b=answer(answer_b, cands),
        kind=kind,
    )
    check_pair(pair)
    return pair


def check_pair(pair: CorefPair) -> None:
    """Raise CorefInputError with a clear message if the pair is not a usable minimal pair."""
    changed = differing_words(pair.sentence_a, pair.sentence_b)
    if not changed:
        raise CorefInputError("Sentences A and B are the same: change one word in B.")
    if len(changed) > 1:
        words = pair.words_a
        names = ", ".join(f"'{words[i].text}'" for i in changed)
        raise CorefInputError(f"A minimal pair differs in one word; these differ: {names}.")
    marked = (pair.pronoun, *pair.candidates)
    if len(set(marked)) != 3:
        raise CorefInputError("The pronoun and the two candidates must be three different words.")
    if changed[0] in marked:
        raise CorefInputError(
            "The changed word must not be the pronoun or a candidate: keep them in both sentences."
        )
    for answer in (pair.answer_a, pair.answer_b):
        if answer not in (None, 0, 1):
            raise CorefInputError("An answer must be the first (0) or the second (1) candidate.")


def load_pairs(path: Path = PAIRS_PATH) -> tuple[CorefPair, ...]:
    """The shipped set of minimal pairs."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return tuple(
        make_pair(
            p["a"],
            p["b"],
            p["pronoun"],
            tuple(p["candidates"]),
            p["answer_a"],
            p["answer_b"],
            p.get("kind", ""),
        )
        for p in data["pairs"]
    )


def load_kinds(path: Path = PAIRS_PATH) -> dict[str, str]:
    """Each kind of pair in the shipped set, with what decides pairs of that kind."""
    return dict(json.loads(Path(path).read_text(encoding="utf-8")).get("kinds", {}))


def pairs_of_kind(pairs: Sequence[CorefPair], kind: str | None) -> tuple[int, ...]:
    """Indices of the pairs of one kind; every pair when kind is None."""
    return tuple(i for i, p in enumerate(pairs) if kind is None or p.kind == kind)
