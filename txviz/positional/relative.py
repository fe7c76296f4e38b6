"""Relative positions (Shaw et al., 2018), and what a learned absolute table does past its end.

Shaw et al. add a learned vector a_(j-i) to each key, clipped to offsets -k..k:
e_ij = q_i . (k_j + a_clip(j-i)) / sqrt(d), so the extra term q_i . a_clip(j-i) is a bias that
depends on the query and on the offset only, never on the absolute positions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from txviz.core.layouts import UnknownLayoutError, cached_layout
from txviz.core.running import run_module
from txviz.positional.encodings import PositionalError, learned_position_embeddings

MAX_CLIP = 64


def clipped_offsets(n: int, clip: int) -> np.ndarray:
    """clip(j - i, -k, k) for query i (rows) and key j (columns); (n, n) ints."""
    if n < 1:
        raise PositionalError(f"The number of positions must be at least 1 (got {n}).")
    if not 0 <= clip <= MAX_CLIP:
        raise PositionalError(f"The clipping distance k must be between 0 and {MAX_CLIP} (got {clip}).")
    positions = np.arange(n)
    return np.clip(positions[None, :] - positions[:, None], -clip, clip)


def seeded_table(clip: int, d: int, seed: int = 0) -> np.ndarray:
    """Relative key embeddings a_(-k) .. a_(k), one row per clipped offset; (2k + 1, d)."""
    return np.random.default_rng(seed).normal(scale=1 / np.sqrt(d), size=(2 * clip + 1, d))


def shaw_bias(queries: np.ndarray, table: np.ndarray, clip: int) -> np.ndarray:
    """B[i, j] = q_i . a_clip(j-i) / sqrt(d): Shaw's relative term, added to q_i . k_j / sqrt(d); (n, n)."""
    n, d = queries.shape
    if table.shape != (2 * clip + 1, d):
        raise PositionalError(f"The table must have 2k + 1 = {2 * clip + 1} rows of size {d}.")
    rows = table[clipped_offsets(n, clip) + clip]  # (n, n, d): a_clip(j-i) for every pair
    return np.einsum("id,ijd->ij", queries, rows) / np.sqrt(d)


@dataclass(frozen=True)
class ShawCheck:
    """Shaw's bias for one query vector placed at every position: a function of j - i alone."""

    offsets: np.ndarray  # (n, n) clipped j - i
    bias: np.ndarray  # (n, n)
    by_offset: np.ndarray  # (2n - 1,) bias at j - i = -(n-1) .. n-1
    max_diagonal_spread: float  # 0: only the offset matters


def seeded_shaw_check(n: int, d: int, clip: int, seed: int = 0) -> ShawCheck:
    """One seeded query at every position against a seeded table; the bias by offset."""
    rng = np.random.default_rng(seed + 1)
    query = rng.normal(size=d)
    bias = shaw_bias(np.broadcast_to(query, (n, d)), seeded_table(clip, d, seed), clip)
    diagonals = [np.diagonal(bias, off) for off in range(-n + 1, n)]
    spread = max(float(np.ptp(diag)) for diag in diagonals)
    return ShawCheck(clipped_offsets(n, clip), bias, np.array([diag[0] for diag in diagonals]), spread)


@dataclass(frozen=True)
class LearnedLimit:
    """What a learned absolute table allows: its rows, and what asking for more positions does."""

    n_learned: int  # rows of the table: positions 0 .. n_learned - 1
    n_requested: int
    error: str  # the model's own error for position ids past the table, "" when it ran

    @property
    def notice(self) -> str:
        if not self.error:
            return ""
        return (
            f"MiniLM learned exactly {self.n_learned} position vectors (ids 0 to {self.n_learned - 1}). "
            f"Position {self.n_learned} has no vector, so {self.n_requested} positions cannot run: the "
            f"model fails with “{self.error}”. txviz cuts longer texts to {self.n_learned} tokens and "
            "says so; a sinusoid, RoPE or Shaw's clipped offsets give every position a value, though "
            "nothing was trained that far."
        )


@torch.no_grad()
def learned_limit(model: Any, n_requested: int) -> LearnedLimit:
    """Run the model's embedding layer on position ids 0 .. n_requested - 1 and report what happens."""
    n_learned = learned_position_embeddings(model).shape[0]
    device = model.get_input_embeddings().weight.device
    try:
        embeddings = cached_layout(model).embeddings(model)
    except UnknownLayoutError as error:
        raise PositionalError(str(error)) from error
    ids = torch.zeros(1, n_requested, dtype=torch.long, device=device)
    positions = torch.arange(n_requested, device=device)[None]
    try:
        run_module(embeddings, input_ids=ids, position_ids=positions, token_type_ids=torch.zeros_like(ids))
    except (IndexError, RuntimeError) as error:
        return LearnedLimit(n_learned, n_requested, str(error).splitlines()[0])
    return LearnedLimit(n_learned, n_requested, "")


COMPARISON = (
    {
        "method": "sinusoidal (Vaswani et al.)",
        "where": "added to the input x",
        "parameters": "none",
        "positions": "any (a formula)",
        "scores see": "absolute positions, offsets through a rotation",
    },
    {
        "method": "learned absolute (BERT, MiniLM)",
        "where": "added to the input x",
        "parameters": "n_max x d table",
        "positions": "0 .. n_max - 1 only (512 for MiniLM)",
        "scores see": "whatever the table learned",
    },
    {
        "method": "rotary (RoPE, SmolLM2)",
        "where": "rotates q and k in every layer",
        "parameters": "none",
        "positions": "any (a formula)",
        "scores see": "the offset m - n only",
    },
    {
        "method": "relative (Shaw et al.)",
        "where": "a_(j-i) added to the keys in every layer",
        "parameters": "(2k + 1) x d table",
        "positions": "any (offsets past ±k share a vector)",
        "scores see": "the offset j - i, clipped to ±k",
    },
)
