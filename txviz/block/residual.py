"""The residual stream: its size after every block, and how much attention and the FFN each added."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from txviz.block.recording import StackRun
from txviz.core.errors import UserError


@dataclass(frozen=True)
class ResidualNorms:
    """L2 norms per layer and token (float32)."""

    stream: np.ndarray  # (N + 1, T): ||x|| of the stream, row 0 the embeddings, row i after block i
    attn: np.ndarray  # (N, T): ||what self-attention added||
    ffn: np.ndarray  # (N, T): ||what the FFN added||
    cross: np.ndarray | None = None  # (N, T): ||what cross-attention added||

    def per_layer(self) -> dict[str, np.ndarray]:
        """Mean over tokens of each norm, one value per block."""
        out = {"attention": self.attn.mean(1), "feed-forward": self.ffn.mean(1)}
        if self.cross is not None:
            out["cross-attention"] = self.cross.mean(1)
        out["stream (after the block)"] = self.stream[1:].mean(1)
        return out


def residual_norms(stack: StackRun) -> ResidualNorms:
    """Norms of the stream and of each sub-block's contribution; needs a run with the attn and ffn stages."""
    if stack.attn is None or stack.ffn is None:
        raise UserError("The residual view needs a run that recorded the attention and FFN stages.")

    def norm(a: np.ndarray) -> np.ndarray:
        return np.linalg.norm(a, axis=-1).astype(np.float32)

    return ResidualNorms(
        norm(stack.hidden),
        norm(stack.attn),
        norm(stack.ffn),
        None if stack.cross is None else norm(stack.cross),
    )
