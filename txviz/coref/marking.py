"""Finding the pronoun and the two candidates of a typed sentence by word, not by position."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from txviz.coref.pairs import Word, split_words

PRONOUNS = frozenset(["it", "he", "she", "they", "him", "her", "them", "its", "his", "their"])
# A word after one of these is taken for a noun: "the trophy", "a cat", "my sister".
DETERMINERS = frozenset(["the", "a", "an", "this", "that", "these", "those", "my", "your", "our"])


@dataclass(frozen=True)
class Marking:
    """Word indices of the pronoun and the candidates found in a sentence, and what was not found."""

    pronoun: int | None
    candidates: tuple[int, ...]
    problems: tuple[str, ...]

    @property
    def complete(self) -> bool:
        return self.pronoun is not None and len(self.candidates) == 2


def _once(words: Sequence[Word], text: str) -> int | None:
    """Index of the word equal to text (case-insensitive) when it occurs exactly once."""
    hits = [i for i, w in enumerate(words) if w.text.lower() == text.lower()]
    return hits[0] if len(hits) == 1 else None


def _pronoun(words: Sequence[Word], previous: str | None) -> tuple[int | None, str | None]:
    """The pronoun chosen before if the sentence still has it once, else the sentence's only pronoun."""
    if previous is not None and (kept := _once(words, previous)) is not None:
        return kept, None
    found = [i for i, w in enumerate(words) if w.text.lower() in PRONOUNS]
    if len(found) == 1:
        return found[0], None
    if not found:
        return None, "no pronoun (it, he, she, they, ...)"
    return None, "several pronouns (" + ", ".join(words[i].text for i in found) + ")"


def _nouns(words: Sequence[Word], taken: set[int]) -> list[int]:
    """Words that look like nouns: after a determiner, or capitalised (a name)."""
    out = []
    for i, word in enumerate(words):
        lower = word.text.lower()
        if i in taken or lower in PRONOUNS or lower in DETERMINERS:
            continue
        after_determiner = i > 0 and words[i - 1].text.lower() in DETERMINERS
        if after_determiner or word.text[0].isupper():
            out.append(i)
    return out


def find_marking(
    sentence: str,
    previous_pronoun: str | None,
    previous_candidates: Sequence[str],
    changed: Sequence[int] = (),
) -> Marking:
    """The pronoun and two candidates of a sentence, keeping the words chosen before where they still occur.

    `changed` are the word indices that differ between the pair's sentences: never a candidate.
    """
    words = split_words(sentence)
    pronoun, problem = _pronoun(words, previous_pronoun)
    taken = {*changed, *([pronoun] if pronoun is not None else [])}
    kept = list(
        dict.fromkeys(
            i for text in previous_candidates if (i := _once(words, text)) is not None and i not in taken
        )
    )
    pool = kept + _nouns(words, taken | set(kept))
    candidates = kept if len(kept) == 2 else pool if len(pool) == 2 else []
    problems = [problem] if problem else []
    if not candidates:
        found = ", ".join(words[i].text for i in sorted(pool)) or "none"
        problems.append(f"no two clear candidates (words that look like nouns: {found})")
    return Marking(pronoun, tuple(sorted(candidates)), tuple(problems))
