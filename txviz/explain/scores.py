"""Step scores along a generation: how sure the model was at every step, from what generation recorded.

No extra pass: the chosen token's probability and the runner-up come from each step's candidates (the
top few of the model's own distribution, the chosen one always among them), the entropy from the
step record (computed over the whole vocabulary while the distribution was at hand).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from txviz.core.candidates import Candidates

SCORES = {
    "probability": "p(chosen)",
    "entropy": "entropy (nats)",
    "margin": "margin to the runner-up",
    "surprisal": "surprisal (nats)",
}


@dataclass(frozen=True, eq=False)
class StepScores:
    """One value per step of each score: float64 [steps]."""

    probability: np.ndarray  # p(chosen) under the model's own distribution (before sampling filters)
    entropy: np.ndarray  # H(p) in nats over the whole vocabulary
    margin: np.ndarray  # p(chosen) - the highest probability of any other token (< 0: not the top one)
    surprisal: np.ndarray  # -ln p(chosen), nats: its mean over sampled steps estimates the entropy

    def __len__(self) -> int:
        return len(self.probability)

    def items(self):
        return ((name, getattr(self, name)) for name in SCORES)


def chosen_and_runner_up(candidates: Candidates) -> tuple[float, float]:
    """(p of the chosen token, the highest p of any other candidate) under the model's distribution."""
    probs = candidates.model_probs.astype(np.float64)
    rank = candidates.chosen_rank
    if rank is None:
        raise ValueError("The candidates do not list the chosen token.")
    others = np.delete(probs, rank)
    return float(probs[rank]), float(others.max()) if len(others) else 0.0


def step_scores(candidates: Sequence[Candidates], entropies: Sequence[float]) -> StepScores:
    """The four scores of every step, from its candidates and its entropy."""
    pairs = np.array([chosen_and_runner_up(c) for c in candidates], dtype=np.float64).reshape(-1, 2)
    p, runner_up = pairs[:, 0], pairs[:, 1]
    with np.errstate(divide="ignore"):
        surprisal = -np.log(p)
    return StepScores(p, np.asarray(entropies, dtype=np.float64), p - runner_up, surprisal)


def generation_scores(steps) -> StepScores:
    """Step scores of a list of txviz.generation.loop.GenerationStep."""
    return step_scores([s.candidates for s in steps], [s.entropy for s in steps])
