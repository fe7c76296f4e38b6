"""Digits read aloud: a toy translation with one right answer in English and a second in French.

"3 1 4" becomes "three one and four" (an "and" before the last word) or "trois un quatre". Both are
right, so a model trained on both sees two valid outputs of different lengths for every source:
the smallest case of the multi-modality that troubles non-autoregressive decoding (Gu et al. 2018).
The tiny networks that learn it are of the project's own (no transformers model), so their shapes
and training stay in a few lines.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from txviz.core.errors import UserError

DIGITS = tuple("123456789")
ENGLISH = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
FRENCH = ("un", "deux", "trois", "quatre", "cinq", "six", "sept", "huit", "neuf")
SPECIAL = ("<pad>", "<start>", "<end>", "=", "and")
# one vocabulary for sources and targets; "six" is spelt the same in both languages
WORDS = SPECIAL + DIGITS + tuple(dict.fromkeys(ENGLISH + FRENCH))
INDEX = {w: i for i, w in enumerate(WORDS)}
PAD, START, END, EQUALS = (INDEX[w] for w in SPECIAL[:4])
MIN_DIGITS, MAX_DIGITS = 2, 4
HELD_OUT_SEED = 12_345


class NumberInputError(UserError):
    """Digits the toy cannot read, with a message fit for the user."""


def read_digits(text: str) -> tuple[str, ...]:
    """ "3 1 4" or "314" -> ("3", "1", "4"); 2 to 4 digits from 1 to 9."""
    digits = tuple(text.replace(" ", ""))
    if not MIN_DIGITS <= len(digits) <= MAX_DIGITS or any(d not in DIGITS for d in digits):
        raise NumberInputError(f"Type {MIN_DIGITS} to {MAX_DIGITS} digits from 1 to 9 (no 0), such as 3 1 4.")
    return digits


def english(digits: tuple[str, ...]) -> tuple[str, ...]:
    """ "3 1 4" -> "three one and four"."""
    words = [ENGLISH[int(d) - 1] for d in digits]
    return (*words[:-1], "and", words[-1])


def french(digits: tuple[str, ...]) -> tuple[str, ...]:
    """ "3 1 4" -> "trois un quatre"."""
    return tuple(FRENCH[int(d) - 1] for d in digits)


def all_sources() -> list[tuple[str, ...]]:
    """Every digit string of 2 to 4 digits (7,371), in a fixed order."""
    out: list[tuple[str, ...]] = [()]
    found = []
    for _ in range(MAX_DIGITS):
        out = [s + (d,) for s in out for d in DIGITS]
        found += [s for s in out if len(s) >= MIN_DIGITS]
    return found


def split(held_out: int = 500, seed: int = HELD_OUT_SEED) -> tuple[list, list]:
    """Training and held-out digit strings: the held-out ones are never trained on."""
    sources = all_sources()
    order = torch.randperm(len(sources), generator=torch.Generator().manual_seed(seed)).tolist()
    return [sources[i] for i in order[held_out:]], [sources[i] for i in order[:held_out]]


def ids(words) -> list[int]:
    return [INDEX[w] for w in words]


def text(token_ids) -> str:
    """Readable words of some ids, stopping at the end token and leaving padding out."""
    words = []
    for i in token_ids:
        if int(i) == END:
            break
        if int(i) not in (PAD, START):
            words.append(WORDS[int(i)])
    return " ".join(words)


def padded(rows: list[list[int]], length: int | None = None) -> torch.Tensor:
    """Rows of ids padded on the right with <pad>."""
    length = length or max(len(r) for r in rows)
    return torch.tensor([r + [PAD] * (length - len(r)) for r in rows])


def causal_mask(n: int) -> torch.Tensor:
    """(n, n) additive mask: -inf above the diagonal, so position t reads positions <= t only."""
    return torch.triu(torch.full((n, n), float("-inf")), diagonal=1)


class Embed(nn.Module):
    """Token plus learnt position embeddings."""

    def __init__(self, d: int, positions: int):
        super().__init__()
        self.token = nn.Embedding(len(WORDS), d)
        self.position = nn.Embedding(positions, d)

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        steps = torch.arange(token_ids.shape[1])
        return self.token(token_ids) * math.sqrt(self.token.embedding_dim) + self.position(steps)


def stack(d: int, layers: int, heads: int, cross: bool = False) -> nn.Module:
    """Pre-norm transformer blocks without dropout (runs repeat exactly): self-attention, + cross, + FFN."""
    if cross:
        block = nn.TransformerDecoderLayer(d, heads, 4 * d, dropout=0.0, batch_first=True, norm_first=True)
        return nn.TransformerDecoder(block, layers, norm=nn.LayerNorm(d))
    block = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, batch_first=True, norm_first=True)
    return nn.TransformerEncoder(block, layers, norm=nn.LayerNorm(d), enable_nested_tensor=False)
