"""Words of a sentence and their vectors: MiniLM's input embeddings, averaged over word pieces."""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from txviz.core.errors import UserError

WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")  # letters and digits in any script, with an inner apostrophe
MAX_WORDS = 60


class SentenceError(UserError):
    """A premise or hypothesis the model cannot read."""


@dataclass(frozen=True)
class Words:
    """The words read from one sentence, and a notice when it was cut."""

    words: tuple[str, ...]
    notice: str = ""


def read_words(text: str, name: str = "sentence", limit: int = MAX_WORDS) -> Words:
    """Lower-cased words of the text, at most `limit`; a clear error when there are none."""
    words = WORD.findall(text.lower())
    if not words:
        raise SentenceError(f"The {name} has no words: write a sentence first.")
    if len(words) > limit:
        return Words(
            tuple(words[:limit]), f"The {name} has {len(words):,} words; the first {limit} are used."
        )
    return Words(tuple(words))


class WordVectors:
    """A word's vector: the mean of MiniLM's (untrained here, frozen) input embeddings of its pieces."""

    def __init__(self, tokenizer, embedding: torch.Tensor):
        self.tokenizer = tokenizer
        self.embedding = embedding.detach().float().cpu()  # the trained models run on the CPU
        self.dim = self.embedding.shape[1]
        self._cache: dict[str, torch.Tensor] = {}

    @classmethod
    def from_loaded(cls, loaded) -> WordVectors:
        """From a loaded BERT-style model (txviz.models.load('minilm'))."""
        return cls(loaded.tokenizer, loaded.model.get_input_embeddings().weight)

    def pieces(self, word: str) -> list[str]:
        return self.tokenizer.tokenize(word)

    def vector(self, word: str) -> torch.Tensor:
        if word not in self._cache:
            ids = self.tokenizer.convert_tokens_to_ids(self.pieces(word)) or [self.tokenizer.unk_token_id]
            self._cache[word] = self.embedding[ids].mean(0)
        return self._cache[word]

    def __call__(self, words) -> torch.Tensor:
        """(len(words), dim)."""
        return torch.stack([self.vector(w) for w in words])
