"""The embedding lookup as a matrix product: x_n = Omega_e e_(id_n), a one-hot column picking a row."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from txviz.positional.encodings import PositionalError, token_embeddings


@dataclass(frozen=True)
class LookupAsProduct:
    """A text's token ids, their one-hot rows, and the embedding table used both ways."""

    tokens: tuple[str, ...]
    ids: np.ndarray  # (n,) token ids
    one_hot: np.ndarray  # (n, V) row n is e_(id_n)^T
    product: np.ndarray  # (n, d) one_hot @ Omega_e^T (the book's Omega_e e, tokens as rows)
    lookup: np.ndarray  # (n, d) table[ids], what the model does
    vocabulary_size: int

    @property
    def max_abs_difference(self) -> float:
        return float(np.abs(self.product - self.lookup).max())

    def used_columns(self) -> np.ndarray:
        """The vocabulary columns that hold a one (sorted ids): the rest of the V columns are zero."""
        return np.unique(self.ids)


def one_hot(ids: np.ndarray, vocabulary_size: int) -> np.ndarray:
    """Row n has a single 1 in column ids[n]; (n, V) float32."""
    ids = np.asarray(ids, dtype=int)
    if ids.size and (ids.min() < 0 or ids.max() >= vocabulary_size):
        raise PositionalError(f"Token ids must lie in 0..{vocabulary_size - 1}.")
    matrix = np.zeros((len(ids), vocabulary_size), dtype=np.float32)
    matrix[np.arange(len(ids)), ids] = 1.0
    return matrix


def lookup_as_product(loaded: Any, text: str, max_tokens: int = 32) -> LookupAsProduct:
    """The model's word embeddings of a text, once as one-hot x table and once as a lookup."""
    if not text or not text.strip():
        raise PositionalError("The text is empty: type a short sentence.")
    tokens, lookup = token_embeddings(loaded, text, max_tokens)
    ids = np.asarray(loaded.tokenizer(text, truncation=True, max_length=max_tokens)["input_ids"])
    table = loaded.model.get_input_embeddings().weight.detach().float().cpu().numpy()  # (V, d)
    rows = one_hot(ids, table.shape[0])
    return LookupAsProduct(tuple(tokens), ids, rows, rows @ table, lookup, table.shape[0])
