"""The likeliest next tokens at one step: one record for generation, decoding and masking."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from txviz.core.tokens import readable_tokens


@dataclass(frozen=True, eq=False)
class Candidates:
    """The most likely next tokens by the model, most likely first, with their probabilities."""

    ids: tuple[int, ...]
    tokens: tuple[str, ...]  # readable, one per id (texts can repeat: tell them apart by id)
    probs: np.ndarray  # float32 [stage, candidate]; stage 0 is the model's own distribution
    stages: tuple[str, ...] = ("model",)  # then each reshaping applied, e.g. "top-k 40"
    chosen: int | None = None  # the token id chosen at this step, when one was

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def model_probs(self) -> np.ndarray:
        """Probability of each candidate under the model's own distribution."""
        return self.probs[0]

    @property
    def chosen_rank(self) -> int | None:
        """Index of the chosen token among the candidates (None when none was chosen or listed)."""
        return self.ids.index(self.chosen) if self.chosen in self.ids else None

    def pairs(self, stage: int = 0) -> tuple[tuple[str, float], ...]:
        """(token, probability) of each candidate at one stage."""
        return tuple(zip(self.tokens, self.probs[stage].tolist(), strict=True))


@dataclass(frozen=True)
class OneHot:
    """A distribution with all its mass on one token, read without building a vocabulary-sized vector."""

    index: int

    def tensor(self, like: torch.Tensor) -> torch.Tensor:
        """The vector itself, shaped and typed like ``like`` (V,)."""
        one_hot = torch.zeros_like(like)
        one_hot[self.index] = 1.0
        return one_hot


def top_candidates(
    tokenizer,
    stages: torch.Tensor | Sequence[tuple[str, torch.Tensor | OneHot]],
    k: int,
    chosen: int | None = None,
    add_chosen: bool = True,
) -> Candidates:
    """The k likeliest tokens of the first distribution (V,), and their probability at every stage.

    ``stages`` is one probability vector or (name, vector) pairs, the model's own first; a later
    stage may be a OneHot (greedy's). The chosen token is added last when it is not among the k and
    ``add_chosen`` is set.
    """
    if isinstance(stages, torch.Tensor):
        stages = (("model", stages),)
    first = stages[0][1].detach().float().cpu().reshape(-1)
    top = first.topk(min(k, first.numel())).indices.tolist()
    if add_chosen and chosen is not None and chosen not in top:
        top.append(chosen)
    index = np.array(top, dtype=np.int64)
    probs = np.empty((len(stages), len(top)), dtype=np.float32)  # (stage, k): a few reads per stage
    for row, (_, p) in enumerate(stages):
        if isinstance(p, OneHot):
            probs[row] = index == p.index
        else:
            probs[row] = p.detach().float().cpu().reshape(-1).numpy()[index]
    return Candidates(
        ids=tuple(int(i) for i in top),
        tokens=tuple(readable_tokens(tokenizer, top)[0]),
        probs=probs,
        stages=tuple(name for name, _ in stages),
        chosen=chosen,
    )
