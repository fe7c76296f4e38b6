"""Sentences and paragraphs of a document as token spans, and attention aggregated to them."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

import numpy as np

MAX_SPANS = 256  # more sentences than this are merged in runs, so a span map stays readable
LABEL_CHARS = 60
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"')\]]*\s+|\n+")
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")


@dataclass(frozen=True, eq=False)
class Spans:
    """Which span each token belongs to, each span's text, and the paragraph of each sentence."""

    of_token: np.ndarray  # int (T,): sentence index of each token
    labels: tuple[str, ...]  # per sentence: "12 · The cat sat on…" (unique, plain text)
    paragraph_of: np.ndarray  # int (S,): paragraph index of each sentence
    paragraph_labels: tuple[str, ...]

    @property
    def n(self) -> int:
        return len(self.labels)

    def sizes(self) -> np.ndarray:
        """Tokens in each sentence."""
        return np.bincount(self.of_token, minlength=self.n)

    def tokens_of(self, sentence: int) -> tuple[int, int]:
        """(first token, one past the last) of a sentence."""
        where = np.flatnonzero(self.of_token == sentence)
        return int(where[0]), int(where[-1]) + 1


def _starts(pattern: re.Pattern, text: str) -> list[int]:
    return [0] + [m.end() for m in pattern.finditer(text) if 0 < m.end() < len(text)]


def _label(index: int, text: str) -> str:
    words = " ".join(text.split())
    if len(words) > LABEL_CHARS:
        words = words[: LABEL_CHARS - 1] + "…"
    return f"{index} · {words}"


def spans(text: str, offsets: list[tuple[int, int]]) -> Spans:
    """Sentence and paragraph spans of the tokens whose character offsets are given.

    Tokens without characters (<s>, [CLS]) join the span of the token before them (the first span
    for a leading one); past MAX_SPANS sentences, neighbours are merged in equal runs.
    """
    used = max((end for _, end in offsets), default=0)  # the document may have been cut
    sentence_chars = [s for s in _starts(_SENTENCE_END, text) if s < max(used, 1)]
    paragraph_chars = [s for s in _starts(_PARAGRAPH_BREAK, text) if s < max(used, 1)]
    of_char, previous = [], 0
    for start, end in offsets:
        start += len(text[start:end]) - len(text[start:end].lstrip())  # ' Second' starts at 'S'
        index = bisect.bisect_right(sentence_chars, start) - 1 if end > start else previous
        of_char.append(max(index, 0))
        previous = of_char[-1]
    present = sorted(set(of_char))  # sentences with no token of their own (cut, blank) are dropped
    runs = -(-len(present) // MAX_SPANS)
    renumber = {s: i // runs for i, s in enumerate(present)}
    of_token = np.array([renumber[s] for s in of_char], dtype=np.int64)
    n = max(renumber.values()) + 1
    first_char = [sentence_chars[present[i * runs]] for i in range(n)]
    last_char = [*first_char[1:], used]
    labels = tuple(_label(i, text[a:b]) for i, (a, b) in enumerate(zip(first_char, last_char, strict=True)))
    paragraph_raw = [bisect.bisect_right(paragraph_chars, c) - 1 for c in first_char]
    paragraphs = sorted(set(paragraph_raw))
    paragraph_of = np.array([paragraphs.index(p) for p in paragraph_raw], dtype=np.int64)
    paragraph_labels = tuple(
        _label(i, text[paragraph_chars[p] : paragraph_chars[p] + 4 * LABEL_CHARS])
        for i, p in enumerate(paragraphs)
    )
    return Spans(of_token, labels, paragraph_of, paragraph_labels)


def to_paragraphs(sentence_map: np.ndarray, spans: Spans) -> np.ndarray:
    """[..., S, S] (mean over a sentence's queries of the weight summed over its keys) -> [..., P, P].

    Keys add up; queries are averaged, each sentence weighted by its number of tokens.
    """
    n_par = len(spans.paragraph_labels)
    member = np.zeros((spans.n, n_par))
    member[np.arange(spans.n), spans.paragraph_of] = 1.0
    keys = sentence_map @ member  # [..., S, P]
    weighted = member * spans.sizes()[:, None]  # (S, P)
    return np.einsum("sp,...sq->...pq", weighted, keys) / weighted.sum(axis=0)[:, None]
