"""The texts heads are scored on: shipped examples, the user's text or an uploaded corpus, bounded,
and repeated random token sequences drawn from a seed (for duplicate-token and induction heads)."""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass

import numpy as np

from txviz.core.errors import UserError
from txviz.models import LoadedModel

MAX_CORPUS_CHARS = 200_000  # an uploaded corpus is cut here, with a notice
MAX_TEXTS = 32  # texts scored per run: each costs one forward pass
CHUNK_CHARS = 600  # long paragraphs are split near this length so each text stays ~128 tokens
MAX_TOKENS = 128  # tokens per text: bounds memory (layers x heads x 128 x 128 floats per text)

DEFAULT_TEXTS = (
    "The cat sat on the mat, and then the cat fell asleep on the mat.",
    "Alice gave Bob the book because Bob had asked for it twice. Bob thanked Alice.",
    "In 1969, Apollo 11 landed on the Moon; Neil Armstrong and Buzz Aldrin walked on its surface.",
    "Harry Potter went to the station. Later that day, Harry Potter met Ron at the station.",
    'She said: "Read the first page, then the second page, then stop." He read all three pages.',
    "Water boils at 100 degrees Celsius at sea level, but at lower temperatures on a high mountain.",
)


class CorpusError(UserError):
    """The corpus cannot be scored; the message says why."""


@dataclass(frozen=True)
class Corpus:
    """Texts to score, and what was cut to fit."""

    texts: tuple[str, ...]
    notice: str = ""


def _chunks(paragraph: str) -> list[str]:
    """A paragraph split at whitespace into pieces of about CHUNK_CHARS characters."""
    out, start = [], 0
    while start < len(paragraph):
        end = start + CHUNK_CHARS
        if end < len(paragraph):
            space = paragraph.rfind(" ", start + CHUNK_CHARS // 2, end)
            end = space if space > start else end
        out.append(paragraph[start:end].strip())
        start = end
    return [c for c in out if c]


def from_text(text: str, max_texts: int = MAX_TEXTS) -> Corpus:
    """A corpus from typed or uploaded text: paragraphs (blank-line separated), chunked and bounded."""
    notices = []
    if len(text) > MAX_CORPUS_CHARS:
        notices.append(
            f"The corpus has {len(text):,} characters; only the first {MAX_CORPUS_CHARS:,} are read."
        )
        text = text[:MAX_CORPUS_CHARS]
    pieces = [c for p in re.split(r"\n\s*\n", text) for c in _chunks(" ".join(p.split()))]
    if not pieces:
        raise CorpusError("The corpus is empty: type or upload some text first.")
    if len(pieces) > max_texts:
        notices.append(f"It makes {len(pieces):,} passages; the first {max_texts} are scored.")
        pieces = pieces[:max_texts]
    return Corpus(tuple(pieces), " ".join(notices))


def default_corpus() -> Corpus:
    return Corpus(DEFAULT_TEXTS)


# Each model's word list, dropped with the model (an lru_cache would keep evicted models alive).
_VOCABULARIES: weakref.WeakKeyDictionary[LoadedModel, tuple[str, ...]] = weakref.WeakKeyDictionary()


def word_vocabulary(loaded: LoadedModel) -> tuple[str, ...]:
    """Lower-case words that are one token each, with or without a leading space, in both contexts.

    Random sequences are drawn from these so that the text " w1 w2 ..." tokenises back to exactly
    the drawn tokens, and the sequence can be opened in any page as plain text."""
    found = _VOCABULARIES.get(loaded)
    if found is None:
        found = _VOCABULARIES[loaded] = _one_token_words(loaded)
    return found


def _one_token_words(loaded: LoadedModel) -> tuple[str, ...]:
    tok = loaded.tokenizer
    if tok is None:
        raise CorpusError(f"{loaded.name} has no tokenizer: it cannot read text.")
    words = sorted({w.strip() for w in tok.batch_decode([[i] for i in range(len(tok))])})
    words = [w for w in words if re.fullmatch(r"[a-z]{3,10}", w)]
    spaced = tok([" " + w for w in words], add_special_tokens=False)["input_ids"]
    return tuple(w for w, ids in zip(words, spaced, strict=True) if len(ids) == 1)


def sequence_prefix(loaded: LoadedModel) -> str:
    """A fixed first token for models whose tokenizer adds none (decoders), else "".

    Decoders trained on documents joined by a separator use position 0 as an attention sink; without
    a fixed first token the sink is a random word that changes with the seed, and every head's
    scores move with it (SmolLM2's seed-to-seed induction rank correlation drops from 0.99 to 0.87).
    TransformerLens prepends BOS the same way."""
    tok = loaded.tokenizer
    if tok("a")["input_ids"][0] in tok.all_special_ids:
        return ""
    for token in ("<|endoftext|>", tok.bos_token, tok.eos_token):
        if token and tok.convert_tokens_to_ids(token) in tok.all_special_ids:
            return token
    return ""


def repeated_sequences(loaded: LoadedModel, n: int, length: int, seed: int = 0) -> tuple[str, ...]:
    """``n`` texts, each ``length`` distinct random words (one token each) said twice, from ``seed``,
    after the model's fixed first token if its tokenizer adds none."""
    vocab = word_vocabulary(loaded)
    if len(vocab) < length:
        raise CorpusError(f"{loaded.name} has only {len(vocab)} one-token words; choose a shorter length.")
    rng = np.random.default_rng(seed)
    prefix, out = sequence_prefix(loaded), []
    for _ in range(n):
        words = [vocab[i] for i in rng.choice(len(vocab), size=length, replace=False)]
        out.append(prefix + "".join(" " + w for w in words * 2))
    return tuple(out)
