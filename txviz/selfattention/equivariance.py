"""Permutation equivariance: shuffle the tokens and self-attention's outputs shuffle the same way.

Without positions, Sa[X P_pi] = Sa[X] P_pi for any permutation pi (rows here: Sa[X[pi]] = Sa[X][pi]).
Adding positions to the tokens breaks it: a token moved to another slot gets another position.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from txviz.core.errors import require_kind
from txviz.core.running import run
from txviz.positional.encodings import sinusoidal_encoding
from txviz.selfattention import toy as ta

POSITION_MODES = {
    "none": "no positions (every position id 0)",
    "carried": "each token keeps its position id",
    "slots": "positions 0, 1, 2, ... by slot (as normal)",
}


class EquivarianceError(ta.ToyAttentionError):
    """A permutation that does not fit the tokens."""


@dataclass(frozen=True)
class EquivarianceCheck:
    """Outputs of the original and the shuffled input, and how far Sa[X[pi]] is from Sa[X][pi]."""

    permutation: np.ndarray  # (N,) slot n of the shuffled input holds token permutation[n]
    original: np.ndarray  # (N, D) outputs for the tokens in order
    shuffled: np.ndarray  # (N, D) outputs for the shuffled tokens
    max_abs_difference: float  # max |shuffled - original[permutation]|

    @property
    def equivariant(self) -> bool:
        return self.max_abs_difference < 1e-4

    @property
    def pooled_difference(self) -> float:
        """max |mean_n Sa[X_pi] - mean_n Sa[X]|: a mean over tokens forgets the order equivariance keeps."""
        return float(np.abs(self.shuffled.mean(axis=0) - self.original.mean(axis=0)).max())


def seeded_permutation(n: int, seed: int) -> np.ndarray:
    """A permutation of 0..n-1 that moves tokens whenever it can (seed 0 reverses them)."""
    if n < 1:
        raise EquivarianceError("There are no tokens to shuffle.")
    if seed == 0:
        return np.arange(n)[::-1].copy()
    return np.random.default_rng(seed).permutation(n)


def _check_permutation(permutation: np.ndarray, n: int) -> np.ndarray:
    permutation = np.asarray(permutation, dtype=int)
    if sorted(permutation.tolist()) != list(range(n)):
        raise EquivarianceError(f"{permutation.tolist()} is not a permutation of the {n} tokens.")
    return permutation


def toy_check(config: ta.ToyConfig, permutation: np.ndarray, positions: bool, scaled: bool = True):
    """Multi-head self-attention of the toy on X and X[pi]; with positions, P stays by slot."""
    x = ta.toy_input(config)
    permutation = _check_permutation(permutation, config.n_tokens)
    p = sinusoidal_encoding(*x.shape) if positions else np.zeros_like(x)
    heads, omega_c = ta.toy_heads(config), ta.toy_omega_c(config)
    original = ta.multi_head_attention(x + p, heads, omega_c, scaled).output
    shuffled = ta.multi_head_attention(x[permutation] + p, heads, omega_c, scaled).output
    gap = float(np.abs(shuffled - original[permutation]).max())
    return EquivarianceCheck(permutation, original, shuffled, gap)


@torch.no_grad()
def model_check(loaded, text: str, permutation_seed: int, mode: str, max_tokens: int = 64):
    """MiniLM's last hidden states for the tokens in order and shuffled, with position ids per mode.

    "none": every position id is 0, so the encoder sees a set; "carried": a shuffled token keeps
    the position id it had; "slots": ids 0..n-1 by slot, as the model normally runs.
    Returns the check and the readable tokens in their original order.
    """
    from txviz.core.tokens import readable_tokens

    require_kind(loaded, ("encoder",), "check permutation equivariance of an encoder")
    if mode not in POSITION_MODES:
        raise EquivarianceError(f"Unknown position mode {mode!r}: choose one of {list(POSITION_MODES)}.")
    if not text or not text.strip():
        raise EquivarianceError("The text is empty: type a short sentence.")
    ids = loaded.tokenizer(text.strip(), truncation=True, max_length=max_tokens)["input_ids"]
    n = len(ids)
    permutation = seeded_permutation(n, permutation_seed)
    slots = torch.arange(n)
    positions = {"none": torch.zeros(n, dtype=torch.long), "carried": slots, "slots": slots}[mode]
    shuffled_positions = positions[torch.from_numpy(permutation)] if mode == "carried" else positions

    def hidden(token_ids: list[int], position_ids: torch.Tensor) -> np.ndarray:
        out = run(
            loaded.model,
            outputs=("hidden",),
            input_ids=torch.tensor([token_ids], device=loaded.device),
            position_ids=position_ids[None].to(loaded.device),
            token_type_ids=torch.zeros(1, n, dtype=torch.long, device=loaded.device),
        )
        return out.hidden[0].double().cpu().numpy()

    original = hidden(ids, positions)
    shuffled = hidden([ids[i] for i in permutation], shuffled_positions)
    gap = float(np.abs(shuffled - original[permutation]).max())
    tokens, _ = readable_tokens(loaded.tokenizer, ids)
    return EquivarianceCheck(permutation, original, shuffled, gap), tuple(tokens)
